/* startup_cortexm.c - vector table, reset handler and fault handlers shared by every Cortex-M board.
 *
 * The board's linker script provides _estack (initial stack top), _sidata/_sdata/_edata (the .data image in
 * flash and its place in RAM), _sbss/_ebss, and keeps the section .vectors at the start of its vector area.
 * BOARD_NUM_IRQS (from the board's board.mk) sizes the table. Every interrupt goes to Default_Handler unless
 * a strong definition of the named handler exists (SysTick_Handler: common/cortexm_timer.c), except the UART
 * receive interrupt of a board that sleeps while its UART is idle: its board.mk defines BOARD_UART_RX_IRQ (the
 * external interrupt's number) and its board.c board_uart_rx_irq() (qemu-mps2-an386).
 */
#include <stdint.h>

#include "board.h"
#include "cortexm.h"

#ifndef BOARD_NUM_IRQS
#error "BOARD_NUM_IRQS must be defined by the board's board.mk"
#endif

typedef void (*cm_vector_t)(void);

extern uint32_t _estack;
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss;

extern int main(void);

void Reset_Handler(void);
void cm_reset_c(void);
void cm_fault_c(uint32_t *frame, uint32_t ipsr);
void HardFault_Handler(void);
void Default_Handler(void);
void NMI_Handler(void) __attribute__((weak, alias("Default_Handler")));
void MemManage_Handler(void) __attribute__((weak, alias("Default_Handler")));
void BusFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void UsageFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SVC_Handler(void) __attribute__((weak, alias("Default_Handler")));
void DebugMon_Handler(void) __attribute__((weak, alias("HardFault_Handler")));
void PendSV_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));

/* Hook for boards that must run before .data/.bss exist (e.g. turning on RAM banks). Default: nothing. */
void board_early_init(void) __attribute__((weak));
void board_early_init(void) {}

struct cm_vector_table {
    uint32_t *initial_sp;
    cm_vector_t system[15];
    cm_vector_t irq[BOARD_NUM_IRQS];
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
__attribute__((section(".vectors"), used)) const struct cm_vector_table cm_vectors = {
    &_estack,
    {
        Reset_Handler,      /*  1 */
        NMI_Handler,        /*  2 */
        HardFault_Handler,  /*  3 */
        MemManage_Handler,  /*  4 */
        BusFault_Handler,   /*  5 */
        UsageFault_Handler, /*  6 */
        0, 0, 0, 0,         /*  7..10 reserved */
        SVC_Handler,        /* 11 */
        DebugMon_Handler,   /* 12 */
        0,                  /* 13 reserved */
        PendSV_Handler,     /* 14 */
        SysTick_Handler,    /* 15 */
    },
    /* GCC range designator: every external interrupt to the default handler, then the board's UART receive
     * interrupt over it (a deliberate override of one element of the range: -Woverride-init is off here). */
    {
        [0 ... BOARD_NUM_IRQS - 1] = Default_Handler,
#ifdef BOARD_UART_RX_IRQ
        [BOARD_UART_RX_IRQ] = board_uart_rx_irq,
#endif
    },
};
#pragma GCC diagnostic pop

/* Reached from Reset_Handler with the stack set. Runs before .data and .bss exist: touches only registers
 * and locals. */
__attribute__((used, noreturn)) void cm_reset_c(void)
{
    const uint32_t *src;
    uint32_t *dst;

#if defined(__ARM_FP)
    /* Hard-float code may use s0..s31 anywhere; grant CP10/CP11 full access before any C that might. */
    SCB_CPACR |= 0xFu << 20;
    cm_dsb();
    cm_isb();
#endif
#if CM_HAS_V7M || defined(BOARD_HAS_VTOR)
    SCB_VTOR = (uint32_t)(uintptr_t)&cm_vectors;
    cm_dsb();
#endif
    board_early_init();

    src = &_sidata;
    for (dst = &_sdata; dst < &_edata; ++dst, ++src) {
        *(volatile uint32_t *)dst = *src;
    }
    for (dst = &_sbss; dst < &_ebss; ++dst) {
        *(volatile uint32_t *)dst = 0u;
    }
    board_exit(main());
}

/* The entry point (also the ELF entry): set the stack explicitly, so a debugger or loader that jumps here
 * without taking the reset vector's SP still gets a valid one. */
__attribute__((naked, noreturn)) void Reset_Handler(void)
{
    __asm__ volatile(
        "ldr r0, =_estack\n"
        "mov sp, r0\n"
        "bl cm_reset_c\n"
        "b .\n");
}

/* A fault (or a debug event) with the stacked exception frame: r0 r1 r2 r3 r12 lr pc xpsr. A BKPT 0xAB at the
 * stacked pc is a semihosting call nobody served (no debugger, QEMU without -semihosting): step over it and
 * return -1 in r0, so board_exit can fall back. Anything else is fatal. */
__attribute__((used)) void cm_fault_c(uint32_t *frame, uint32_t ipsr)
{
    uint32_t pc = frame[6];
    const volatile uint16_t *insn = (const volatile uint16_t *)(uintptr_t)(pc & ~1u);

    if (*insn == 0xBEABu) {
        frame[6] = pc + 2u;
        frame[0] = 0xFFFFFFFFu;
#if CM_HAS_V7M
        SCB_HFSR = SCB_HFSR_DEBUGEVT; /* write one to clear */
#endif
        return;
    }
    switch (ipsr & 0x1FFu) {
    case 3: board_fault("HardFault", pc);
    case 12: board_fault("DebugMon", pc);
    default: board_fault("exception", pc);
    }
}

/* Pick the stack the exception frame went to (EXC_RETURN bit 2 in lr), then tail-call cm_fault_c: its return
 * (pop of lr = EXC_RETURN into pc) is the exception return. Thumb-1 only, so it also builds for ARMv6-M. */
__attribute__((naked)) void HardFault_Handler(void)
{
    __asm__ volatile(
        "movs r0, #4\n"
        "mov r1, lr\n"
        "tst r0, r1\n"
        "beq 1f\n"
        "mrs r0, psp\n"
        "b 2f\n"
        "1:\n"
        "mrs r0, msp\n"
        "2:\n"
        "mrs r1, ipsr\n"
        "ldr r2, =cm_fault_c\n"
        "bx r2\n");
}

void Default_Handler(void)
{
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    board_fault("unhandled interrupt", ipsr & 0x1FFu);
}
