/* board_common.c - the parts of the board API that every Cortex-M board shares: buffered UART calls on top
 * of the board's byte functions, number printing, reset, exit (semihosting or sleep) and the fault report. */
#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "cortexm.h"

void board_uart_write(const void *buf, size_t len)
{
    const uint8_t *p = (const uint8_t *)buf;
    size_t i;
    for (i = 0; i < len; ++i) {
        board_uart_putc(p[i]);
    }
}

size_t board_uart_read(void *buf, size_t len)
{
    uint8_t *p = (uint8_t *)buf;
    size_t i;
    for (i = 0; i < len; ++i) {
        p[i] = (uint8_t)board_uart_getc();
    }
    return len;
}

int board_uart_getc(void)
{
    int c;
    while ((c = board_uart_poll()) < 0) {
        board_uart_idle();
    }
    return c;
}

/* The default idle wait: none (the caller polls again at once). A board that can sleep until its UART
 * receives defines its own (qemu-mps2-an386/board.c). */
__attribute__((weak)) void board_uart_idle(void) {}

void board_print(const char *s)
{
    while (*s) {
        board_uart_putc((uint8_t)*s++);
    }
}

void board_print_u32(uint32_t v)
{
    char buf[10];
    int n = 0;
    do {
        buf[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u);
    while (n > 0) {
        board_uart_putc((uint8_t)buf[--n]);
    }
}

void board_print_hex32(uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    int shift;
    board_print("0x");
    for (shift = 28; shift >= 0; shift -= 4) {
        board_uart_putc((uint8_t)digits[(v >> shift) & 0xFu]);
    }
}

void board_reset(void)
{
    board_uart_flush();
    cm_dsb();
    SCB_AIRCR = SCB_AIRCR_VECTKEY | SCB_AIRCR_SYSRESETREQ;
    cm_dsb();
    for (;;) {
        cm_nop();
    }
}

/* ARM semihosting: operation in r0, argument in r1, BKPT 0xAB; the result comes back in r0. When nobody
 * serves it the fault handler (startup_cortexm.c) steps over the BKPT and returns -1. */
static int32_t semihost(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return (int32_t)r0;
}

#define SEMIHOST_SYS_EXIT 0x18u
#define SEMIHOST_SYS_EXIT_EXTENDED 0x20u
#define SEMIHOST_ADP_STOPPED_APPLICATION_EXIT 0x20026u

void board_exit(int code)
{
    uint32_t block[2];

    board_uart_flush();
    block[0] = SEMIHOST_ADP_STOPPED_APPLICATION_EXIT;
    block[1] = (uint32_t)code;
    (void)semihost(SEMIHOST_SYS_EXIT_EXTENDED, block);
    if (code == 0) {
        /* Hosts without SYS_EXIT_EXTENDED: the plain call can only say "success". */
        (void)semihost(SEMIHOST_SYS_EXIT, (const void *)(uintptr_t)SEMIHOST_ADP_STOPPED_APPLICATION_EXIT);
    }
    cm_irq_disable();
    for (;;) {
        cm_wfi();
    }
}

void board_fault(const char *name, uint32_t pc)
{
    board_print("\r\nFAULT ");
    board_print(name);
    board_print(" pc=");
    board_print_hex32(pc);
#if CM_HAS_V7M
    board_print(" cfsr=");
    board_print_hex32(SCB_CFSR);
    board_print(" hfsr=");
    board_print_hex32(SCB_HFSR);
#endif
    board_print("\r\n");
    board_exit(128 + 11);
}
