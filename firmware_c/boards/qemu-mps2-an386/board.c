/* qemu-mps2-an386 - ARM MPS2 with the AN386 FPGA image (Cortex-M4), as QEMU's mps2-an386 machine models it.
 *
 * UART0: ARM CMSDK APB UART at 0x40004000 (Cortex-M System Design Kit TRM): DATA +0x00, STATE +0x04
 * (bit0 TX buffer full, bit1 RX buffer full), CTRL +0x08 (bit0 TX enable, bit1 RX enable), BAUDDIV +0x10
 * (PCLK / baud, at least 16). QEMU's serial port 0 is this UART; its PCLK is the 25 MHz system clock.
 * Timer: QEMU has no DWT cycle counter, so SysTick on the 25 MHz core clock ("systick ticks (emulated)";
 * with -icount shift=0 one instruction is 1 ns of virtual time, so one tick is 40 instructions). */
#include <stdint.h>

#include "board.h"
#include "cortexm.h"

#define AN386_CPU_HZ 25000000u
#define AN386_BAUD 115200u

#define UART0_BASE 0x40004000u
#define UART_DATA CM_REG(UART0_BASE + 0x00u)
#define UART_STATE CM_REG(UART0_BASE + 0x04u)
#define UART_CTRL CM_REG(UART0_BASE + 0x08u)
#define UART_BAUDDIV CM_REG(UART0_BASE + 0x10u)
#define UART_STATE_TXFULL (1u << 0)
#define UART_STATE_RXFULL (1u << 1)
#define UART_CTRL_TXEN (1u << 0)
#define UART_CTRL_RXEN (1u << 1)

void board_init(void)
{
    UART_CTRL = 0u;
    UART_BAUDDIV = AN386_CPU_HZ / AN386_BAUD;
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN;
    cm_timer_init(AN386_CPU_HZ, 1);
}

const char *board_name(void) { return "qemu-mps2-an386"; }

uint32_t board_cpu_hz(void) { return AN386_CPU_HZ; }

void board_uart_putc(uint8_t c)
{
    while (UART_STATE & UART_STATE_TXFULL) {
    }
    UART_DATA = c;
}

int board_uart_rx_ready(void) { return (UART_STATE & UART_STATE_RXFULL) != 0u; }

int board_uart_poll(void)
{
    if (!(UART_STATE & UART_STATE_RXFULL)) {
        return -1;
    }
    return (int)(UART_DATA & 0xFFu);
}

void board_uart_flush(void)
{
    /* The CMSDK UART has a one-byte buffer and no "shift register empty" flag: wait for the buffer. */
    while (UART_STATE & UART_STATE_TXFULL) {
    }
}
