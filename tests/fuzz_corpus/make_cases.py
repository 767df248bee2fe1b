"""Rebuild the writer-made regression models of tests/fuzz_corpus/ (each reproduces one fuzzer finding with
our own writer, not with a mutated ../shared model):

    .venv/bin/python tests/fuzz_corpus/make_cases.py

conv16-int64-bias-4-aligned.tflite  int16x8 CONV_2D whose INT64 bias data starts at 4 mod 8 in the file (legal:
                                    flatbuffer vectors are 4-aligned; TFLM's seanet models do it). The kernels
                                    read int64_t: misaligned load (UBSan). Fix: edge.c gives such constants an
                                    8-aligned persistent copy.
refused-shape-product-overflow.tflite  ADD whose tensors are 2^20 x 2^20 x (2^31 - 1): the element count
                                    passed the 2^40 cap check only after multiplying, so the next dimension
                                    overflowed int64 (UBSan). Fix: edge.c checks before multiplying. The model
                                    must be refused (files named refused-* are expected to fail to load).
refused-broadcast-count-overflow.tflite  SUB of [917508, 1048576, 790888448, 0] and [64]: the 0 makes the first
                                    input 0 bytes, so the loader takes it; the broadcast's element count
                                    overflowed int64 in ea_bcast_prepare at the third dim (UBSan; a bounded fuzz
                                    session's finding in session 3). Fix: the count is checked against 2^40
                                    before each multiply (EDGE_LIMIT).
refused-concat-reads-own-output.tflite  CONCATENATION of the model input and its own output tensor (the bounded fuzz
                                    session's finding in session 4): the C loader did not check the dataflow the
                                    interpreter checks (use before write, two writers), so the plan put the input
                                    over the output and the kernel's memcpy overlapped (ASan). Fix: edge.c's
                                    check_writers refuses it before planning, as the interpreter does.
conv16-huge-output-ratio.tflite     int16x8 CONV_2D whose input*weight/output scale is 2^20: shift 21, so the
                                    16x8 requantization's rounding shift 15 - shift is negative (shift by a
                                    negative count, UBSan). Fix: edge_mbqm64 shifts left for shift > 14.
tconv16-int64-bias-near-min.tflite  int16x8 TRANSPOSE_CONV whose INT64 bias is INT64_MIN + small (and, on one
conv16-int64-bias-near-min.tflite   channel, INT64_MAX - small); the same for CONV_2D and DEPTHWISE_CONV_2D.
dwconv16-int64-bias-near-min.tflite With the harness's inputs (edge-run-c --fuzz fills them exactly as
                                    fuzz_edge.c does, fuzz/edge_fuzz_inputs.h) a negative accumulator plus the
                                    bias overflowed int64 (UBSan: signed integer overflow in tc_int16, the CI
                                    fuzz session's finding). Zero inputs do not trigger it. Fix: the int16
                                    kernels add the bias wrapping (edge_conv_add64).
refused-lstm-negative-cell-scale.tflite  int8 UNIDIRECTIONAL_SEQUENCE_LSTM whose cell state (input 19) has a negative scale
                                    (session 15's CI fuzz finding): prepare took round(log2(scale)) and cast
                                    log2 of it (NaN) to int (UBSan). Fix: the kernel refuses a cell scale that is not a
                                    positive finite number.
refused-lstm-zero-cell-scale.tflite  the same op, INT8 with layer normalization, cell state scale 0 (session 18's fuzz
                                    finding): edge_lstm_int8_prepare's ea_checked_log2 cast log2(0) = -inf to int
                                    (UBSan). Fix: ea_checked_log2 answers "not a power of two" for a scale that is not
                                    positive and finite (Python: the same in the integer LSTM's checked log2).
refused-lstm-basic-units-overflow.tflite  a quantized basic LSTM of 805306376 units (session 18's fuzz finding): prepare
                                    compared the weights' rows with 4 * units in int32 (UBSan: signed overflow in
                                    lstm.c). Fix: the shape checks multiply in int64.
add-zero-size-wide-dims.tflite      ADD of two [0, 2049, 8388609] tensors (session 18's fuzz finding): zero elements
                                    passed the broadcast's 2^40 cap, then coalescing the loop merged 2049 x 8388609
                                    in int32 (UBSan). Fix: ea_bcast_prepare merges dims only while the product fits.
refused-tconv-huge-stride.tflite    TRANSPOSE_CONV of a 3 x 3 input with stride_h 2130706433 (session 18's fuzz
                                    finding): the scatter's iy * stride overflowed int32 (UBSan). Fix: prepare
                                    refuses strides whose h * stride leaves int32.
refused-tile-multiple-overflow.tflite  TILE of a [2, 3] tensor by multiples [2^62, 1] (INT64): prepare multiplied the
                                    multiple by the dim before checking it (UBSan: signed integer overflow in
                                    tile.c, the bounded fuzz session's finding once IF / WHILE seeds joined the
                                    corpus). Fix: the multiple and each factor are checked before multiplying.
split-empty-rows.tflite             SPLIT along an empty axis of a [67108866, 0] INT8 tensor: no bytes, but eval looped
                                    over 67 M rows of empty copies (a libFuzzer timeout under ASan, same session).
                                    Fix: split.c skips the loop when a row holds no bytes.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from edge_sdk.model import writer as W  # noqa: E402
from tests.oprunner import T, op_model, op_model_object  # noqa: E402

BIAS = np.array([1234567, -7654321, 55555], np.int64)


def _conv16(out_scale: float, rng) -> bytes:
    x = T((1, 3, 3, 2), "INT16", scale=0.002, zero_point=0)
    w = T((3, 2, 2, 2), "INT8", scale=[0.01, 0.02, 0.03], zero_point=0,
          data=rng.integers(-127, 128, (3, 2, 2, 2)).astype(np.int8))
    b = T((3,), "INT64", scale=[2e-5, 4e-5, 6e-5], zero_point=0, data=BIAS)
    y = T((1, 2, 2, 3), "INT16", scale=out_scale, zero_point=0)
    return op_model("CONV_2D", [x, w, b], [y], options=dict(padding="VALID", stride_w=1, stride_h=1), version=4)


def misaligned_bias() -> bytes:
    orig = W._Writer.bytes_vector

    def bytes_vector(self, data, alignment):
        if bytes(data) != BIAS.tobytes():
            return orig(self, data, alignment)
        n, b = len(data), self.b
        b.StartVector(1, n, 16)  # the data would start 16-aligned ...
        b.Pad(4)                 # ... 4 bytes after it instead: it starts at 12 mod 16
        b.Prep(4, n)
        b.head = b.head - n
        b.Bytes[b.head:b.head + n] = data
        return b.EndVector()

    W._Writer.bytes_vector = bytes_vector
    try:
        model = _conv16(0.01, np.random.default_rng(3))
    finally:
        W._Writer.bytes_vector = orig
    assert model.find(BIAS.tobytes()) % 8 == 4
    return model


def huge_ratio() -> bytes:
    # 0.002 * 0.01 / out = 2^20  ->  out = 2e-5 / 2^20
    return _conv16(2e-5 / (1 << 20), np.random.default_rng(4))


def shape_product_overflow() -> bytes:
    shape = (1 << 20, 1 << 20, (1 << 31) - 1)
    a, b, y = T(shape, "FLOAT32"), T(shape, "FLOAT32"), T(shape, "FLOAT32")
    return op_model("ADD", [a, b], [y])


def broadcast_count_overflow() -> bytes:
    # the fuzzer's case, rebuilt: a 0 in the last dim makes the first input 0 bytes, so its other dims pass
    a, b = T((917508, 1048576, 790888448, 0), "FLOAT32"), T((64,), "FLOAT32")
    return op_model("SUB", [a, b], [T((1, 2, 12, 64), "FLOAT32")])


def concat_reads_own_output() -> bytes:
    # the fuzzer's case, rebuilt: node 0's second input is its own output (the second model input goes unused)
    a, b = T((1, 2, 3), "INT8", 0.05, 3), T((1, 2, 2), "INT8", 0.05, 3)
    y = T((1, 2, 5), "INT8", 0.05, 3)
    model = op_model_object("CONCATENATION", [a, b], [y], options={"axis": 2})
    op = model.subgraphs[0].operators[0]
    op.inputs = [op.inputs[0], op.outputs[0]]
    return W.write_model(model)


def _bias_near_min(op: str, rng) -> bytes:
    lim = np.iinfo(np.int64)
    bias = np.array([lim.min + 5, lim.min + 1000, lim.max - 5], np.int64)
    b = T((3,), "INT64", scale=[2e-5, 4e-5, 6e-5], zero_point=0, data=bias)
    x = T((1, 3, 3, 3), "INT16", scale=0.002, zero_point=0)
    y = T((1, 3, 3, 3), "INT16", scale=0.01, zero_point=0)
    opts = dict(padding="SAME", stride_w=1, stride_h=1)
    if op == "TRANSPOSE_CONV":
        shape = T((4,), "INT32", data=np.array([1, 3, 3, 3], np.int32))
        w = T((3, 2, 2, 3), "INT8", scale=[0.01, 0.02, 0.03], zero_point=0,
              data=rng.integers(-127, 128, (3, 2, 2, 3)).astype(np.int8))
        return op_model(op, [shape, w, x, b], [y], options=opts, version=3)
    dw = op == "DEPTHWISE_CONV_2D"
    wshape = (1, 2, 2, 3) if dw else (3, 2, 2, 3)
    w = T(wshape, "INT8", scale=[0.01, 0.02, 0.03], zero_point=0, quantized_dimension=3 if dw else 0,
          data=rng.integers(-127, 128, wshape).astype(np.int8))
    if dw:
        opts["depth_multiplier"] = 1
    return op_model(op, [x, w, b], [y], options=opts, version=3)


def tile_multiple_overflow() -> bytes:
    x = T((2, 3), "FLOAT32")
    multiples = T((2,), "INT64", data=np.array([1 << 62, 1], np.int64))
    return op_model("TILE", [x, multiples], [T((4, 3), "FLOAT32")])


def split_empty_rows() -> bytes:
    axis = T((), "INT32", data=np.array(1, np.int32))
    x = T((67108866, 0), "INT8", scale=0.5, zero_point=0)
    ys = [T((67108866, 0), "INT8", scale=0.5, zero_point=0) for _ in range(2)]
    return op_model("SPLIT", [axis, x], ys, options={"num_splits": 2})


def tconv_bias_near_min() -> bytes:
    return _bias_near_min("TRANSPOSE_CONV", np.random.default_rng(5))


def conv_bias_near_min() -> bytes:
    return _bias_near_min("CONV_2D", np.random.default_rng(6))


def dwconv_bias_near_min() -> bytes:
    return _bias_near_min("DEPTHWISE_CONV_2D", np.random.default_rng(7))


def lstm_negative_cell_scale() -> bytes:
    from tests.test_ops_sequence import _lstm_specs

    ins, outs = _lstm_specs(np.random.default_rng(11), "INT8", cell_scale=-(2.0**-11))  # logf(negative) = NaN
    opts = {"fused_activation_function": "TANH", "cell_clip": 0.0, "time_major": False}
    return op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, options=opts)


def lstm_zero_cell_scale() -> bytes:
    from tests.test_lstm_integer import int8_lstm_model

    return int8_lstm_model(3, True, 0.0, sequence=(4, False), cell_scale=0.0)  # log(0) = -inf


def lstm_basic_units_overflow() -> bytes:
    """A quantized basic LSTM whose activation has 805306376 units: 4 * units overflowed int32 in prepare."""
    from edge_sdk.model.writer import write_model
    from tests.oprunner import T, op_model_object

    s = 805306376
    ins = [T((1, 2), "UINT8", 1 / 128, 128), T((1, s), "UINT8", 1 / 128, 128), T((5, 5), "UINT8", 0.02, 131),
           T((5,), "INT32", 0.02 / 128, 0), T((1, s), "INT16", 2.0**-11, 0)]
    outs = [T((1, s), "UINT8", 1 / 128, 128), T((1, s), "INT16", 2.0**-11, 0), T((1, 2 + s), "UINT8", 1 / 128, 128),
            T((1, 5), "INT16", 2.0**-12, 0)]
    return write_model(op_model_object("LSTM", ins, outs, {"fused_activation_function": "TANH", "kernel_type": "BASIC"},
                                       version=2))


def add_zero_size_wide_dims() -> bytes:
    """ADD of two [0, 2049, 8388609] FLOAT32 tensors: zero elements, dims whose product passes int32."""
    shape = (0, 2049, 8388609)
    return op_model("ADD", [T(shape, "FLOAT32"), T(shape, "FLOAT32")], [T(shape, "FLOAT32")])


def tconv_huge_stride() -> bytes:
    """A float TRANSPOSE_CONV of a 3 x 3 input with stride_h 2130706433 (into a 4 x 4 output)."""
    w = T((1, 2, 2, 1), "FLOAT32", data=np.ones((1, 2, 2, 1), np.float32))
    shape = T((4,), "INT32", data=np.array([1, 4, 4, 1], np.int32))
    return op_model("TRANSPOSE_CONV", [shape, w, T((1, 3, 3, 1), "FLOAT32")], [T((1, 4, 4, 1), "FLOAT32")],
                    options={"padding": "SAME", "stride_h": 2130706433, "stride_w": 1})


CASES = {"conv16-int64-bias-4-aligned.tflite": misaligned_bias, "conv16-huge-output-ratio.tflite": huge_ratio,
         "refused-shape-product-overflow.tflite": shape_product_overflow,
         "refused-broadcast-count-overflow.tflite": broadcast_count_overflow,
         "refused-concat-reads-own-output.tflite": concat_reads_own_output,
         "tconv16-int64-bias-near-min.tflite": tconv_bias_near_min,
         "conv16-int64-bias-near-min.tflite": conv_bias_near_min,
         "dwconv16-int64-bias-near-min.tflite": dwconv_bias_near_min,
         "refused-tile-multiple-overflow.tflite": tile_multiple_overflow,
         "split-empty-rows.tflite": split_empty_rows,
         "refused-lstm-negative-cell-scale.tflite": lstm_negative_cell_scale,
         "refused-lstm-zero-cell-scale.tflite": lstm_zero_cell_scale,
         "refused-lstm-basic-units-overflow.tflite": lstm_basic_units_overflow,
         "add-zero-size-wide-dims.tflite": add_zero_size_wide_dims,
         "refused-tconv-huge-stride.tflite": tconv_huge_stride}

if __name__ == "__main__":
    for name, fn in CASES.items():
        (HERE / name).write_bytes(fn())
        print(name)
