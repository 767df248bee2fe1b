# QEMU mps2-an500: Cortex-M7 (QEMU's model has the double-precision FPv5 FPU) at 25 MHz (QEMU's SYSCLK, as the
# AN386), CMSDK UART0, SysTick timer. QEMU models the AN500 image with the AN386's UART and interrupt numbers
# (hw/arm/mps2.c), so the AN386's board.c serves both; the PSRAM sits at 0x60000000 here (board.ld).
BOARD_CPU      := cortex-m7
BOARD_NUM_IRQS := 32
BOARD_LOCAL_SRCS := ../qemu-mps2-an386/board.c
BOARD_DEFS     := -DBOARD_UART_RX_IRQ=0 -DMPS2_BOARD_NAME=\"qemu-mps2-an500\"
BOARD_QEMU_MACHINE := mps2-an500
