/* stm32_usart.h - the USART and GPIO register blocks shared by STM32F7 and STM32H7 (same layout in RM0385
 * and RM0433): polled 8N1, oversampling by 16, and GPIO alternate-function setup. Private to boards/. */
#ifndef EDGE_BOARD_STM32_USART_H
#define EDGE_BOARD_STM32_USART_H

#include <stdint.h>

#include "cortexm.h"

/* USART registers (offsets) */
#define STM32_USART_CR1(b) CM_REG((b) + 0x00u) /* bit0 UE, bit2 RE, bit3 TE */
#define STM32_USART_BRR(b) CM_REG((b) + 0x0Cu)
#define STM32_USART_ISR(b) CM_REG((b) + 0x1Cu) /* bit3 ORE, bit5 RXNE, bit6 TC, bit7 TXE */
#define STM32_USART_ICR(b) CM_REG((b) + 0x20u) /* bit3 ORECF */
#define STM32_USART_RDR(b) CM_REG((b) + 0x24u)
#define STM32_USART_TDR(b) CM_REG((b) + 0x28u)
#define STM32_USART_CR1_UE (1u << 0)
#define STM32_USART_CR1_RE (1u << 2)
#define STM32_USART_CR1_TE (1u << 3)
#define STM32_USART_ISR_ORE (1u << 3)
#define STM32_USART_ISR_RXNE (1u << 5)
#define STM32_USART_ISR_TC (1u << 6)
#define STM32_USART_ISR_TXE (1u << 7)

/* GPIO registers (offsets) */
#define STM32_GPIO_MODER(p) CM_REG((p) + 0x00u)   /* 2 bits per pin: 10 = alternate function */
#define STM32_GPIO_OSPEEDR(p) CM_REG((p) + 0x08u) /* 2 bits per pin */
#define STM32_GPIO_PUPDR(p) CM_REG((p) + 0x0Cu)   /* 2 bits per pin: 01 = pull-up */
#define STM32_GPIO_AFR(p, pin) CM_REG((p) + 0x20u + ((pin) >= 8u ? 4u : 0u)) /* 4 bits per pin */

static inline void stm32_gpio_af(uint32_t port, uint32_t pin, uint32_t af, int pull_up)
{
    uint32_t shift2 = pin * 2u, shift4 = (pin & 7u) * 4u;
    STM32_GPIO_AFR(port, pin) = (STM32_GPIO_AFR(port, pin) & ~(0xFu << shift4)) | (af << shift4);
    STM32_GPIO_OSPEEDR(port) = (STM32_GPIO_OSPEEDR(port) & ~(3u << shift2)) | (2u << shift2);
    STM32_GPIO_PUPDR(port) = (STM32_GPIO_PUPDR(port) & ~(3u << shift2)) | ((pull_up ? 1u : 0u) << shift2);
    STM32_GPIO_MODER(port) = (STM32_GPIO_MODER(port) & ~(3u << shift2)) | (2u << shift2);
}

/* 8N1 at baud from a kernel clock of clk_hz (oversampling by 16: BRR = clk / baud, rounded). */
static inline void stm32_usart_init(uint32_t base, uint32_t clk_hz, uint32_t baud)
{
    STM32_USART_CR1(base) = 0u;
    STM32_USART_BRR(base) = (clk_hz + baud / 2u) / baud;
    STM32_USART_CR1(base) = STM32_USART_CR1_UE | STM32_USART_CR1_RE | STM32_USART_CR1_TE;
}

static inline void stm32_usart_putc(uint32_t base, uint8_t c)
{
    while (!(STM32_USART_ISR(base) & STM32_USART_ISR_TXE)) {
    }
    STM32_USART_TDR(base) = c;
}

static inline int stm32_usart_poll(uint32_t base)
{
    uint32_t isr = STM32_USART_ISR(base);
    if (isr & STM32_USART_ISR_ORE) {
        STM32_USART_ICR(base) = STM32_USART_ISR_ORE; /* an overrun stops reception until cleared */
    }
    if (!(isr & STM32_USART_ISR_RXNE)) {
        return -1;
    }
    return (int)(STM32_USART_RDR(base) & 0xFFu);
}

static inline void stm32_usart_flush(uint32_t base)
{
    while (!(STM32_USART_ISR(base) & STM32_USART_ISR_TC)) {
    }
}

#endif /* EDGE_BOARD_STM32_USART_H */
