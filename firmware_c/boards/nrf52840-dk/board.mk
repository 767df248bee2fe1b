# nRF52840-DK (PCA10056): nRF52840 (Cortex-M4F, 64 MHz), UART0 on the J-Link virtual COM port, DWT cycle
# counter. Flash with nrfjprog / pyocd / openocd (edge flash builds the command).
BOARD_CPU      := cortex-m4
BOARD_NUM_IRQS := 48
BOARD_LOCAL_SRCS := board.c
BOARD_DEFS     :=
BOARD_STUB     := 1
