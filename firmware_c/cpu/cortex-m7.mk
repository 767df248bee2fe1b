# Cortex-M7 (ARMv7E-M): double-precision FPU (fpv5-d16, hard-float ABI), DSP extension (__ARM_FEATURE_DSP).
# The startup code enables the FPU; caches stay off unless the board turns them on.
CPU_CFLAGS := -mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16
CPU_ARCH   := armv7e-m
CPU_HAS_FPU := 1
CPU_HAS_DSP := 1
