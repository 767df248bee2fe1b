# STM32H743 (Cortex-M7, up to 480 MHz; this board file runs it at the 64 MHz HSI reset clock), USART3 (the
# Nucleo-H743ZI's ST-LINK virtual COM port), DWT cycle counter; .board_large in the 512 KB AXI SRAM.
BOARD_CPU      := cortex-m7
BOARD_NUM_IRQS := 150
BOARD_LOCAL_SRCS := board.c
BOARD_DEFS     :=
BOARD_STUB     := 1
