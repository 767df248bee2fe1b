# QEMU mps2-an386: Cortex-M4F at 25 MHz (QEMU's SYSCLK), CMSDK UART0, SysTick timer (DWT reads 0 in QEMU).
BOARD_CPU      := cortex-m4
BOARD_NUM_IRQS := 32
BOARD_LOCAL_SRCS := board.c
# UART0's receive interrupt is external interrupt 0 (QEMU hw/arm/mps2.c: uartirq[] = {0, 2, 4, 18, 20}, TX = RX + 1).
BOARD_DEFS     := -DBOARD_UART_RX_IRQ=0
BOARD_QEMU_MACHINE := mps2-an386
