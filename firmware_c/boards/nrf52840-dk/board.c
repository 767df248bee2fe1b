/* nrf52840-dk - nRF52840-DK (nRF52840, Cortex-M4F at 64 MHz). Register facts: nRF52840 Product
 * Specification (CLOCK, UART chapters).
 *
 * Clock: the core always runs at 64 MHz; board_init starts the 32 MHz crystal (HFXO) so the UART's baud
 * rate is crystal-accurate. UART: the legacy UART0 peripheral (polled, byte registers), 115200 8N1, no flow
 * control. Timer: DWT CYCCNT ("cycles" at 64 MHz). Written from the product specification; not yet run on
 * a board. */
#include <stdint.h>

#include "board.h"
#include "cortexm.h"

/* TODO(pins): the DK's interface-MCU VCOM pins (TX = P0.06, RX = P0.08). PSEL value = port * 32 + pin. */
#define PIN_TX 6u
#define PIN_RX 8u

#define CLOCK_BASE 0x40000000u
#define CLOCK_TASKS_HFCLKSTART CM_REG(CLOCK_BASE + 0x000u)
#define CLOCK_EVENTS_HFCLKSTARTED CM_REG(CLOCK_BASE + 0x100u)

#define UART0_BASE 0x40002000u
#define UART_TASKS_STARTRX CM_REG(UART0_BASE + 0x000u)
#define UART_TASKS_STARTTX CM_REG(UART0_BASE + 0x008u)
#define UART_EVENTS_RXDRDY CM_REG(UART0_BASE + 0x108u)
#define UART_EVENTS_TXDRDY CM_REG(UART0_BASE + 0x11Cu)
#define UART_EVENTS_ERROR CM_REG(UART0_BASE + 0x124u)
#define UART_ERRORSRC CM_REG(UART0_BASE + 0x480u)
#define UART_ENABLE CM_REG(UART0_BASE + 0x500u) /* 4 = UART */
#define UART_PSEL_RTS CM_REG(UART0_BASE + 0x508u)
#define UART_PSEL_TXD CM_REG(UART0_BASE + 0x50Cu)
#define UART_PSEL_CTS CM_REG(UART0_BASE + 0x510u)
#define UART_PSEL_RXD CM_REG(UART0_BASE + 0x514u)
#define UART_RXD CM_REG(UART0_BASE + 0x518u)
#define UART_TXD CM_REG(UART0_BASE + 0x51Cu)
#define UART_BAUDRATE CM_REG(UART0_BASE + 0x524u)
#define UART_CONFIG CM_REG(UART0_BASE + 0x56Cu)
#define UART_BAUDRATE_115200 0x01D7E000u
#define UART_PSEL_DISCONNECTED 0xFFFFFFFFu

#define GPIO_P0_BASE 0x50000000u
#define GPIO_OUTSET CM_REG(GPIO_P0_BASE + 0x508u)
#define GPIO_PIN_CNF(n) CM_REG(GPIO_P0_BASE + 0x700u + 4u * (n)) /* bit0 DIR (1 = output), bit1 INPUT (0 = connect) */

#define NRF52840_CPU_HZ 64000000u

static int tx_started;

void board_init(void)
{
    CLOCK_EVENTS_HFCLKSTARTED = 0u;
    CLOCK_TASKS_HFCLKSTART = 1u;
    while (CLOCK_EVENTS_HFCLKSTARTED == 0u) {
    }

    GPIO_OUTSET = 1u << PIN_TX; /* idle high before the UART takes the pin */
    GPIO_PIN_CNF(PIN_TX) = 1u;  /* output, input buffer connected */
    GPIO_PIN_CNF(PIN_RX) = 0u;  /* input */
    UART_PSEL_RTS = UART_PSEL_DISCONNECTED;
    UART_PSEL_CTS = UART_PSEL_DISCONNECTED;
    UART_PSEL_TXD = PIN_TX;
    UART_PSEL_RXD = PIN_RX;
    UART_BAUDRATE = UART_BAUDRATE_115200;
    UART_CONFIG = 0u; /* no parity, no flow control, one stop bit */
    UART_ENABLE = 4u;
    UART_EVENTS_RXDRDY = 0u;
    UART_EVENTS_TXDRDY = 0u;
    UART_TASKS_STARTRX = 1u;
    UART_TASKS_STARTTX = 1u;
    tx_started = 0;
    cm_timer_init(NRF52840_CPU_HZ, 0);
}

const char *board_name(void) { return "nrf52840-dk"; }
uint32_t board_cpu_hz(void) { return NRF52840_CPU_HZ; }

void board_uart_putc(uint8_t c)
{
    /* TXDRDY follows each byte sent; wait for the previous one before writing the next. */
    if (tx_started) {
        while (UART_EVENTS_TXDRDY == 0u) {
        }
    }
    UART_EVENTS_TXDRDY = 0u;
    UART_TXD = c;
    tx_started = 1;
}

int board_uart_rx_ready(void) { return UART_EVENTS_RXDRDY != 0u; }

int board_uart_poll(void)
{
    if (UART_EVENTS_ERROR != 0u) {
        UART_ERRORSRC = UART_ERRORSRC; /* write one to clear the sources read */
        UART_EVENTS_ERROR = 0u;
    }
    if (UART_EVENTS_RXDRDY == 0u) {
        return -1;
    }
    UART_EVENTS_RXDRDY = 0u; /* clear before reading RXD, so the next byte's event is not lost */
    return (int)(UART_RXD & 0xFFu);
}

void board_uart_flush(void)
{
    if (tx_started) {
        while (UART_EVENTS_TXDRDY == 0u) {
        }
    }
}
