/* stm32h743 - STM32H743 (Cortex-M7). Register facts: RM0433.
 *
 * Clock: the reset state, HSI 64 MHz for the core and every bus (D1CPRE, HPRE, D2PPRE1 all /1), so
 * USART3's kernel clock (rcc_pclk1, the reset selection) is 64 MHz too. The PLL1 setup for 400/480 MHz
 * (supply configuration, VOS, flash latency) is not written yet. UART: USART3, 115200 8N1.
 * Timer: DWT CYCCNT ("cycles"). Written from the reference manual; not yet run on a board. */
#include <stdint.h>

#include "board.h"
#include "cortexm.h"
#include "stm32_usart.h"

/* TODO(pins): the Nucleo-H743ZI's VCP (USART3 TX = PD8, RX = PD9, AF7). Set your board's USART and pins; a
 * USART other than 1/6 (APB2) or 2/3/4/5/7/8 (APB1) needs its RCC enable bit below. */
#define PIN_TX_PORT GPIOD_BASE
#define PIN_TX_PIN 8u
#define PIN_RX_PORT GPIOD_BASE
#define PIN_RX_PIN 9u
#define PIN_UART_AF 7u
#define PIN_GPIO_EN (1u << 3) /* RCC_AHB4ENR: GPIOD */
#define UART_BASE USART3_BASE
#define UART_EN_REG RCC_APB1LENR
#define UART_EN_BIT (1u << 18) /* USART3EN */
#define UART_BAUD 115200u

#define RCC_BASE 0x58024400u
#define RCC_AHB4ENR CM_REG(RCC_BASE + 0x0E0u)  /* bit0 GPIOA ... bit3 GPIOD ... */
#define RCC_APB1LENR CM_REG(RCC_BASE + 0x0E8u) /* bit17 USART2, bit18 USART3 */
#define GPIOD_BASE 0x58020C00u
#define USART3_BASE 0x40004800u

#define HSI_HZ 64000000u

void board_init(void)
{
    RCC_AHB4ENR |= PIN_GPIO_EN;
    UART_EN_REG |= UART_EN_BIT;
    (void)UART_EN_REG; /* read back: the clock is on before the first register access */
    stm32_gpio_af(PIN_TX_PORT, PIN_TX_PIN, PIN_UART_AF, 0);
    stm32_gpio_af(PIN_RX_PORT, PIN_RX_PIN, PIN_UART_AF, 1);
    stm32_usart_init(UART_BASE, HSI_HZ, UART_BAUD);
    cm_timer_init(HSI_HZ, 0);
}

const char *board_name(void) { return "stm32h743"; }
uint32_t board_cpu_hz(void) { return HSI_HZ; }
void board_uart_putc(uint8_t c) { stm32_usart_putc(UART_BASE, c); }
int board_uart_rx_ready(void) { return (STM32_USART_ISR(UART_BASE) & STM32_USART_ISR_RXNE) != 0u; }
int board_uart_poll(void) { return stm32_usart_poll(UART_BASE); }
void board_uart_flush(void) { stm32_usart_flush(UART_BASE); }
