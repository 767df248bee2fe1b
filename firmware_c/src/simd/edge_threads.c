/* edge_threads.c - the thread pool of the Linux builds (EDGE_SIMD): large CONV_2D / DEPTHWISE_CONV_2D /
 * FULLY_CONNECTED nodes split their output rows or channels into parts that up to n threads claim one at a time.
 *
 * The count is taken at prepare (edge_simd_set_threads before edge_init: every node prepared afterwards keeps it
 * in its op data and sizes its per-thread scratch for it), so one interpreter runs with the count it was
 * prepared with. Every part is computed with the same arithmetic as in one thread and written to its own bytes:
 * the results are identical for any count. The workers are started on first use and live for the process; a
 * second caller while the pool is busy (two interpreters invoked from two threads) runs its parts itself, one
 * after another (same results). A worker that cannot be started leaves its parts to the caller.
 */
#define _POSIX_C_SOURCE 200809L
#include "edge_simd.h"

#if EDGE_SIMD
#include <pthread.h>
#include <stdint.h>

#define POOL_MAX 64

static int32_t threads_setting = 1;

int32_t edge_simd_set_threads(int32_t n) {
    const int32_t prev = threads_setting;
    threads_setting = n < 1 ? 1 : (n > POOL_MAX ? POOL_MAX : n);
    return prev;
}

int32_t edge_simd_threads(void) { return threads_setting; }

static pthread_mutex_t pool_busy = PTHREAD_MUTEX_INITIALIZER; /* held by the caller of a parallel run */
static pthread_mutex_t pool_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static int32_t pool_workers;           /* started: ids (= scratch slots) 1..pool_workers */
static uint32_t pool_gen;              /* bumped for every job (read with atomics while spinning) */
static uint32_t pool_start[POOL_MAX];  /* pool_gen when worker i was started (before the job it is started for) */
/* the current job, under pool_m: parts are claimed one at a time (pool_next), so a worker the OS runs late
 * leaves its parts to the others instead of holding up the caller */
static edge_simd_job_fn pool_fn;
static void *pool_ctx;
static int32_t pool_parts, pool_slots, pool_next, pool_finished;

/* Claim and run parts of job `gen` until none is left (pool_m held on entry and on return). */
static void pool_claim(uint32_t gen, int32_t slot) {
    while (pool_gen == gen && pool_next < pool_parts) {
        const int32_t t = pool_next++, n = pool_parts;
        const edge_simd_job_fn fn = pool_fn;
        void *const ctx = pool_ctx;
        pthread_mutex_unlock(&pool_m);
        fn(ctx, t, n, slot);
        pthread_mutex_lock(&pool_m);
        if (++pool_finished == n) pthread_cond_signal(&pool_done);
    }
}

static void *pool_worker(void *arg) {
    const int32_t id = (int32_t)(intptr_t)arg;
    uint32_t seen = pool_start[id]; /* written before pthread_create */
    for (;;) {
        int32_t spin;
        for (spin = 0; spin < 20000 && __atomic_load_n(&pool_gen, __ATOMIC_ACQUIRE) == seen; spin++)
            __asm__ __volatile__("" ::: "memory");
        pthread_mutex_lock(&pool_m);
        while (pool_gen == seen) pthread_cond_wait(&pool_work, &pool_m);
        seen = pool_gen;
        if (id < pool_slots) pool_claim(seen, id);
        pthread_mutex_unlock(&pool_m);
    }
    return 0;
}

void edge_simd_parallel(int32_t parts, int32_t slots, edge_simd_job_fn fn, void *ctx) {
    int32_t t;
    if (parts <= 1 || slots <= 1 || pthread_mutex_trylock(&pool_busy) != 0) {
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
        pool_start[pool_workers + 1] = pool_gen;
        ok = pthread_create(&th, &attr, pool_worker, (void *)(intptr_t)(pool_workers + 1)) == 0;
        pthread_attr_destroy(&attr);
        if (!ok) break; /* fewer workers: the caller claims their parts */
        pool_workers++;
    }
    pthread_mutex_lock(&pool_m);
    pool_fn = fn;
    pool_ctx = ctx;
    pool_parts = parts;
    pool_slots = slots;
    pool_next = 0;
    pool_finished = 0;
    __atomic_store_n(&pool_gen, pool_gen + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool_work);
    pool_claim(pool_gen, 0);
    while (pool_finished < parts) pthread_cond_wait(&pool_done, &pool_m);
    pthread_mutex_unlock(&pool_m);
    pthread_mutex_unlock(&pool_busy);
}
#endif
