# Cortex-M4F (ARMv7E-M): single-precision FPU (fpv4-sp-d16, hard-float ABI) and the DSP extension
# (SMLAD and friends; the compiler defines __ARM_FEATURE_DSP=1). The startup code enables the FPU (CPACR).
CPU_CFLAGS := -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16
CPU_ARCH   := armv7e-m
CPU_HAS_FPU := 1
CPU_HAS_DSP := 1
