# STM32F746G-DISCO: STM32F746NG (Cortex-M7, 216 MHz from the 25 MHz HSE), USART1 on the ST-LINK virtual
# COM port, DWT cycle counter. Flash with st-flash / openocd / pyocd (edge flash builds the command).
BOARD_CPU      := cortex-m7
BOARD_NUM_IRQS := 98
BOARD_LOCAL_SRCS := board.c
BOARD_DEFS     :=
BOARD_STUB     := 1
