/* rp2040-pico - Raspberry Pi Pico (RP2040, Cortex-M0+; this runs on core 0 only). Register facts: RP2040
 * datasheet (XOSC, PLL, CLOCKS, RESETS, IO_BANK0 chapters; UART = Arm PL011).
 *
 * Clock: 12 MHz crystal (XOSC) -> PLL_SYS (REFDIV 1, FBDIV 125: VCO 1500 MHz, POSTDIV 6 x 2) -> clk_sys
 * 125 MHz; clk_ref = XOSC; clk_peri = clk_sys (it is off after reset, and the UART needs it).
 * UART: UART0, 115200 8N1, FIFOs on. Timer: SysTick on the core clock ("systick ticks", 125 MHz).
 * Boot: the image needs a second-stage boot loader in .boot2 (see README.md: not provided yet).
 * Written from the datasheet; not yet run on a board. */
#include <stdint.h>

#include "board.h"
#include "cortexm.h"

/* TODO(pins): the Pico's default UART0 pins (TX = GP0, RX = GP1; function 2 = UART). */
#define PIN_TX 0u
#define PIN_RX 1u
#define GPIO_FUNC_UART 2u
#define UART_BAUD 115200u

#define REG_SET(addr) CM_REG((addr) + 0x2000u) /* atomic set alias */
#define REG_CLR(addr) CM_REG((addr) + 0x3000u) /* atomic clear alias */

#define RESETS_BASE 0x4000C000u
#define RESETS_RESET (RESETS_BASE + 0x0u)
#define RESETS_RESET_DONE CM_REG(RESETS_BASE + 0x8u)
#define RESET_IO_BANK0 (1u << 5)
#define RESET_PADS_BANK0 (1u << 8)
#define RESET_PLL_SYS (1u << 12)
#define RESET_UART0 (1u << 22)

#define XOSC_BASE 0x40024000u
#define XOSC_CTRL CM_REG(XOSC_BASE + 0x00u)
#define XOSC_STATUS CM_REG(XOSC_BASE + 0x04u) /* bit31 STABLE */
#define XOSC_STARTUP CM_REG(XOSC_BASE + 0x0Cu)
#define XOSC_CTRL_1_15MHZ 0xAA0u
#define XOSC_CTRL_ENABLE (0xFABu << 12)

#define PLL_SYS_BASE 0x40028000u
#define PLL_CS CM_REG(PLL_SYS_BASE + 0x0u) /* REFDIV 5:0, bit31 LOCK */
#define PLL_PWR (PLL_SYS_BASE + 0x4u)      /* bit0 PD, bit3 POSTDIVPD, bit5 VCOPD */
#define PLL_FBDIV_INT CM_REG(PLL_SYS_BASE + 0x8u)
#define PLL_PRIM CM_REG(PLL_SYS_BASE + 0xCu) /* POSTDIV1 18:16, POSTDIV2 14:12 */

#define CLOCKS_BASE 0x40008000u
#define CLK_REF_CTRL CM_REG(CLOCKS_BASE + 0x30u)     /* SRC 1:0: 0 ROSC, 2 XOSC */
#define CLK_REF_SELECTED CM_REG(CLOCKS_BASE + 0x38u) /* one-hot of SRC */
#define CLK_SYS_CTRL CM_REG(CLOCKS_BASE + 0x3Cu)     /* SRC bit0: 0 clk_ref, 1 aux; AUXSRC 7:5: 0 pll_sys */
#define CLK_SYS_SELECTED CM_REG(CLOCKS_BASE + 0x44u)
#define CLK_PERI_CTRL CM_REG(CLOCKS_BASE + 0x48u)    /* bit11 ENABLE, AUXSRC 7:5: 0 clk_sys */

#define IO_BANK0_BASE 0x40014000u
#define GPIO_CTRL(n) CM_REG(IO_BANK0_BASE + 0x04u + 8u * (n)) /* FUNCSEL 4:0 */

#define UART0_BASE 0x40034000u
#define UART_DR CM_REG(UART0_BASE + 0x000u)
#define UART_FR CM_REG(UART0_BASE + 0x018u) /* bit3 BUSY, bit4 RXFE, bit5 TXFF, bit7 TXFE */
#define UART_IBRD CM_REG(UART0_BASE + 0x024u)
#define UART_FBRD CM_REG(UART0_BASE + 0x028u)
#define UART_LCR_H CM_REG(UART0_BASE + 0x02Cu) /* WLEN 6:5 (3 = 8 bits), bit4 FEN */
#define UART_CR CM_REG(UART0_BASE + 0x030u)    /* bit0 UARTEN, bit8 TXE, bit9 RXE */
#define UART_FR_BUSY (1u << 3)
#define UART_FR_RXFE (1u << 4)
#define UART_FR_TXFF (1u << 5)

#define XOSC_HZ 12000000u
#define SYS_HZ 125000000u

static void unreset(uint32_t bits)
{
    REG_CLR(RESETS_RESET) = bits;
    while ((RESETS_RESET_DONE & bits) != bits) {
    }
}

static void clock_init(void)
{
    XOSC_CTRL = XOSC_CTRL_1_15MHZ;
    XOSC_STARTUP = ((XOSC_HZ / 1000u) + 128u) / 256u; /* about 1 ms, in units of 256 XOSC cycles */
    XOSC_CTRL = XOSC_CTRL_1_15MHZ | XOSC_CTRL_ENABLE;
    while (!(XOSC_STATUS & (1u << 31))) {
    }

    /* Run from clk_ref while the PLL restarts. */
    CLK_SYS_CTRL &= ~1u;
    while (CLK_SYS_SELECTED != 1u) {
    }
    CLK_REF_CTRL = 2u; /* clk_ref = XOSC */
    while (CLK_REF_SELECTED != (1u << 2)) {
    }

    REG_SET(RESETS_RESET) = RESET_PLL_SYS;
    unreset(RESET_PLL_SYS);
    PLL_CS = 1u;
    PLL_FBDIV_INT = 125u;
    REG_CLR(PLL_PWR) = (1u << 0) | (1u << 5);
    while (!(PLL_CS & (1u << 31))) {
    }
    PLL_PRIM = (6u << 16) | (2u << 12);
    REG_CLR(PLL_PWR) = 1u << 3;

    CLK_SYS_CTRL = (CLK_SYS_CTRL & ~(7u << 5)) | (0u << 5); /* aux = pll_sys (glitch-free mux on clk_ref) */
    CLK_SYS_CTRL |= 1u;
    while (CLK_SYS_SELECTED != (1u << 1)) {
    }
    CLK_PERI_CTRL = (1u << 11) | (0u << 5); /* clk_peri = clk_sys, on */
}

void board_init(void)
{
    uint32_t div;

    clock_init();
    unreset(RESET_IO_BANK0 | RESET_PADS_BANK0 | RESET_UART0);
    GPIO_CTRL(PIN_TX) = GPIO_FUNC_UART;
    GPIO_CTRL(PIN_RX) = GPIO_FUNC_UART;

    div = (8u * SYS_HZ) / UART_BAUD; /* baud divisor in 1/128ths */
    UART_IBRD = div >> 7;
    UART_FBRD = ((div & 0x7Fu) + 1u) / 2u;
    UART_LCR_H = (3u << 5) | (1u << 4); /* 8N1, FIFOs; this write latches the divisors */
    UART_CR = (1u << 0) | (1u << 8) | (1u << 9);
    cm_timer_init(SYS_HZ, 0);
}

const char *board_name(void) { return "rp2040-pico"; }
uint32_t board_cpu_hz(void) { return SYS_HZ; }

void board_uart_putc(uint8_t c)
{
    while (UART_FR & UART_FR_TXFF) {
    }
    UART_DR = c;
}

int board_uart_rx_ready(void) { return !(UART_FR & UART_FR_RXFE); }

int board_uart_poll(void)
{
    if (UART_FR & UART_FR_RXFE) {
        return -1;
    }
    return (int)(UART_DR & 0xFFu);
}

void board_uart_flush(void)
{
    while (UART_FR & UART_FR_BUSY) {
    }
}
