/* NON_MAX_SUPPRESSION_V4 / V5 as LiteRT's reference kernel (TFLM has none; edge_sdk/runtime/kernels/nms.py,
 * which says the algorithm and its tie rules): inputs (boxes [N, 4] y1 x1 y2 x2 FLOAT32, scores [N] FLOAT32,
 * max_output_size INT32, iou_threshold FLOAT32, score_threshold FLOAT32 [, soft_nms_sigma FLOAT32 for V5]),
 * max_output_size constant (>= 0: it sizes the outputs), each threshold constant (checked in prepare: 0 <= iou <= 1,
 * sigma >= 0) or computed at run time (read at eval, unchecked, as LiteRT reads it); outputs V4
 * (selected_indices INT32 [max_output_size], valid_outputs INT32 scalar), V5 (selected_indices,
 * selected_scores FLOAT32 [max_output_size], valid_outputs); slots past the count are 0.
 * The candidates' max-priority queue lives in scratch (N entries) and moves elements as libstdc++'s
 * push_heap / pop_heap do, so equal scores come out in LiteRT's order; the selected indices are kept in the
 * output itself. IoU and the soft-NMS decay in float32 as LiteRT (expf). As LiteRT, a selected candidate goes
 * back into the queue too (it is suppressed by itself when popped again, except a box with no area: LiteRT
 * selects that one repeatedly, and so does this kernel).
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint.h"

EDGE_KERNEL(NON_MAX_SUPPRESSION_V4, non_max_suppression_v4, 1, "FLOAT32", "boxes [N,4], scores [N]; constant max_output_size")
EDGE_KERNEL(NON_MAX_SUPPRESSION_V5, non_max_suppression_v5, 1, "FLOAT32", "boxes [N,4], scores [N]; constant max_output_size")

typedef struct {
    float score;
    int32_t index, begin;
} nms_cand_t;

typedef struct {
    int32_t n, max_output, soft, heap;
    float iou, score, sigma;
    int32_t at_eval; /* bit k - 3: threshold input k (3 iou, 4 score, 5 sigma) is read at eval (computed from data) */
} nms_data_t;

static int nms_scalar(const edge_tensor_t *t, int32_t type) {
    return t && t->type == type && t->is_const && edge_tensor_elements(t) == 1;
}

/* One FLOAT32 value, a constant or computed at run time (LiteRT reads the thresholds at eval). */
static int nms_threshold(const edge_tensor_t *t) {
    return t && t->type == EDGE_FLOAT32 && edge_tensor_elements(t) == 1;
}

/* Threshold input k's value: the constant prepare read, or (bit k - 3 of at_eval) the tensor's value now. */
static float nms_value(const edge_node_t *node, edge_ctx_t *ctx, const nms_data_t *d, int32_t k, float prepared) {
    return (d->at_eval >> (k - 3)) & 1 ? *(const float *)edge_in(ctx, node, k)->data : prepared;
}

static edge_status_t nms_prepare(edge_node_t *node, edge_ctx_t *ctx, int soft) {
    const edge_tensor_t *boxes, *scores, *mo, *iou, *st, *sg;
    nms_data_t *d;
    int32_t dims[1];
    edge_status_t s;
    const int32_t n_in = soft ? 6 : 5, n_out = soft ? 3 : 2;
    if (node->n_inputs != n_in || node->n_outputs != n_out)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, soft ? "NON_MAX_SUPPRESSION_V5 expects 6 inputs and 3 outputs"
                                                  : "NON_MAX_SUPPRESSION_V4 expects 5 inputs and 2 outputs");
    boxes = edge_in(ctx, node, 0);
    scores = edge_in(ctx, node, 1);
    mo = edge_in(ctx, node, 2);
    iou = edge_in(ctx, node, 3);
    st = edge_in(ctx, node, 4);
    sg = soft ? edge_in(ctx, node, 5) : 0;
    if (!boxes || !scores) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "NMS: boxes and scores are required");
    if (boxes->type != EDGE_FLOAT32 || scores->type != EDGE_FLOAT32)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "NMS: boxes and scores must be FLOAT32");
    if ((s = edge_type_built(ctx, boxes->type)) != EDGE_OK) return s;
    if (boxes->rank != 2 || boxes->dims[1] != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "NMS: boxes must be [num_boxes, 4]");
    if (scores->rank != 1 || scores->dims[0] != boxes->dims[0])
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "NMS: scores must hold one value per box");
    /* prepare reads them (the output size is max_output_size): a constant or a value known at prepare only */
    if (!nms_scalar(mo, EDGE_INT32))
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED, "NMS: input 2 max_output_size must be one INT32 constant or value known at prepare, not computed at run time from data (the output size follows it)");
    if (!nms_threshold(iou) || !nms_threshold(st) || (soft && !nms_threshold(sg)))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "NMS: iou_threshold, score_threshold (and soft_nms_sigma) must each be one FLOAT32 value");
    if (edge_out(ctx, node, 0)->type != EDGE_INT32 || edge_out(ctx, node, n_out - 1)->type != EDGE_INT32 ||
        (soft && edge_out(ctx, node, 1)->type != EDGE_FLOAT32))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "NMS: outputs are INT32 indices, [FLOAT32 scores,] an INT32 count");
    d = (nms_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->n = boxes->dims[0];
    d->max_output = *(const int32_t *)mo->data;
    /* a threshold computed from data is read at eval, unchecked (LiteRT's); a constant one is checked here */
    d->at_eval = (iou->is_const ? 0 : 1) | (st->is_const ? 0 : 2) | (soft && !sg->is_const ? 4 : 0);
    d->iou = iou->is_const ? *(const float *)iou->data : 0.0f;
    d->score = st->is_const ? *(const float *)st->data : 0.0f;
    d->sigma = soft && sg->is_const ? *(const float *)sg->data : 0.0f;
    d->soft = soft;
    if (d->max_output < 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "NMS: max_output_size is negative");
    if (!(d->iou >= 0.0f && d->iou <= 1.0f)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "NMS: iou_threshold not within [0, 1]");
    if (!(d->sigma >= 0.0f)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "NMS: soft_nms_sigma is negative");
    d->heap = -1;
    if (d->n > 0 && (s = edge_request_scratch(ctx, node, sizeof(nms_cand_t) * (size_t)d->n, &d->heap)) != EDGE_OK)
        return s;
    dims[0] = d->max_output;
    if ((s = edge_set_output_shape(ctx, node, 0, dims, 1)) != EDGE_OK) return s;
    if (soft && (s = edge_set_output_shape(ctx, node, 1, dims, 1)) != EDGE_OK) return s;
    return edge_set_output_shape(ctx, node, n_out - 1, dims, 0);
}

edge_status_t edge_prepare_non_max_suppression_v4(edge_node_t *node, edge_ctx_t *ctx) { return nms_prepare(node, ctx, 0); }
edge_status_t edge_prepare_non_max_suppression_v5(edge_node_t *node, edge_ctx_t *ctx) { return nms_prepare(node, ctx, 1); }

/* libstdc++'s __push_heap: value into the hole, moving parents with a lower score down. */
static void nms_push_up(nms_cand_t *a, int32_t hole, nms_cand_t value) {
    int32_t parent = (hole - 1) / 2;
    while (hole > 0 && a[parent].score < value.score) {
        a[hole] = a[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    a[hole] = value;
}

/* pop_heap on [0, len): the top out, the heap [0, len - 1) rebuilt as __adjust_heap does. */
static nms_cand_t nms_pop(nms_cand_t *a, int32_t len) {
    const nms_cand_t top = a[0];
    const int32_t n = len - 1;
    if (n > 0) {
        const nms_cand_t value = a[n];
        int32_t hole = 0, second = 0;
        while (second < (n - 1) / 2) {
            second = 2 * (second + 1);
            if (a[second].score < a[second - 1].score) second--;
            a[hole] = a[second];
            hole = second;
        }
        if ((n & 1) == 0 && second == (n - 2) / 2) {
            second = 2 * (second + 1);
            a[hole] = a[second - 1];
            hole = second - 1;
        }
        nms_push_up(a, hole, value);
    }
    return top;
}

static float nms_iou(const float *b, int32_t i, int32_t j) {
    const float *p = b + 4 * (int64_t)i, *q = b + 4 * (int64_t)j;
    const float iy0 = p[0] < p[2] ? p[0] : p[2], iy1 = p[0] < p[2] ? p[2] : p[0];
    const float ix0 = p[1] < p[3] ? p[1] : p[3], ix1 = p[1] < p[3] ? p[3] : p[1];
    const float jy0 = q[0] < q[2] ? q[0] : q[2], jy1 = q[0] < q[2] ? q[2] : q[0];
    const float jx0 = q[1] < q[3] ? q[1] : q[3], jx1 = q[1] < q[3] ? q[3] : q[1];
    const float ai = (iy1 - iy0) * (ix1 - ix0), aj = (jy1 - jy0) * (jx1 - jx0);
    float h, w, inter, uni;
    if (ai <= 0.0f || aj <= 0.0f) return 0.0f;
    h = (iy1 < jy1 ? iy1 : jy1) - (iy0 > jy0 ? iy0 : jy0);
    w = (ix1 < jx1 ? ix1 : jx1) - (ix0 > jx0 ? ix0 : jx0);
    if (h < 0.0f) h = 0.0f; /* std::max<float>(h, 0): a NaN stays */
    if (w < 0.0f) w = 0.0f;
    inter = h * w;
    uni = ai + aj;
    uni = uni - inter;
    return inter / uni;
}

static void nms_eval(const edge_node_t *node, edge_ctx_t *ctx) {
    const nms_data_t *d = (const nms_data_t *)node->user_data;
    const float *boxes = (const float *)edge_in(ctx, node, 0)->data;
    const float *scores = (const float *)edge_in(ctx, node, 1)->data;
    int32_t *sel = (int32_t *)edge_out(ctx, node, 0)->data;
    float *picked = d->soft ? (float *)edge_out(ctx, node, 1)->data : 0;
    int32_t *count = (int32_t *)edge_out(ctx, node, d->soft ? 2 : 1)->data;
    nms_cand_t *heap = d->heap >= 0 ? (nms_cand_t *)edge_scratch(ctx, node, d->heap) : 0;
    int32_t len = 0, n_sel = 0, i, j, n_out;
    const float iou_t = nms_value(node, ctx, d, 3, d->iou), score_t = nms_value(node, ctx, d, 4, d->score);
    const float sigma = d->soft ? nms_value(node, ctx, d, 5, d->sigma) : 0.0f;
    const float scale = sigma > 0.0f ? (float)(-0.5 / (double)sigma) : 0.0f;
    if (!EDGE_WITH_FLOAT32) return;
    for (i = 0; i < d->max_output; i++) {
        sel[i] = 0;
        if (picked) picked[i] = 0.0f;
    }
    for (i = 0; i < d->n; i++) {
        if (scores[i] > score_t) {
            nms_cand_t c;
            c.score = scores[i];
            c.index = i;
            c.begin = 0;
            nms_push_up(heap, len++, c);
        }
    }
    n_out = len < d->max_output ? len : d->max_output;
    while (n_sel < n_out && len > 0) {
        nms_cand_t c = nms_pop(heap, len--);
        const float original = c.score;
        int hard = 0;
        for (j = n_sel - 1; j >= c.begin; j--) {
            const float o = nms_iou(boxes, c.index, sel[j]);
            if (o >= iou_t) {
                hard = 1;
                break;
            }
            if (sigma > 0.0f) {
                const float e = scale * o * o;
                c.score = c.score * expf(e);
            }
            if (c.score <= score_t) break;
        }
        c.begin = n_sel;
        if (!hard) {
            if (c.score == original) {
                sel[n_sel] = c.index;
                if (picked) picked[n_sel] = c.score;
                n_sel++;
            }
            if (c.score > score_t) nms_push_up(heap, len++, c);
        }
    }
    *count = n_sel;
}

void edge_eval_non_max_suppression_v4(const edge_node_t *node, edge_ctx_t *ctx) { nms_eval(node, ctx); }
void edge_eval_non_max_suppression_v5(const edge_node_t *node, edge_ctx_t *ctx) { nms_eval(node, ctx); }
