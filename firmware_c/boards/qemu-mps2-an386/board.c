/* qemu-mps2-an386 - ARM MPS2 with the AN386 FPGA image (Cortex-M4), as QEMU's mps2-an386 machine models it.
 *
 * UART0: ARM CMSDK APB UART at 0x40004000 (Cortex-M System Design Kit TRM): DATA +0x00, STATE +0x04
 * (bit0 TX buffer full, bit1 RX buffer full), CTRL +0x08 (bit0 TX enable, bit1 RX enable, bit3 RX interrupt
 * enable), INTSTATUS/INTCLEAR +0x0C (bit1 RX interrupt; write 1 to clear), BAUDDIV +0x10 (PCLK / baud, at
 * least 16). QEMU's serial port 0 is this UART; its PCLK is the 25 MHz system clock. Its RX interrupt is
 * external interrupt 0 (BOARD_UART_RX_IRQ, board.mk).
 * Idle: waiting for the host, the core sleeps in WFI until a byte arrives (board_uart_idle). A busy poll under
 * -icount keeps QEMU executing guest instructions flat out: a board left running by `edge flash` / `edge
 * profile` held a host core at ~84% for as long as it lived. With WFI the vCPU halts, and QEMU's -icount
 * sleep=on (its default) lets virtual time follow real time until the next timer event (the SysTick wrap,
 * every 2^24 ticks) or the UART's interrupt: the host CPU stays near 0%. Timed code never sleeps: the RX
 * interrupt is enabled only inside board_uart_idle, so no interrupt of the UART can land in a timed run.
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
#define UART_INTCLEAR CM_REG(UART0_BASE + 0x0Cu)
#define UART_BAUDDIV CM_REG(UART0_BASE + 0x10u)
#define UART_STATE_TXFULL (1u << 0)
#define UART_STATE_RXFULL (1u << 1)
#define UART_CTRL_TXEN (1u << 0)
#define UART_CTRL_RXEN (1u << 1)
#define UART_CTRL_RXINTEN (1u << 3)
#define UART_INT_RX (1u << 1)

void board_init(void)
{
    UART_CTRL = 0u;
    UART_BAUDDIV = AN386_CPU_HZ / AN386_BAUD;
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN;
    UART_INTCLEAR = UART_INT_RX;
    NVIC_ICPR(BOARD_UART_RX_IRQ) = NVIC_BIT(BOARD_UART_RX_IRQ);
    NVIC_ISER(BOARD_UART_RX_IRQ) = NVIC_BIT(BOARD_UART_RX_IRQ);
    cm_timer_init(AN386_CPU_HZ, 1);
}

/* qemu-mps2-an500 (Cortex-M7) compiles this same file with its own name (its board.mk): QEMU models both images
 * with the same UART, interrupt numbers and 25 MHz SYSCLK; only the PSRAM address differs (each board.ld). */
#ifndef MPS2_BOARD_NAME
#define MPS2_BOARD_NAME "qemu-mps2-an386"
#endif
const char *board_name(void) { return MPS2_BOARD_NAME; }

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

/* Sleep until a byte arrives (or the SysTick wrap, or any other interrupt). Interrupts are masked around the
 * check so a byte landing between the check and WFI still wakes it: WFI returns on a pending interrupt even
 * with PRIMASK set, and the interrupt is taken once PRIMASK is cleared again (board_uart_rx_irq). */
void board_uart_idle(void)
{
    uint32_t was_masked = cm_primask();

    cm_irq_disable();
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN | UART_CTRL_RXINTEN;
    if (!(UART_STATE & UART_STATE_RXFULL)) {
        cm_wfi();
    }
    UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN;
    if (!was_masked) {
        cm_irq_enable();
    }
}

/* UART0 RX: it only had to wake the core; clear the UART's interrupt (the line is level: left set, it would
 * pend again at once). The byte itself stays in DATA for board_uart_poll. */
void board_uart_rx_irq(void)
{
    UART_INTCLEAR = UART_INT_RX;
}

void board_uart_flush(void)
{
    /* The CMSDK UART has a one-byte buffer and no "shift register empty" flag: wait for the buffer. */
    while (UART_STATE & UART_STATE_TXFULL) {
    }
}
