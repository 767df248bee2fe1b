/* edge_threads.c - the thread pool of the Linux builds (EDGE_SIMD): large CONV_2D / DEPTHWISE_CONV_2D /
 * FULLY_CONNECTED nodes split their output rows or channels into parts that up to n threads claim one at a time.
 *
 * The count is taken at prepare (edge_simd_set_threads before edge_init: every node prepared afterwards keeps it
 * in its op data and sizes its per-thread scratch for it), so one interpreter runs with the count it was
 * prepared with. Every part is computed with the same arithmetic as in one thread and written to its own bytes:
 * the results are identical for any count. The workers are started on first use and live for the process; a
 * second caller while the pool is busy (two interpreters invoked from two threads) runs its parts itself, one
 * after another (same results). A worker that cannot be started leaves its parts to the caller.
 *
 * No lock is held while parts run or are claimed (a compare-and-swap on one word): a worker the OS stops cannot
 * stop the caller's own claims (the first version claimed under a mutex a worker also took on waking). Workers
 * and the caller spin about 200 us before they sleep (the first version slept after about 20000 empty polls and
 * the caller slept at once): a large op that follows a short one finds its workers awake, and the caller sees the
 * last part end without a wake-up of its own. What no pool avoids: a part a worker has claimed holds the caller
 * up as long as the OS keeps that worker off the CPU (a machine with more runnable threads than cores). The
 * spinning threads yield every 64 polls, so that a pool thread the OS put on the same core gets it: without the
 * yield, on the shared 2-core build machine (load 7), a 0.33 ms job of 4 parts at 2 threads took 2.2 ms (median).
 */
#define _POSIX_C_SOURCE 200809L
#include "edge_simd.h"

#if EDGE_SIMD
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <time.h>

#define POOL_MAX 64

static int32_t threads_setting = 1;

int32_t edge_simd_set_threads(int32_t n) {
    const int32_t prev = threads_setting;
    threads_setting = n < 1 ? 1 : (n > POOL_MAX ? POOL_MAX : n);
    return prev;
}

int32_t edge_simd_threads(void) { return threads_setting; }

/* The current job is one 64-bit word, so that claiming a part is one compare-and-swap that no thread can hold
 * up (a thread the OS stops while it holds a lock would stop every other): bits 40..63 the job's number,
 * 32..39 its slots, 16..31 its parts, 0..15 the next part to claim. A part is claimed only while the word
 * still names its job, so the job's function and context (written before the job is published, read after a
 * claim succeeded: the job cannot end before that part is done) are always that job's. */
#define JOB_PARTS_MAX 0xffff
static uint64_t pool_word;
static edge_simd_job_fn pool_fn;
static void *pool_ctx;
static int32_t pool_finished;          /* parts done, of the current job */
static int32_t pool_sleepers;          /* workers waiting on pool_work */
static int32_t pool_caller_waits;      /* the caller waits on pool_done */
static pthread_mutex_t pool_busy = PTHREAD_MUTEX_INITIALIZER; /* held by the caller of a parallel run */
static pthread_mutex_t pool_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static int32_t pool_workers;           /* started: ids (= scratch slots) 1..pool_workers */

/* Spin about this long (polls with a pause; every 64, the clock and a sched_yield) before sleeping: a worker
 * stays ready for the next op's job (the ops between two large ones take tens of microseconds: a sleeping worker
 * costs a wake-up per op, more on a busy machine), the caller for the parts the workers still run. */
#define SPIN_NS 200000

static inline void cpu_relax(void) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin until done(arg) or SPIN_NS have passed; returns done(arg). */
static int spin_until(int (*done)(const void *), const void *arg) {
    int64_t until = 0;
    int32_t k;
    for (k = 0;; k++) {
        if (done(arg)) return 1;
        cpu_relax();
        if ((k & 63) == 63) {
            const int64_t t = now_ns();
            sched_yield(); /* a pool thread that shares this core runs now */
            if (!until) until = t + SPIN_NS;
            else if (t >= until) return done(arg);
        }
    }
}

static inline uint32_t word_job(uint64_t w) { return (uint32_t)(w >> 40); }

/* Claim and run parts of job `job` in `slot` until none is left (or another job is current). */
static void pool_claim(uint32_t job, int32_t slot) {
    uint64_t w = __atomic_load_n(&pool_word, __ATOMIC_ACQUIRE);
    for (;;) {
        int32_t t, parts;
        if (word_job(w) != (job & 0xffffffu) || (int32_t)((w >> 32) & 0xff) <= slot) return;
        t = (int32_t)(w & 0xffff);
        parts = (int32_t)((w >> 16) & 0xffff);
        if (t >= parts) return;
        if (!__atomic_compare_exchange_n(&pool_word, &w, w + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        {
            const edge_simd_job_fn fn = __atomic_load_n(&pool_fn, __ATOMIC_RELAXED);
            void *const ctx = __atomic_load_n(&pool_ctx, __ATOMIC_RELAXED);
            fn(ctx, t, parts, slot);
        }
        if (__atomic_add_fetch(&pool_finished, 1, __ATOMIC_SEQ_CST) == parts &&
            __atomic_load_n(&pool_caller_waits, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&pool_m);
            pthread_cond_signal(&pool_done);
            pthread_mutex_unlock(&pool_m);
        }
        w = __atomic_load_n(&pool_word, __ATOMIC_ACQUIRE);
    }
}

static int job_changed(const void *seen) {
    return word_job(__atomic_load_n(&pool_word, __ATOMIC_ACQUIRE)) != *(const uint32_t *)seen;
}

static int job_finished(const void *parts) {
    return __atomic_load_n(&pool_finished, __ATOMIC_ACQUIRE) >= *(const int32_t *)parts;
}

static void *pool_worker(void *arg) {
    const int32_t id = (int32_t)(intptr_t)arg;
    uint32_t seen = word_job(__atomic_load_n(&pool_word, __ATOMIC_ACQUIRE)) - 1u; /* the job it was started for */
    for (;;) {
        uint32_t job;
        if (!spin_until(job_changed, &seen)) { /* sleep until the next job */
            pthread_mutex_lock(&pool_m);
            __atomic_add_fetch(&pool_sleepers, 1, __ATOMIC_SEQ_CST);
            while ((job = word_job(__atomic_load_n(&pool_word, __ATOMIC_SEQ_CST))) == seen)
                pthread_cond_wait(&pool_work, &pool_m);
            __atomic_sub_fetch(&pool_sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&pool_m);
        }
        job = word_job(__atomic_load_n(&pool_word, __ATOMIC_ACQUIRE));
        seen = job;
        pool_claim(job, id);
    }
    return 0;
}

void edge_simd_parallel(int32_t parts, int32_t slots, edge_simd_job_fn fn, void *ctx) {
    int32_t t;
    uint32_t job;
    if (parts <= 1 || slots <= 1 || parts > JOB_PARTS_MAX || pthread_mutex_trylock(&pool_busy) != 0) {
        /* one slot, or the pool runs another interpreter's job: every part here, in slot 0 */
        for (t = 0; t < parts; t++) fn(ctx, t, parts, 0);
        return;
    }
    if (slots > POOL_MAX) slots = POOL_MAX;
    while (pool_workers < slots - 1) {
        pthread_t th;
        pthread_attr_t attr;
        int ok;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&th, &attr, pool_worker, (void *)(intptr_t)(pool_workers + 1)) == 0;
        pthread_attr_destroy(&attr);
        if (!ok) break; /* fewer workers: the caller claims their parts */
        pool_workers++;
    }
    /* the previous job is over (every part finished): nobody reads these until the new word is published */
    __atomic_store_n(&pool_fn, fn, __ATOMIC_RELAXED);
    __atomic_store_n(&pool_ctx, ctx, __ATOMIC_RELAXED);
    __atomic_store_n(&pool_finished, 0, __ATOMIC_RELAXED);
    job = (word_job(__atomic_load_n(&pool_word, __ATOMIC_RELAXED)) + 1u) & 0xffffffu;
    __atomic_store_n(&pool_word, ((uint64_t)job << 40) | ((uint64_t)slots << 32) | ((uint64_t)parts << 16),
                     __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&pool_sleepers, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&pool_m);
        pthread_cond_broadcast(&pool_work);
        pthread_mutex_unlock(&pool_m);
    }
    pool_claim(job, 0);
    /* the parts the workers claimed: spin a while, then sleep until the last one signals */
    if (!spin_until(job_finished, &parts)) {
        pthread_mutex_lock(&pool_m);
        __atomic_store_n(&pool_caller_waits, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&pool_finished, __ATOMIC_SEQ_CST) < parts) pthread_cond_wait(&pool_done, &pool_m);
        __atomic_store_n(&pool_caller_waits, 0, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&pool_m);
    }
    pthread_mutex_unlock(&pool_busy);
}
#endif
