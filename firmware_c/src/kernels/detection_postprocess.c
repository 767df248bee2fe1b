/* The custom op TFLite_Detection_PostProcess (SSD post-processing) as LiteRT's detection_postprocess.cc; the Python
 * twin edge_sdk/runtime/kernels/detection.py says the algorithm, its options and tie rules.
 *  inputs: box encodings [1, N, >= 4] FLOAT32 (anchors FLOAT32) or UINT8 (anchors UINT8; or INT8 with INT8
 *          anchors: a legacy uint8 model as edge_sdk/runtime/uint8.py presents it), class predictions
 *          [1, N, C_bg] FLOAT32 / UINT8 / INT8, anchors [N, 4] (h, w >= 0: every decoded box valid): a constant
 *          read once at prepare, else (a DEQUANTIZE the loader did not fold, an input) read at every invoke, as
 *          LiteRT reads them
 *  outputs (FLOAT32): boxes [1, D, 4], classes [1, D], scores [1, D], num_detections [1]; D = max_detections *
 *          max_classes_per_detection; slots nothing fills are 0.
 * Decoding in double (libm exp), rounded to float32 (in single precision on cores without a double FPU); IoU in
 * float32; candidates in LiteRT's stable order (a heap by score, ties in anchor order: dp_nms).
 * Scratch: decoded boxes, dequantized scores, one score column, the candidate heap, a merge buffer, the kept list.
 */
#include <math.h>
#include <string.h>

#include "edge_kernel.h"
#include "../edge_fixedpoint_act.h"
#include "../edge_flexbuffers.h"

EDGE_CUSTOM_KERNEL("TFLite_Detection_PostProcess", detection_postprocess, 1, "FLOAT32 UINT8 INT8", "scores FLOAT32/UINT8/INT8")

typedef struct {
    int32_t n, with_background, num_classes, label_offset, max_det, per_anchor, per_class, categories, regular;
    int32_t enc_width, enc_type, cls_type, enc_zp, cls_zp;
    float enc_scale, cls_scale, score_t, iou_t;
    float scale_y, scale_x, scale_h, scale_w;
    const float *anchors;     /* [N, 4] float32 (persistent: dequantized when UINT8); NULL: read at eval */
    int32_t anchor_buf;       /* scratch [N, 4] float32 for anchors read at eval */
    int32_t boxes, scores, column, order, tmp, selected, kept_score, kept_index, ranked;
} dp_data_t;

/* A number option (integer or float) as double; a missing key leaves *out (optional) or fails (required). */
static edge_status_t dp_number(edge_ctx_t *ctx, const efb_map_t *m, const char *key, double *out, int required) {
    efb_ref_t r;
    int64_t i;
    if (efb_map_find(m, key, &r) != EFB_OK)
        return required ? EDGE_FAIL(ctx, EDGE_BAD_NODE, "TFLite_Detection_PostProcess: a required custom option is missing") : EDGE_OK;
    if (efb_get_float(m, &r, out) == EFB_OK) return EDGE_OK;
    if (efb_get_int(m, &r, &i) == EFB_OK) {
        *out = (double)i;
        return EDGE_OK;
    }
    return EDGE_FAIL(ctx, EDGE_BAD_NODE, "TFLite_Detection_PostProcess: a custom option is not a number");
}

static int dp_int_ok(double v) { return v >= -2147483648.0 && v <= 2147483647.0; }

/* anchors [n, 4] as float32 into out ((q - zp) * scale when quantized); the first anchor with a negative (or NaN)
 * height or width (its element: 4 * anchor + 2 or 3), else -1. */
static int32_t dp_anchors(const edge_tensor_t *anc, int32_t n, float *out) {
    int32_t k;
    for (k = 0; k < 4 * n; k++)
        out[k] = anc->type == EDGE_UINT8  ? ((float)((const uint8_t *)anc->data)[k] - (float)anc->zero_point) * anc->scale
                 : anc->type == EDGE_INT8 ? ((float)((const int8_t *)anc->data)[k] - (float)anc->zero_point) * anc->scale
                                          : ((const float *)anc->data)[k];
    for (k = 0; k < n; k++) {
        if (!(out[4 * k + 2] >= 0.0f)) return 4 * k + 2;
        if (!(out[4 * k + 3] >= 0.0f)) return 4 * k + 3;
    }
    return -1;
}

edge_status_t edge_prepare_detection_postprocess(edge_node_t *node, edge_ctx_t *ctx) {
    static const char *const keys[] = {"max_detections", "max_classes_per_detection", "num_classes",
                                       "nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale",
                                       "w_scale"};
    const edge_tensor_t *enc, *cls, *anc;
    double v[9], per_class = 100.0, regular = 0.0;
    efb_map_t m;
    dp_data_t *d;
    float *anchors;
    int32_t dims[3], k, slots, n;
    edge_status_t s;
    if (node->n_inputs != 3 || node->n_outputs != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "expects 3 inputs and 4 outputs");
    enc = edge_in(ctx, node, 0);
    cls = edge_in(ctx, node, 1);
    anc = edge_in(ctx, node, 2);
    if (!enc || !cls || !anc) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "box encodings, class predictions and anchors are required");
    if ((s = efb_node_options(ctx, node, &m)) != EDGE_OK) return s;
    for (k = 0; k < 9; k++)
        if ((s = dp_number(ctx, &m, keys[k], &v[k], 1)) != EDGE_OK) return s;
    if ((s = dp_number(ctx, &m, "detections_per_class", &per_class, 0)) != EDGE_OK) return s;
    if ((s = dp_number(ctx, &m, "use_regular_nms", &regular, 0)) != EDGE_OK) return s;
    if (enc->type != EDGE_FLOAT32 && enc->type != EDGE_UINT8 && enc->type != EDGE_INT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "box encodings must be FLOAT32, UINT8 or INT8");
    if (cls->type != EDGE_FLOAT32 && cls->type != EDGE_UINT8 && cls->type != EDGE_INT8)
        return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "class predictions must be FLOAT32, UINT8 or INT8");
    if (anc->type != enc->type) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "anchors must have the box encodings' type");
    if (!EDGE_WITH_FLOAT32) return EDGE_FAIL(ctx, EDGE_UNSUPPORTED_TYPE, "FLOAT32 outputs: this build has no FLOAT32 kernels");
    if (enc->rank != 3 || enc->dims[0] != 1 || enc->dims[2] < 4)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "box encodings must be [1, num_boxes, >= 4]");
    n = enc->dims[1];
    if (cls->rank != 3 || cls->dims[0] != 1 || cls->dims[1] != n)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "class predictions must be [1, num_boxes, classes]");
    if (anc->rank != 2 || anc->dims[0] != n || anc->dims[1] != 4) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "anchors must be [num_boxes, 4]");
    for (k = 0; k < 3; k++)
        if (!dp_int_ok(v[k])) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "an integer option is outside int32");
    if (!dp_int_ok(per_class)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "detections_per_class is outside int32");
    d = (dp_data_t *)edge_alloc_persistent(ctx, sizeof *d);
    if (!d) return EDGE_ARENA_TOO_SMALL;
    node->user_data = d;
    d->n = n;
    d->max_det = (int32_t)v[0];
    d->per_anchor = (int32_t)v[1];
    d->num_classes = (int32_t)v[2];
    d->score_t = (float)v[3];
    d->iou_t = (float)v[4];
    d->scale_y = (float)v[5];
    d->scale_x = (float)v[6];
    d->scale_h = (float)v[7];
    d->scale_w = (float)v[8];
    d->per_class = (int32_t)per_class;
    d->regular = regular != 0.0;
    d->with_background = cls->dims[2];
    d->label_offset = d->with_background - d->num_classes;
    if (d->num_classes <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "num_classes must be positive");
    if (d->label_offset != 0 && d->label_offset != 1)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "class predictions must have num_classes (+ 1 background) columns");
    if (d->max_det < 0 || d->per_anchor < 0 || d->per_class < 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "max_detections, max_classes_per_detection, detections_per_class must be >= 0");
    if (!(d->iou_t > 0.0f && d->iou_t <= 1.0f)) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "nms_iou_threshold not within (0, 1]");
    if (d->per_class > d->max_det) d->per_class = d->max_det;
    if (d->regular && d->per_class <= 0)
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "regular NMS needs detections_per_class and max_detections above 0");
    if (!d->regular && d->per_anchor <= 0) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "fast NMS needs max_classes_per_detection above 0");
    if ((int64_t)d->max_det * d->per_anchor > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "max_detections * max_classes_per_detection overflows");
    if ((int64_t)n * d->with_background > 0x7fffffff) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "num_boxes * classes overflows");
    d->categories = d->per_anchor < d->num_classes ? d->per_anchor : d->num_classes;
    d->enc_width = enc->dims[2];
    d->enc_type = enc->type;
    d->cls_type = cls->type;
    if ((enc->type != EDGE_FLOAT32 && (!enc->quantized || !anc->quantized)) || (cls->type != EDGE_FLOAT32 && !cls->quantized))
        return EDGE_FAIL(ctx, EDGE_BAD_NODE, "quantized inputs need a scale and zero point");
    d->enc_scale = enc->scale;
    d->enc_zp = enc->zero_point;
    d->cls_scale = cls->scale;
    d->cls_zp = cls->zero_point;
    d->anchors = NULL;
    if (anc->is_const) {
        anchors = (float *)edge_alloc_persistent(ctx, sizeof(float) * 4 * (size_t)(n > 0 ? n : 1));
        if (!anchors) return EDGE_ARENA_TOO_SMALL;
        if (dp_anchors(anc, n, anchors) >= 0)
            return EDGE_FAIL(ctx, EDGE_BAD_NODE, "anchors have a negative (or NaN) height or width");
        d->anchors = anchors;
    }
    for (k = 0; k < 4; k++)
        if (edge_out(ctx, node, k)->type != EDGE_FLOAT32) return EDGE_FAIL(ctx, EDGE_BAD_NODE, "outputs must be FLOAT32");
    {
        const size_t nn = (size_t)(n > 0 ? n : 1), kept = 2 * (size_t)d->max_det + 1;
        if ((s = edge_request_scratch(ctx, node, sizeof(float) * 4 * nn, &d->boxes)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(float) * nn * (size_t)d->with_background, &d->scores)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(float) * nn, &d->column)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(int32_t) * nn, &d->order)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(int32_t) * (nn > kept ? nn : kept), &d->tmp)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(int32_t) * nn, &d->selected)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(float) * kept, &d->kept_score)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(int32_t) * kept, &d->kept_index)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(int32_t) * nn * (size_t)(d->categories > 0 ? d->categories : 1), &d->ranked)) != EDGE_OK ||
            (s = edge_request_scratch(ctx, node, sizeof(float) * 4 * (d->anchors ? 1 : nn), &d->anchor_buf)) != EDGE_OK)
            return s;
    }
    slots = d->max_det * d->per_anchor;
    dims[0] = 1;
    dims[1] = slots;
    dims[2] = 4;
    if ((s = edge_set_output_shape(ctx, node, 0, dims, 3)) != EDGE_OK) return s;
    if ((s = edge_set_output_shape(ctx, node, 1, dims, 2)) != EDGE_OK) return s;
    if ((s = edge_set_output_shape(ctx, node, 2, dims, 2)) != EDGE_OK) return s;
    dims[0] = 1;
    return edge_set_output_shape(ctx, node, 3, dims, 1);
}

/* a ranks before b: the higher score, on equal scores the lower anchor (LiteRT's stable sort's order) */
static int dp_before(const float *key, int32_t a, int32_t b) { return key[a] > key[b] || (key[a] == key[b] && a < b); }

/* Restores the max-heap heap[0..n) (dp_before first) below position at. */
static void dp_sift(int32_t *heap, int32_t n, int32_t at, const float *key) {
    for (;;) {
        int32_t best = at, t;
        const int32_t l = 2 * at + 1, r = l + 1;
        if (l < n && dp_before(key, heap[l], heap[best])) best = l;
        if (r < n && dp_before(key, heap[r], heap[best])) best = r;
        if (best == at) return;
        t = heap[at];
        heap[at] = heap[best];
        heap[best] = t;
        at = best;
    }
}

/* std::min / std::max, as LiteRT's IoU takes them: comparisons the compiler inlines (fminf / fmaxf are library
 * calls without -ffast-math) */
#define DP_MIN(a, b) ((b) < (a) ? (b) : (a))
#define DP_MAX(a, b) ((a) < (b) ? (b) : (a))

/* LiteRT's ComputeIntersectionOverUnion of a kept box bi and a candidate bj ((ymin, xmin, ymax, xmax); 0 when either
 * area is not positive), the same float operations in the same order. */
static float dp_iou(const float *bi, const float *bj) {
    const float area_i = (bi[2] - bi[0]) * (bi[3] - bi[1]), area_j = (bj[2] - bj[0]) * (bj[3] - bj[1]);
    float h, w, inter;
    if (area_i <= 0.0f || area_j <= 0.0f) return 0.0f;
    h = DP_MIN(bi[2], bj[2]) - DP_MAX(bi[0], bj[0]);
    w = DP_MIN(bi[3], bj[3]) - DP_MAX(bi[1], bj[1]);
    inter = DP_MAX(h, 0.0f) * DP_MAX(w, 0.0f);
    return inter / ((area_i + area_j) - inter);
}

/* LiteRT's single-class NMS over score[0..n): the selected anchors, best first, into sel; returns their count.
 * LiteRT sorts every candidate above the score threshold, then each selected box deactivates the later ones it
 * overlaps: a candidate is selected iff no box selected before it overlaps it by more than the IoU threshold. The
 * same selection, candidates taken best first from a heap (the sorted order) and each compared with the boxes
 * selected so far, stopping at limit: O(candidates + taken * (log candidates + limit)), not a full sort and
 * limit * candidates IoUs (regular NMS over 90 classes was 3x LiteRT's time on the host). */
static int32_t dp_nms(const dp_data_t *d, const float *boxes, const float *score, int32_t limit, int32_t *heap,
                      int32_t *sel) {
    int32_t kept = 0, count = 0, i, k;
    for (i = 0; i < d->n; i++)
        if (score[i] >= d->score_t) heap[kept++] = i;
    for (i = kept / 2 - 1; i >= 0; i--) dp_sift(heap, kept, i, score);
    while (kept > 0 && count < limit) {
        const int32_t candidate = heap[0];
        heap[0] = heap[--kept];
        dp_sift(heap, kept, 0, score);
        for (k = 0; k < count; k++)
            if (dp_iou(boxes + 4 * sel[k], boxes + 4 * candidate) > d->iou_t) break;
        if (k == count) sel[count++] = candidate;
    }
    return count;
}

void edge_eval_detection_postprocess(const edge_node_t *node, edge_ctx_t *ctx) {
    const dp_data_t *d = (const dp_data_t *)node->user_data;
    const edge_tensor_t *enc = edge_in(ctx, node, 0), *cls = edge_in(ctx, node, 1);
    float *boxes = (float *)edge_scratch(ctx, node, d->boxes), *scores = (float *)edge_scratch(ctx, node, d->scores);
    float *column = (float *)edge_scratch(ctx, node, d->column), *kept_score = (float *)edge_scratch(ctx, node, d->kept_score);
    int32_t *order = (int32_t *)edge_scratch(ctx, node, d->order), *tmp = (int32_t *)edge_scratch(ctx, node, d->tmp);
    int32_t *sel = (int32_t *)edge_scratch(ctx, node, d->selected), *kept_index = (int32_t *)edge_scratch(ctx, node, d->kept_index);
    int32_t *ranked = (int32_t *)edge_scratch(ctx, node, d->ranked);
    float *out_boxes = (float *)edge_out(ctx, node, 0)->data, *out_classes = (float *)edge_out(ctx, node, 1)->data;
    float *out_scores = (float *)edge_out(ctx, node, 2)->data, *out_count = (float *)edge_out(ctx, node, 3)->data;
    const int32_t n = d->n, cb = d->with_background, nc = d->num_classes, slots = d->max_det * d->per_anchor;
    int32_t i, c, k, count = 0;
    const float *anchors = d->anchors;
    if (!anchors) { /* anchors computed at run time: read now, as LiteRT reads them */
        float *buf = (float *)edge_scratch(ctx, node, d->anchor_buf);
        const int32_t bad = dp_anchors(edge_in(ctx, node, 2), n, buf);
        if (bad >= 0) {
            EDGE_EVAL_BAD_INPUT(ctx, node, 2, bad, -1, "anchors have a negative (or NaN) height or width");
            return;
        }
        anchors = buf;
    }
    /* decode: (y, x, h, w) against the anchors, in double (LiteRT's DecodeCenterSizeBoxes), in single precision on
     * cores without a double FPU (EDGE_FLOAT_MATH_SINGLE, edge_fixedpoint_act.h) */
    for (i = 0; i < n; i++) {
        float e[4];
        const float *a = anchors + 4 * i;
        float yc, xc, hh, hw;
        for (k = 0; k < 4; k++)
            e[k] = d->enc_type == EDGE_UINT8
                       ? ((float)((const uint8_t *)enc->data)[i * d->enc_width + k] - (float)d->enc_zp) * d->enc_scale
                   : d->enc_type == EDGE_INT8
                       ? ((float)((const int8_t *)enc->data)[i * d->enc_width + k] - (float)d->enc_zp) * d->enc_scale
                       : ((const float *)enc->data)[i * d->enc_width + k];
#if EDGE_FLOAT_MATH_SINGLE
        yc = e[0] / d->scale_y * a[2] + a[0];
        xc = e[1] / d->scale_x * a[3] + a[1];
        hh = 0.5f * expf(e[2] / d->scale_h) * a[2];
        hw = 0.5f * expf(e[3] / d->scale_w) * a[3];
#else
        yc = (float)((double)e[0] / (double)d->scale_y * (double)a[2] + (double)a[0]);
        xc = (float)((double)e[1] / (double)d->scale_x * (double)a[3] + (double)a[1]);
        hh = (float)(0.5 * exp((double)e[2] / (double)d->scale_h) * (double)a[2]);
        hw = (float)(0.5 * exp((double)e[3] / (double)d->scale_w) * (double)a[3]);
#endif
        boxes[4 * i + 0] = yc - hh;
        boxes[4 * i + 1] = xc - hw;
        boxes[4 * i + 2] = yc + hh;
        boxes[4 * i + 3] = xc + hw;
    }
    /* scores [N, C_bg] as float32: (q - zp) * scale rounded once: the exact product of a 9-bit integer and a 24-bit
     * float has 33 bits, so the float multiply rounds it as the double one did, without soft double on an M4 */
    if (d->cls_type == EDGE_FLOAT32) {
        memcpy(scores, cls->data, sizeof(float) * (size_t)n * (size_t)cb);
    } else {
        for (i = 0; i < n * cb; i++) {
            const int32_t q = d->cls_type == EDGE_UINT8 ? ((const uint8_t *)cls->data)[i] : ((const int8_t *)cls->data)[i];
            scores[i] = (float)(q - d->cls_zp) * d->cls_scale;
        }
    }
    memset(out_boxes, 0, sizeof(float) * 4 * (size_t)slots);
    memset(out_classes, 0, sizeof(float) * (size_t)slots);
    memset(out_scores, 0, sizeof(float) * (size_t)slots);
    if (!d->regular) {
        int32_t selected;
        /* each anchor's top classes (ties: the lower class), its best score. A NaN score ranks below every number
         * (-inf too), NaNs in class order: an anchor's best score is its best number (LiteRT's choice with one class
         * per detection, measured), a row of NaNs is no candidate, and with max_classes_per_detection > 1 (where
         * LiteRT's order is undefined) NaN classes fill a detection's last slots, their scores NaN (kernels/
         * detection.py: the same order) */
        for (i = 0; i < n; i++) {
            const float *row = scores + i * cb + d->label_offset;
            int32_t *r = ranked + i * d->categories;
            for (k = 0; k < d->categories; k++) {
                int32_t best = -1, j;
                for (c = 0; c < nc; c++) {
                    for (j = 0; j < k && r[j] != c; j++) {
                    }
                    if (j < k) continue; /* already ranked */
                    if (best < 0 || row[c] > row[best] || (row[best] != row[best] && row[c] == row[c])) best = c;
                }
                r[k] = best;
            }
            column[i] = row[r[0]];
        }
        selected = dp_nms(d, boxes, column, d->max_det, order, sel);
        for (i = 0; i < selected; i++) {
            const int32_t a = sel[i];
            for (k = 0; k < d->categories; k++) {
                const int32_t slot = i * d->per_anchor + k, cl = ranked[a * d->categories + k];
                memcpy(out_boxes + 4 * slot, boxes + 4 * a, sizeof(float) * 4);
                out_classes[slot] = (float)cl;
                out_scores[slot] = scores[a * cb + d->label_offset + cl];
            }
        }
        out_count[0] = (float)selected;
        return;
    }
    for (c = 0; c < nc; c++) { /* per class NMS, merged into the kept list by descending score */
        int32_t got, a = 0, b = 0, m = 0;
        for (i = 0; i < n; i++) column[i] = scores[i * cb + c + d->label_offset];
        got = dp_nms(d, boxes, column, d->per_class, order, sel);
        if (got == 0) continue;
        /* merge kept[0..count) with this class's selection (stable: kept first on ties) through the tail */
        for (m = 0; m < count + got && m < d->max_det; m++) {
            const int take_new = b < got && (a >= count || column[sel[b]] > kept_score[a]);
            if (take_new) {
                tmp[m] = -1 - b;
                b++;
            } else {
                tmp[m] = a;
                a++;
            }
        }
        /* apply the merge order (tmp: >= 0 an old entry, < 0 a new one) from a copy of the old list */
        {
            float *old_score = kept_score + d->max_det; /* room for max_det + 1 after the kept list */
            int32_t *old_index = kept_index + d->max_det;
            memcpy(old_score, kept_score, sizeof(float) * (size_t)count);
            memcpy(old_index, kept_index, sizeof(int32_t) * (size_t)count);
            for (i = 0; i < m; i++) {
                if (tmp[i] >= 0) {
                    kept_score[i] = old_score[tmp[i]];
                    kept_index[i] = old_index[tmp[i]];
                } else {
                    const int32_t s = sel[-1 - tmp[i]];
                    kept_score[i] = column[s];
                    kept_index[i] = s * nc + c; /* anchor * num_classes + class */
                }
            }
        }
        count = m;
    }
    for (i = 0; i < count; i++) {
        const int32_t a = kept_index[i] / nc, cl = kept_index[i] % nc;
        memcpy(out_boxes + 4 * i, boxes + 4 * a, sizeof(float) * 4);
        out_classes[i] = (float)cl;
        out_scores[i] = kept_score[i];
    }
    out_count[0] = (float)count;
}
