# Raspberry Pi Pico: RP2040 (dual Cortex-M0+, core 0 only, 125 MHz from the 12 MHz crystal), UART0 on
# GP0/GP1, SysTick timer (ARMv6-M has no DWT cycle counter). Flash: picotool / UF2 (edge flash builds it).
BOARD_CPU      := cortex-m0plus
BOARD_NUM_IRQS := 32
BOARD_LOCAL_SRCS := board.c
BOARD_DEFS     := -DBOARD_HAS_VTOR=1
BOARD_STUB     := 1
