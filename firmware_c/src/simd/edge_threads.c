/* edge_threads.c - the thread pool of the Linux builds (EDGE_SIMD): large CONV_2D / DEPTHWISE_CONV_2D /
 * FULLY_CONNECTED nodes split their output rows or channels into n parts and run them on n threads.
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
static int32_t pool_workers;           /* started: ids 1..pool_workers */
static uint32_t pool_gen;              /* bumped for every job (read with atomics while spinning) */
static int32_t pool_pending;           /* workers of this job not finished yet */
static edge_simd_job_fn pool_fn;
static void *pool_ctx;
static int32_t pool_n;                 /* parts [1, pool_n) run on workers 1.. */
static int32_t pool_total;             /* the job's part count */
static uint32_t pool_start[POOL_MAX];  /* pool_gen when worker i was started (before the job it is started for) */

static void *pool_worker(void *arg) {
    const int32_t id = (int32_t)(intptr_t)arg;
    uint32_t seen = pool_start[id]; /* written before pthread_create */
    for (;;) {
        int32_t spin;
        edge_simd_job_fn fn;
        void *ctx;
        int32_t n;
        for (spin = 0; spin < 20000 && __atomic_load_n(&pool_gen, __ATOMIC_ACQUIRE) == seen; spin++)
            __asm__ __volatile__("" ::: "memory");
        pthread_mutex_lock(&pool_m);
        while (pool_gen == seen) pthread_cond_wait(&pool_work, &pool_m);
        seen = pool_gen;
        fn = pool_fn;
        ctx = pool_ctx;
        n = pool_total;
        if (id >= pool_n) {
            pthread_mutex_unlock(&pool_m);
            continue;
        }
        pthread_mutex_unlock(&pool_m);
        {
            fn(ctx, id, n);
            pthread_mutex_lock(&pool_m);
            if (--pool_pending == 0) pthread_cond_signal(&pool_done);
            pthread_mutex_unlock(&pool_m);
        }
    }
    return 0;
}

void edge_simd_parallel(int32_t n, edge_simd_job_fn fn, void *ctx) {
    int32_t t, have;
    if (n <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    if (pthread_mutex_trylock(&pool_busy) != 0) { /* the pool runs another job: do every part here */
        for (t = 0; t < n; t++) fn(ctx, t, n);
        return;
    }
    while (pool_workers < n - 1 && pool_workers < POOL_MAX - 1) {
        pthread_t th;
        pthread_attr_t attr;
        int ok;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pool_start[pool_workers + 1] = pool_gen;
        ok = pthread_create(&th, &attr, pool_worker, (void *)(intptr_t)(pool_workers + 1)) == 0;
        pthread_attr_destroy(&attr);
        if (!ok) break;
        pool_workers++;
    }
    have = pool_workers + 1 < n ? pool_workers + 1 : n; /* parts [0, have) on threads, the rest here */
    pthread_mutex_lock(&pool_m);
    pool_fn = fn;
    pool_ctx = ctx;
    pool_n = have;
    pool_total = n;
    pool_pending = have - 1;
    __atomic_store_n(&pool_gen, pool_gen + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool_work);
    pthread_mutex_unlock(&pool_m);
    fn(ctx, 0, n);
    for (t = have; t < n; t++) fn(ctx, t, n);
    pthread_mutex_lock(&pool_m);
    while (pool_pending > 0) pthread_cond_wait(&pool_done, &pool_m);
    pthread_mutex_unlock(&pool_m);
    pthread_mutex_unlock(&pool_busy);
}
#endif
