/* board.h - the board API of edge-sdk's firmware (boards/<name>/ implements it; the runtime's device
 * firmware and the serial-protocol firmware call only this).
 *
 * Every board provides: a clock setup, one UART (the host link: 115200 8N1 on silicon; the socket on QEMU),
 * a free-running 32-bit timer for per-op timing, and a way to reset or stop. No malloc, no libc needed;
 * nothing here uses interrupts except the SysTick wrap counter of the timer and, on boards that sleep while
 * the UART is idle (board_uart_idle), the UART's receive interrupt (it only wakes the core).
 *
 *     board_init();                         clocks, UART, timer (call first, once)
 *     board_uart_write("hi\r\n", 4);
 *     uint32_t t0 = board_timer_now();  work();  uint32_t dt = board_timer_now() - t0;   (mod 2^32)
 *
 * Timer sources (board_timer_source()):
 *   BOARD_TIMER_DWT      the DWT cycle counter (CYCCNT) on silicon that has one: units "cycles", hz = CPU clock.
 *   BOARD_TIMER_SYSTICK  SysTick extended to 32 bits by its wrap interrupt; used on Cortex-M0+ (no CYCCNT) and
 *                        whenever CYCCNT does not count (QEMU: it reads 0). Under QEMU the units say "emulated":
 *                        with -icount shift=0 the counts are deterministic but they are instruction counts
 *                        scaled by the model's clock, not time.
 */
#ifndef EDGE_BOARD_H
#define EDGE_BOARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BOARD_NORETURN __attribute__((noreturn))
#else
#define BOARD_NORETURN
#endif

/* Large, not zero-initialised buffers (e.g. the runtime's arena): placed in the board's biggest RAM
 * (QEMU mps2: the 16 MB PSRAM; STM32H743: AXI SRAM; others: main SRAM). Use it on a static array. */
#define BOARD_LARGE_BSS __attribute__((section(".board_large"), aligned(16)))

enum board_timer_source {
    BOARD_TIMER_NONE = 0,
    BOARD_TIMER_DWT = 1,
    BOARD_TIMER_SYSTICK = 2
};

/* ---------------------------------------------------------------------------------------- setup */

/* Clocks, UART, timer. Enables interrupts (the SysTick wrap counter needs them). */
void board_init(void);
const char *board_name(void);        /* "qemu-mps2-an386" */
uint32_t board_cpu_hz(void);         /* core clock after board_init */

/* ---------------------------------------------------------------------------------------- UART */

void board_uart_putc(uint8_t c);                     /* blocking */
int board_uart_getc(void);                           /* blocking; 0..255 (sleeps in board_uart_idle) */
int board_uart_poll(void);                           /* non-blocking: next byte 0..255, or -1 when none */
int board_uart_rx_ready(void);                       /* non-zero when a byte is waiting (nothing consumed) */
void board_uart_write(const void *buf, size_t len);  /* blocking, every byte */
size_t board_uart_read(void *buf, size_t len);       /* blocking until len bytes arrived; returns len */
void board_uart_flush(void);                         /* wait until the transmitter has taken every byte */
/* Wait, asleep where the board can, until a byte may have arrived (or any other interrupt came); callers poll
 * again after it. board_uart_getc calls it between polls. Boards that do not override it return at once (a
 * busy poll). qemu-mps2-an386 sleeps in WFI until the UART's receive interrupt: an idle emulated board then
 * costs the host no CPU (QEMU's -icount sleep=on, its default, lets virtual time wait for real time). */
void board_uart_idle(void);

/* Text helpers on top of board_uart_write (no printf). */
void board_print(const char *s);
void board_print_u32(uint32_t v);                    /* decimal */
void board_print_hex32(uint32_t v);                  /* 0x%08x */

/* ---------------------------------------------------------------------------------------- timer */

uint32_t board_timer_now(void);          /* free-running, wraps mod 2^32; differences are ticks */
const char *board_timer_units(void);     /* "cycles" | "systick ticks" | "systick ticks (emulated)" */
uint32_t board_timer_hz(void);           /* ticks per second of the (possibly emulated) clock */
int board_timer_source(void);            /* enum board_timer_source */
/* Restart the timer from 0. Call it after waiting for the host: under QEMU -icount, ticks are then the same
 * run to run (the tick phase no longer depends on how long the guest polled before the host spoke). */
void board_timer_restart(void);

/* The same clock with the runtime's edge_timer_t.now signature (user is ignored), so firmware can write
 *     edge_timer_t t = { board_timer_now_cb, 0, 0 };  t.units = board_timer_units();              */
uint32_t board_timer_now_cb(void *user);

/* ---------------------------------------------------------------------------------------- stop */

/* A system reset (AIRCR.SYSRESETREQ). Under QEMU the machine restarts, or QEMU exits with -no-reboot. */
BOARD_NORETURN void board_reset(void);

/* Stop with an exit code: ARM semihosting SYS_EXIT_EXTENDED when a debugger or QEMU
 * (-semihosting-config enable=on,target=native) serves it, else interrupts off and sleep forever.
 * The UART is flushed first. */
BOARD_NORETURN void board_exit(int code);

/* Called on a fault nobody handles: prints "FAULT <name> pc=0x..." on the UART, then board_exit(128 + n). */
BOARD_NORETURN void board_fault(const char *name, uint32_t pc);

#ifdef __cplusplus
}
#endif
#endif /* EDGE_BOARD_H */
