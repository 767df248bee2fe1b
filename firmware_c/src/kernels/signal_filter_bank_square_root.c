/* SignalFilterBankSquareRoot (TFLM signal library): y = sqrt(x) rounded, >> scale_bits, uint64 -> uint32.
 *
 * As edge_sdk/runtime/kernels/signal.py prepare_filter_bank_square_root (TFLM signal/src/square_root_64.cc,
 * square_root_32.cc): values below 2^32 take the 32-bit routine, whose result is capped at 0xffff (so its
 * rounding stops there), larger ones the 64-bit routine (capped at 0xffffffff); both are the bit-by-bit
 * integer square root followed by rounding up when the remainder exceeds the root. The root is shifted right
 * by the INT32 scalar input 1 taken as a 0..31 count (its low five bits, as the x86 build of TFLM shifts).
 * Input 0 is a 1-D UINT64 vector, the output UINT32 of the same length. No options.
 */
#include <string.h>

#include "edge_kernel.h"

EDGE_CUSTOM_KERNEL("SignalFilterBankSquareRoot", signal_filter_bank_square_root, 1, "UINT64", "UINT32 output")

edge_status_t edge_prepare_signal_filter_bank_square_root(edge_node_t *node, edge_ctx_t *ctx) {
    edge_tensor_t *x, *bits, *y;
    if (node->n_inputs != 2 || node->n_outputs != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankSquareRoot expects 2 inputs and 1 output");
    x = edge_in(ctx, node, 0);
    bits = edge_in(ctx, node, 1);
    y = edge_out(ctx, node, 0);
    if (!x || !bits) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankSquareRoot: both inputs are required");
    if (x->type != EDGE_UINT64) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFilterBankSquareRoot: input must be UINT64");
    if (bits->type != EDGE_INT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFilterBankSquareRoot: scale bits must be INT32");
    if (y->type != EDGE_UINT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "SignalFilterBankSquareRoot: output must be UINT32");
    if (x->rank != 1) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankSquareRoot: input must be 1-D");
    if (bits->rank != 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "SignalFilterBankSquareRoot: scale bits must be a scalar");
    return edge_set_output_shape(ctx, node, 0, x->dims, 1);
}

/* Bit-by-bit square root of num (< 2^(2 * half_bits)), rounded up when the remainder exceeds the root and the
 * root is below cap. */
static uint32_t sbsr_sqrt(uint64_t num, uint32_t total_bits, uint64_t cap) {
    uint64_t res = 0, bit;
    uint32_t msb = 0, top;
    int32_t steps;
    if (num == 0) return 0;
#if defined(__GNUC__)
    msb = 64u - (uint32_t)__builtin_clzll(num); /* one instruction (CLZ) instead of a loop over the bits */
#else
    {
        uint64_t m = num;
        while (m) {
            msb++;
            m >>= 1;
        }
    }
#endif
    top = (total_bits - msb) | 1u;        /* leading zeros, made odd */
    bit = (uint64_t)1 << (total_bits - 1 - top);
    steps = (int32_t)(total_bits - 1 - top) / 2 + 1;
    while (steps-- > 0) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    if (num > res && res != cap) res++;
    return (uint32_t)res;
}

void edge_eval_signal_filter_bank_square_root(const edge_node_t *node, edge_ctx_t *ctx) {
    const edge_tensor_t *xt = edge_in(ctx, node, 0);
    const uint8_t *x = (const uint8_t *)xt->data;
    uint32_t *y = (uint32_t *)edge_out(ctx, node, 0)->data;
    const int32_t n = xt->dims[0];
    int32_t i, bits;
    uint32_t shift;
    memcpy(&bits, edge_in(ctx, node, 1)->data, 4);
    shift = (uint32_t)bits & 31u;
    for (i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, x + 8 * (size_t)i, 8); /* a constant input may be only 4-aligned in the model */
        y[i] = (v >> 32 == 0 ? sbsr_sqrt(v, 32, 0xffffu) : sbsr_sqrt(v, 64, 0xffffffffu)) >> shift;
    }
}
