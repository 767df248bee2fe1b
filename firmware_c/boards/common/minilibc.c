/* minilibc.c - the four memory functions and strlen that GCC may call on its own (struct copies, zeroing
 * loops) and the runtime uses, so firmware links without newlib. A newlib link (-lc) is not disturbed:
 * object files win over archive members. */
#include <stddef.h>
#include <stdint.h>

/* Keep GCC from recognising these loops as memcpy/memset and calling the function being defined. */
#define MINILIBC_FN __attribute__((optimize("no-tree-loop-distribute-patterns")))

/* Word access that may alias any object type. */
typedef uint32_t __attribute__((may_alias)) minilibc_word_t;

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

MINILIBC_FN void *memcpy(void *dst, const void *src, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    if ((((uintptr_t)d | (uintptr_t)s) & 3u) == 0u) {
        while (n >= 4u) {
            *(minilibc_word_t *)(void *)d = *(const minilibc_word_t *)(const void *)s;
            d += 4;
            s += 4;
            n -= 4u;
        }
    }
    while (n--) {
        *d++ = *s++;
    }
    return dst;
}

MINILIBC_FN void *memmove(void *dst, const void *src, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    if (d == s || n == 0u) {
        return dst;
    }
    if (d < s || d >= s + n) {
        return memcpy(dst, src, n);
    }
    while (n--) {
        d[n] = s[n];
    }
    return dst;
}

MINILIBC_FN void *memset(void *dst, int c, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    uint32_t word = (uint8_t)c;
    word |= word << 8;
    word |= word << 16;
    while (n > 0u && ((uintptr_t)d & 3u) != 0u) {
        *d++ = (uint8_t)c;
        --n;
    }
    while (n >= 4u) {
        *(minilibc_word_t *)(void *)d = word;
        d += 4;
        n -= 4u;
    }
    while (n--) {
        *d++ = (uint8_t)c;
    }
    return dst;
}

MINILIBC_FN int memcmp(const void *a, const void *b, size_t n)
{
    const uint8_t *p = (const uint8_t *)a;
    const uint8_t *q = (const uint8_t *)b;
    size_t i;
    for (i = 0; i < n; ++i) {
        if (p[i] != q[i]) {
            return (int)p[i] - (int)q[i];
        }
    }
    return 0;
}

MINILIBC_FN size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n]) {
        ++n;
    }
    return n;
}
