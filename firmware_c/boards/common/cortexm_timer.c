/* cortexm_timer.c - the board timer for every Cortex-M board: the DWT cycle counter when it counts, else
 * SysTick (core clock, 24-bit, reload 2^24 - 1) widened to 32 bits by counting its wraps in SysTick_Handler.
 *
 * board_timer_now() with SysTick is consistent as long as interrupts are enabled (a wrap whose interrupt is
 * still pending would make the count step back by 2^24): read it from thread mode, not with PRIMASK set.
 */
#include <stdint.h>

#include "board.h"
#include "cortexm.h"

void SysTick_Handler(void);

static volatile uint32_t systick_wraps;
static uint8_t timer_source;
static uint8_t timer_emulated;
static uint32_t timer_hz;

void SysTick_Handler(void)
{
    systick_wraps = systick_wraps + 1u;
}

#if CM_HAS_V7M
/* Start CYCCNT and check that it moves: QEMU models no DWT (reads 0), and some parts lack CYCCNT. */
static int dwt_start(void)
{
    uint32_t before, i;

    CM_DEMCR |= CM_DEMCR_TRCENA;
    DWT_LAR = 0xC5ACCE55u;
    if (DWT_CTRL & DWT_CTRL_NOCYCCNT) {
        return 0;
    }
    DWT_CYCCNT = 0u;
    DWT_CTRL |= DWT_CTRL_CYCCNTENA;
    before = DWT_CYCCNT;
    for (i = 0; i < 16u; ++i) {
        cm_nop();
    }
    return DWT_CYCCNT != before;
}
#endif

static void systick_start(void)
{
    SYST_CSR = 0u;
    systick_wraps = 0u;
    SYST_RVR = SYST_MAX;
    SYST_CVR = 0u; /* any write clears it; counting starts from the reload value */
    SCB_SHPR3 = (SCB_SHPR3 & 0x00FFFFFFu); /* highest priority: wraps are never late behind other ISRs */
    SYST_CSR = SYST_CSR_CLKSOURCE | SYST_CSR_TICKINT | SYST_CSR_ENABLE;
}

void cm_timer_init(uint32_t cpu_hz, int emulated)
{
    timer_hz = cpu_hz;
    timer_emulated = (uint8_t)(emulated != 0);
#if CM_HAS_V7M
    if (dwt_start()) {
        timer_source = BOARD_TIMER_DWT;
        return;
    }
#endif
    timer_source = BOARD_TIMER_SYSTICK;
    systick_start();
    cm_irq_enable();
}

void board_timer_restart(void)
{
#if CM_HAS_V7M
    if (timer_source == BOARD_TIMER_DWT) {
        DWT_CYCCNT = 0u;
        return;
    }
#endif
    if (timer_source == BOARD_TIMER_SYSTICK) {
        systick_start();
    }
}

uint32_t board_timer_now(void)
{
    uint32_t wraps, count, pending;

#if CM_HAS_V7M
    if (timer_source == BOARD_TIMER_DWT) {
        return DWT_CYCCNT;
    }
#endif
    if (timer_source != BOARD_TIMER_SYSTICK) {
        return 0u;
    }
    for (;;) {
        wraps = systick_wraps;
        count = SYST_CVR;
        pending = SCB_ICSR & SCB_ICSR_PENDSTSET;
        if (pending) {
            count = SYST_CVR; /* surely from after the wrap that is pending */
        }
        if (wraps == systick_wraps) {
            break; /* the interrupt did not run in between */
        }
    }
    if (pending) {
        wraps += 1u; /* wrapped, interrupt not taken yet (or interrupts masked) */
    }
    return (wraps << 24) | (SYST_MAX - (count & SYST_MAX));
}

uint32_t board_timer_now_cb(void *user)
{
    (void)user;
    return board_timer_now();
}

const char *board_timer_units(void)
{
    switch (timer_source) {
    case BOARD_TIMER_DWT: return "cycles";
    case BOARD_TIMER_SYSTICK: return timer_emulated ? "systick ticks (emulated)" : "systick ticks";
    default: return "none";
    }
}

uint32_t board_timer_hz(void) { return timer_hz; }

int board_timer_source(void) { return timer_source; }
