/* selftest.c - the board self-test image (no runtime): proves startup (.data copied, .bss zeroed, FPU on),
 * the UART in both directions and the timer.
 *
 * It starts when the host sends one byte (any): QEMU's TCP serial backend can drop what the guest writes
 * while the host's connection is still being set up, so nothing is sent before the host has spoken.
 *
 * Output, line by line (CR LF):
 *     edge-sdk board selftest: <board>
 *     cpu_hz=<n> timer=<units> timer_hz=<n> source=<dwt|systick>
 *     startup: data=ok bss=ok fpu=ok
 *     loop: iterations=<n> ticks=<n>
 *     echo: ready
 * then every received byte is sent back, except three control bytes:
 *     0x04 (EOT)  prints "bye", then board_exit(0)
 *     0x05 (ENQ)  prints "bye", then board_exit(3)        (exit codes reach QEMU's status with semihosting)
 *     0x06 (ACK)  executes an undefined instruction       (the fault report: "FAULT HardFault pc=...")
 */
#include <stdint.h>

#include "board.h"

#define SELFTEST_LOOP_ITERATIONS 100000u
#define SELFTEST_EOT 0x04
#define SELFTEST_EXIT3 0x05
#define SELFTEST_FAULT 0x06

static uint32_t data_word = 0x5EEDC0DEu; /* .data: must read back as initialised */
static uint32_t bss_words[4];            /* .bss: must read back as zero */
static volatile float fpu_operand = 1.5f; /* volatile: keep the multiply at run time */

/* A fixed amount of work whose length the compiler cannot change (asm barrier per iteration). */
__attribute__((noinline)) static void busy_loop(uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; ++i) {
        __asm__ volatile("" ::: "memory");
    }
}

static const char *ok(int good) { return good ? "ok" : "BAD"; }

int main(void)
{
    uint32_t t0, t1;
    float f;
    int bss_zero;

    board_init();
    (void)board_uart_getc(); /* the host's start byte */
    board_timer_restart();   /* timings must not depend on when it came */

    board_print("edge-sdk board selftest: ");
    board_print(board_name());
    board_print("\r\ncpu_hz=");
    board_print_u32(board_cpu_hz());
    board_print(" timer=");
    board_print(board_timer_units());
    board_print(" timer_hz=");
    board_print_u32(board_timer_hz());
    board_print(" source=");
    board_print(board_timer_source() == BOARD_TIMER_DWT ? "dwt" : "systick");

    bss_zero = (bss_words[0] | bss_words[1] | bss_words[2] | bss_words[3]) == 0u;
    f = fpu_operand * fpu_operand;
    board_print("\r\nstartup: data=");
    board_print(ok(data_word == 0x5EEDC0DEu));
    board_print(" bss=");
    board_print(ok(bss_zero));
    board_print(" fpu=");
    board_print(ok(f == 2.25f));

    t0 = board_timer_now();
    busy_loop(SELFTEST_LOOP_ITERATIONS);
    t1 = board_timer_now();
    board_print("\r\nloop: iterations=");
    board_print_u32(SELFTEST_LOOP_ITERATIONS);
    board_print(" ticks=");
    board_print_u32(t1 - t0);
    board_print("\r\necho: ready\r\n");

    for (;;) {
        int c = board_uart_getc();
        if (c == SELFTEST_EOT || c == SELFTEST_EXIT3) {
            board_print("bye\r\n");
            return c == SELFTEST_EOT ? 0 : 3;
        }
        if (c == SELFTEST_FAULT) {
            __asm__ volatile("udf #0");
        }
        board_uart_putc((uint8_t)c);
    }
}
