/* stm32f746-disco - STM32F746G-DISCO (STM32F746NG, Cortex-M7). Register facts: RM0385.
 *
 * Clock: HSE 25 MHz crystal -> PLL (M 25, N 432, P 2, Q 9) -> SYSCLK 216 MHz with over-drive, 7 flash wait
 * states + ART accelerator; AHB 216 MHz, APB1 54 MHz, APB2 108 MHz (USART1 kernel clock = PCLK2 at reset
 * selection). Build with BOARD_DEFS=-DBOARD_CLOCK_RESET=1 to stay on the 16 MHz HSI (bring-up).
 * UART: USART1, 115200 8N1 (the ST-LINK virtual COM port). Timer: DWT CYCCNT ("cycles" at the core clock).
 * Written from the reference manual; not yet run on a board. */
#include <stdint.h>

#include "board.h"
#include "cortexm.h"
#include "stm32_usart.h"

/* TODO(pins): the STM32F746G-DISCO's VCP pins (USART1 TX = PA9, RX = PB7, AF7). Change for another board. */
#define PIN_TX_PORT GPIOA_BASE
#define PIN_TX_PIN 9u
#define PIN_RX_PORT GPIOB_BASE
#define PIN_RX_PIN 7u
#define PIN_UART_AF 7u
#define UART_BASE USART1_BASE
#define UART_BAUD 115200u

#define RCC_BASE 0x40023800u
#define RCC_CR CM_REG(RCC_BASE + 0x00u)      /* bit16 HSEON, bit17 HSERDY, bit24 PLLON, bit25 PLLRDY */
#define RCC_PLLCFGR CM_REG(RCC_BASE + 0x04u) /* M 5:0, N 14:6, P 17:16 ((P/2)-1), SRC bit22, Q 27:24 */
#define RCC_CFGR CM_REG(RCC_BASE + 0x08u)    /* SW 1:0, SWS 3:2, HPRE 7:4, PPRE1 12:10, PPRE2 15:13 */
#define RCC_AHB1ENR CM_REG(RCC_BASE + 0x30u) /* bit0 GPIOA, bit1 GPIOB */
#define RCC_APB1ENR CM_REG(RCC_BASE + 0x40u) /* bit28 PWR */
#define RCC_APB2ENR CM_REG(RCC_BASE + 0x44u) /* bit4 USART1 */
#define PWR_BASE 0x40007000u
#define PWR_CR1 CM_REG(PWR_BASE + 0x00u)     /* bit16 ODEN, bit17 ODSWEN, VOS 15:14 */
#define PWR_CSR1 CM_REG(PWR_BASE + 0x04u)    /* bit16 ODRDY, bit17 ODSWRDY */
#define FLASH_ACR CM_REG(0x40023C00u)        /* LATENCY 3:0, bit8 PRFTEN, bit9 ARTEN */
#define GPIOA_BASE 0x40020000u
#define GPIOB_BASE 0x40020400u
#define USART1_BASE 0x40011000u

#define HSI_HZ 16000000u
#define HSE_HZ 25000000u

static uint32_t sysclk_hz = HSI_HZ;
static uint32_t usart_clk_hz = HSI_HZ;

static void clock_init(void)
{
#if !defined(BOARD_CLOCK_RESET)
    RCC_APB1ENR |= 1u << 28; /* PWR */
    (void)RCC_APB1ENR;
    PWR_CR1 |= 3u << 14;     /* voltage scale 1 */

    RCC_CR |= 1u << 16; /* HSE on */
    while (!(RCC_CR & (1u << 17))) {
    }
    RCC_PLLCFGR = 25u | (432u << 6) | (0u << 16) | (1u << 22) | (9u << 24); /* 25/25*432/2 = 216 MHz */
    RCC_CR |= 1u << 24;
    while (!(RCC_CR & (1u << 25))) {
    }
    PWR_CR1 |= 1u << 16; /* over-drive, needed above 180 MHz */
    while (!(PWR_CSR1 & (1u << 16))) {
    }
    PWR_CR1 |= 1u << 17;
    while (!(PWR_CSR1 & (1u << 17))) {
    }
    FLASH_ACR = 7u | (1u << 8) | (1u << 9); /* 7 wait states (2.7-3.6 V), prefetch, ART */
    while ((FLASH_ACR & 0xFu) != 7u) {
    }
    RCC_CFGR = (RCC_CFGR & ~0xFCF3u) | (0u << 4) | (5u << 10) | (4u << 13); /* AHB /1, APB1 /4, APB2 /2 */
    RCC_CFGR = (RCC_CFGR & ~3u) | 2u;                                        /* SYSCLK = PLL */
    while (((RCC_CFGR >> 2) & 3u) != 2u) {
    }
    sysclk_hz = 216000000u;
    usart_clk_hz = 108000000u;
#endif
}

void board_init(void)
{
    clock_init();
    RCC_AHB1ENR |= (1u << 0) | (1u << 1);
    RCC_APB2ENR |= 1u << 4;
    (void)RCC_APB2ENR; /* read back: the clock is on before the first register access */
    stm32_gpio_af(PIN_TX_PORT, PIN_TX_PIN, PIN_UART_AF, 0);
    stm32_gpio_af(PIN_RX_PORT, PIN_RX_PIN, PIN_UART_AF, 1);
    stm32_usart_init(UART_BASE, usart_clk_hz, UART_BAUD);
    cm_timer_init(sysclk_hz, 0);
}

const char *board_name(void) { return "stm32f746-disco"; }
uint32_t board_cpu_hz(void) { return sysclk_hz; }
void board_uart_putc(uint8_t c) { stm32_usart_putc(UART_BASE, c); }
int board_uart_rx_ready(void) { return (STM32_USART_ISR(UART_BASE) & STM32_USART_ISR_RXNE) != 0u; }
int board_uart_poll(void) { return stm32_usart_poll(UART_BASE); }
void board_uart_flush(void) { stm32_usart_flush(UART_BASE); }
