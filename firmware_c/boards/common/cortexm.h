/* cortexm.h - the few Cortex-M core registers the boards use (ARMv6-M / ARMv7-M architecture manuals:
 * System Control Space at 0xE000E000, DWT at 0xE0001000). Private to boards/. */
#ifndef EDGE_BOARD_CORTEXM_H
#define EDGE_BOARD_CORTEXM_H

#include <stdint.h>

#define CM_REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* SysTick: a 24-bit down counter. */
#define SYST_CSR   CM_REG(0xE000E010u)  /* bit0 ENABLE, bit1 TICKINT, bit2 CLKSOURCE (1 = core clock), bit16 COUNTFLAG */
#define SYST_RVR   CM_REG(0xE000E014u)
#define SYST_CVR   CM_REG(0xE000E018u)
#define SYST_CSR_ENABLE    (1u << 0)
#define SYST_CSR_TICKINT   (1u << 1)
#define SYST_CSR_CLKSOURCE (1u << 2)
#define SYST_MAX           0x00FFFFFFu

/* System Control Block. */
#define SCB_ICSR   CM_REG(0xE000ED04u)
#define SCB_ICSR_PENDSTSET (1u << 26)
#define SCB_VTOR   CM_REG(0xE000ED08u)
#define SCB_AIRCR  CM_REG(0xE000ED0Cu)
#define SCB_AIRCR_VECTKEY      (0x05FAu << 16)
#define SCB_AIRCR_SYSRESETREQ  (1u << 2)
#define SCB_SHPR3  CM_REG(0xE000ED20u)  /* bits 31:24 SysTick priority */

/* NVIC: external interrupt n is bit n % 32 of word n / 32. */
#define NVIC_ISER(n) CM_REG(0xE000E100u + 4u * ((n) / 32u))  /* write 1: enable */
#define NVIC_ICPR(n) CM_REG(0xE000E280u + 4u * ((n) / 32u))  /* write 1: clear pending */
#define NVIC_BIT(n)  (1u << ((n) % 32u))

#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
#define CM_HAS_V7M 1
#define SCB_CFSR   CM_REG(0xE000ED28u)
#define SCB_HFSR   CM_REG(0xE000ED2Cu)
#define SCB_HFSR_DEBUGEVT (1u << 31)
#define SCB_CPACR  CM_REG(0xE000ED88u)  /* CP10/CP11 full access: bits 23:20 = 0xF */
#define CM_DEMCR   CM_REG(0xE000EDFCu)  /* bit24 TRCENA */
#define CM_DEMCR_TRCENA (1u << 24)
#define DWT_CTRL   CM_REG(0xE0001000u)  /* bit0 CYCCNTENA, bit25 NOCYCCNT */
#define DWT_CYCCNT CM_REG(0xE0001004u)
#define DWT_LAR    CM_REG(0xE0001FB0u)  /* Cortex-M7: write 0xC5ACCE55 to unlock */
#define DWT_CTRL_CYCCNTENA (1u << 0)
#define DWT_CTRL_NOCYCCNT  (1u << 25)
#else
#define CM_HAS_V7M 0
#endif

static inline void cm_dsb(void) { __asm__ volatile("dsb 0xF" ::: "memory"); }
static inline void cm_isb(void) { __asm__ volatile("isb 0xF" ::: "memory"); }
static inline void cm_irq_enable(void) { __asm__ volatile("cpsie i" ::: "memory"); }
static inline void cm_irq_disable(void) { __asm__ volatile("cpsid i" ::: "memory"); }
static inline uint32_t cm_primask(void) /* 1 while interrupts are masked (cpsid i) */
{
    uint32_t v;
    __asm__ volatile("mrs %0, primask" : "=r"(v)::"memory");
    return v & 1u;
}
static inline void cm_wfi(void) { __asm__ volatile("wfi" ::: "memory"); }
static inline void cm_nop(void) { __asm__ volatile("nop"); }

/* Shared by the boards (common/cortexm_timer.c): start the timer for a core clock of cpu_hz and pick the
 * source (DWT if its cycle counter really counts, else SysTick). emulated: label the units "(emulated)". */
void cm_timer_init(uint32_t cpu_hz, int emulated);

/* The UART receive interrupt's handler of a board whose board.mk defines BOARD_UART_RX_IRQ (its external
 * interrupt number; the vector table points there): it wakes board_uart_idle's WFI. */
void board_uart_rx_irq(void);

#endif /* EDGE_BOARD_CORTEXM_H */
