# QEMU mps2-an386: Cortex-M4F at 25 MHz (QEMU's SYSCLK), CMSDK UART0, SysTick timer (DWT reads 0 in QEMU).
BOARD_CPU      := cortex-m4
BOARD_NUM_IRQS := 32
BOARD_LOCAL_SRCS := board.c
BOARD_DEFS     :=
BOARD_QEMU_MACHINE := mps2-an386
