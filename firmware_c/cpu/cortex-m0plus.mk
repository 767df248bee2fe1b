# Cortex-M0+ (ARMv6-M): no FPU, no DSP extension, no DWT cycle counter (the board timer uses SysTick).
CPU_CFLAGS := -mcpu=cortex-m0plus -mthumb -mfloat-abi=soft
CPU_ARCH   := armv6-m
CPU_HAS_FPU := 0
CPU_HAS_DSP := 0
