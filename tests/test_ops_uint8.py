"""Legacy asymmetric UINT8 models (TFLite v1 "quantized_uint8": SSD MobileNet quant, MobileNet v1/v2 quant) in
both runtimes against LiteRT's reference kernels (TFLM has no uint8 kernels): one-op models with UINT8 tensors
(weights with their own zero point: LiteRT's filter offset), and a small SSD-like model (conv / depthwise / concat
/ reshape / logistic -> TFLite_Detection_PostProcess) end to end. Both runtimes run them as int8 with zero points
shifted by -128 (edge_sdk/runtime/uint8.py); results are LiteRT's bit for bit, but where ``TOLERANCE`` says why
not.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.runtime import uint8 as uint8_presentation
from edge_sdk.runtime.op_table import ROWS
from tests.oprunner import T, flex_options, op_model, peer_outputs, run_on

RNG = np.random.default_rng(811)

# op -> quanta LiteRT may differ by, and why
TOLERANCE = {
    # LiteRT's uint8 RESIZE_BILINEAR is its generic (float-weight) template, its int8 one ResizeBilinearInteger
    # (ours, as TFLM): the two round differently near ties
    "RESIZE_BILINEAR": 1,
    # LiteRT's uint8 CONCATENATION requantizes a part at another scale in float (ConcatenationWithScaling:
    # round(q * s_in / s_out - zp_in * s_in / s_out) + zp_out); the presentation requantizes it with an int8
    # QUANTIZE (integer multiplier), which may round a tie the other way. Parts at the output's scale are copied.
    "CONCATENATION": 1,
}


def _u8(shape, rng=RNG) -> np.ndarray:
    return rng.integers(0, 256, shape).astype(np.uint8)


def _x(shape, scale=0.05, zero_point=120):
    return T(shape, "UINT8", scale=scale, zero_point=zero_point)


def _weighted(op, in_shape, w_shape, out_shape, w_zero_point, **options):
    channels = w_shape[3] if op == "DEPTHWISE_CONV_2D" else w_shape[0]
    w = T(w_shape, "UINT8", scale=0.02, zero_point=w_zero_point, data=_u8(w_shape))
    b = T((channels,), "INT32", scale=0.05 * 0.02, zero_point=0,
          data=RNG.integers(-600, 600, channels).astype(np.int32))
    options = {"stride_w": 1, "stride_h": 1, **options}  # (the schema's default stride is 0)
    return op_model(op, [_x(in_shape), w, b], [_x(out_shape, 0.1, 128)], options=options), [_u8(in_shape)]


def _cases() -> dict:
    c = {
        "CONV_2D": _weighted("CONV_2D", (1, 7, 7, 3), (4, 3, 3, 3), (1, 7, 7, 4), 131, padding="SAME",
                             fused_activation_function="RELU6"),
        "CONV_2D_1x1": _weighted("CONV_2D", (1, 3, 3, 8), (5, 1, 1, 8), (1, 3, 3, 5), 97, padding="VALID"),
        "DEPTHWISE_CONV_2D": _weighted("DEPTHWISE_CONV_2D", (1, 6, 6, 3), (1, 3, 3, 6), (1, 3, 3, 6), 110,
                                       padding="SAME", stride_w=2, stride_h=2, depth_multiplier=2),
        "DEPTHWISE_CONV_2D_m1": _weighted("DEPTHWISE_CONV_2D", (1, 5, 5, 8), (1, 3, 3, 8), (1, 5, 5, 8), 140,
                                          padding="SAME", depth_multiplier=1, fused_activation_function="RELU6"),
        "FULLY_CONNECTED": (op_model("FULLY_CONNECTED", [
            _x((2, 8)), T((5, 8), "UINT8", scale=0.02, zero_point=140, data=_u8((5, 8))),
            T((5,), "INT32", scale=0.001, zero_point=0, data=RNG.integers(-500, 500, 5).astype(np.int32))],
            [_x((2, 5), 0.1, 100)]), [_u8((2, 8))]),
        "AVERAGE_POOL_2D": (op_model("AVERAGE_POOL_2D", [_x((1, 4, 4, 2))], [_x((1, 2, 2, 2))], options=dict(
            padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)), [_u8((1, 4, 4, 2))]),
        "MAX_POOL_2D": (op_model("MAX_POOL_2D", [_x((1, 4, 4, 2))], [_x((1, 2, 2, 2))], options=dict(
            padding="SAME", stride_w=2, stride_h=2, filter_width=3, filter_height=3)), [_u8((1, 4, 4, 2))]),
        "CONCATENATION": (op_model("CONCATENATION", [_x((1, 2, 3)), _x((1, 2, 2), 0.02, 100), _x((1, 2, 1))],
                                   [_x((1, 2, 6), 0.05, 120)], options={"axis": 2}),
                          [_u8((1, 2, 3)), _u8((1, 2, 2)), _u8((1, 2, 1))]),
        "RESHAPE": (op_model("RESHAPE", [_x((1, 2, 3)), T((2,), "INT32", data=np.array([3, 2], np.int32))],
                             [_x((3, 2))]), [_u8((1, 2, 3))]),
        "SQUEEZE": (op_model("SQUEEZE", [_x((1, 2, 1, 3))], [_x((2, 3))], options={"squeeze_dims": [0, 2]}),
                    [_u8((1, 2, 1, 3))]),
        "SOFTMAX": (op_model("SOFTMAX", [_x((2, 10))], [T((2, 10), "UINT8", scale=1 / 256, zero_point=0)],
                             options={"beta": 1.0}), [_u8((2, 10))]),
        "LOGISTIC": (op_model("LOGISTIC", [_x((2, 10))], [T((2, 10), "UINT8", scale=1 / 256, zero_point=0)]),
                     [_u8((2, 10))]),
        "TANH": (op_model("TANH", [_x((2, 10))], [T((2, 10), "UINT8", scale=1 / 128, zero_point=128)]),
                 [_u8((2, 10))]),
        "QUANTIZE uint8->int8": (op_model("QUANTIZE", [_x((2, 10))], [T((2, 10), "INT8", scale=0.07, zero_point=3)]),
                                 [_u8((2, 10))]),
        "QUANTIZE float->uint8": (op_model("QUANTIZE", [T((2, 10), "FLOAT32")], [_x((2, 10))]),
                                  [RNG.uniform(-6, 6, (2, 10)).astype(np.float32)]),
        "QUANTIZE uint8->uint8": (op_model("QUANTIZE", [_x((2, 10))], [_x((2, 10), 0.07, 100)]), [_u8((2, 10))]),
        "DEQUANTIZE": (op_model("DEQUANTIZE", [_x((2, 10))], [T((2, 10), "FLOAT32")]), [_u8((2, 10))]),
        "PAD": (op_model("PAD", [_x((1, 3, 3, 2)), T((4, 2), "INT32", data=np.array([[0, 0], [1, 1], [2, 0], [0, 0]],
                                                                                     np.int32))],
                         [_x((1, 5, 5, 2))]), [_u8((1, 3, 3, 2))]),
        "MEAN": (op_model("MEAN", [_x((1, 3, 3, 2)), T((2,), "INT32", data=np.array([1, 2], np.int32))],
                          [_x((1, 1, 1, 2), 0.04, 110)], options={"keep_dims": True}), [_u8((1, 3, 3, 2))]),
    }
    for op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
        c[op] = (op_model(op, [_x((1, 3, 3, 2)), T((2,), "INT32", data=np.array([5, 6], np.int32))],
                          [_x((1, 5, 6, 2))]), [_u8((1, 3, 3, 2))])
    for op in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"):
        c[op] = (op_model(op, [_x((2, 3, 4)), _x((1, 3, 4), 0.03, 130)], [_x((2, 3, 4), 0.08, 127)]),
                 [_u8((2, 3, 4)), _u8((1, 3, 4))])
    return c


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_uint8_op_matches_litert_reference(runtime, name):
    model, inputs = CASES[name]
    want = peer_outputs(model, inputs, "litert")
    got = run_on(runtime, model, inputs)
    op = name.split()[0].split("_1x1")[0].split("_m1")[0]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype)
        diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
        assert diff.max(initial=0) <= TOLERANCE.get(op, 0), (name, runtime, diff.max(), g, w)


def test_every_delivered_op_says_it_takes_uint8():
    """The op table's ``uint8`` fact: the ops above (and the detection op) take legacy UINT8 tensors."""
    for name in {n.split()[0].split("_1x1")[0].split("_m1")[0] for n in CASES} | {"TFLite_Detection_PostProcess"}:
        assert ROWS[name].uint8, name
    assert not ROWS["CAST"].uint8  # raw integers, not (q - zero point): never presented


def test_io_and_details_keep_the_models_uint8(runtime):
    """Inputs and outputs stay UINT8 for the user (details, set_tensor, get_tensor) while the kernels see int8."""
    from edge_sdk import Interpreter

    model, inputs = CASES["ADD"]
    interp = Interpreter(model_content=model, backend=runtime)
    interp.allocate_tensors()
    d = interp.get_input_details()[0]
    assert d["dtype"] == np.uint8 and d["quantization"][1] == 120
    assert interp.get_output_details()[0]["quantization_parameters"]["zero_points"].tolist() == [127]
    interp.set_tensor(d["index"], inputs[0])
    assert np.array_equal(interp.get_tensor(d["index"]), inputs[0])


def test_raw_uint8_tensors_are_not_presented():
    """A UINT8 tensor without quantization, or one an op without the ``uint8`` fact touches (CAST reads the raw
    integer), keeps its type: only (q - zero point) arithmetic is presented as int8."""
    from edge_sdk.model import read_model

    cast = op_model("CAST", [_x((4,))], [T((4,), "FLOAT32")])
    assert not uint8_presentation.presented_tensors(read_model(cast))
    raw = op_model("MAXIMUM", [T((4,), "UINT8"), T((4,), "UINT8")], [T((4,), "UINT8")])
    assert not uint8_presentation.presented_tensors(read_model(raw))
    # a FLOAT32 input with UINT8 weights: LiteRT's hybrid kernel, the weights as they are
    hybrid = op_model("FULLY_CONNECTED", [T((1, 4), "FLOAT32"), T((2, 4), "UINT8", scale=0.1, zero_point=128,
                                                                    data=_u8((2, 4))), None], [T((1, 2), "FLOAT32")])
    assert not uint8_presentation.presented_tensors(read_model(hybrid))


# ------------------------------------------------------------------------- a small SSD-like uint8 detector
def _ssd_model(rng=RNG, probs_output: bool = False) -> bytes:
    """The detector; ``probs_output``: its UINT8 class probabilities an output too (a UINT8 output besides the
    UINT8 input: tests/test_uint8_paths.py flips both at the C runtime's boundary)."""
    from edge_sdk.model.writer import option_defaults, options_for

    g = GraphBuilder()

    def op(name, ins, outs, **options):  # every option field at its schema default but those given
        table = options_for(name)
        g.op(name, ins, outs, **({**option_defaults(table), **options} if table else options))

    def act(name, shape, scale=0.05, zp=0):
        return g.tensor(name, shape, "UINT8", scale=scale, zero_point=zp)

    def conv(name, x, x_scale, shape_w, y, y_scale, zp_w, stride=1, depthwise=False, relu6=True):
        w = g.constant(f"{name}/w", _u8(shape_w, rng), "UINT8", scale=0.02, zero_point=zp_w)
        ch = shape_w[3] if depthwise else shape_w[0]
        b = g.constant(f"{name}/b", rng.integers(-800, 800, ch).astype(np.int32), "INT32",
                       scale=x_scale * 0.02, zero_point=0)
        opts = dict(padding="SAME", stride_w=stride, stride_h=stride,
                    fused_activation_function="RELU6" if relu6 else "NONE")
        if depthwise:
            opts["depth_multiplier"] = 1
        op("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, w, b], [y], **opts)

    x = g.input("image", (1, 8, 8, 3), "UINT8", scale=1 / 128, zero_point=128)
    f1 = act("f1", (1, 4, 4, 8), 6 / 255)
    conv("conv1", x, 1 / 128, (8, 3, 3, 3), f1, 6 / 255, 121, stride=2)
    f2 = act("f2", (1, 4, 4, 8), 6 / 255)
    conv("dw1", f1, 6 / 255, (1, 3, 3, 8), f2, 6 / 255, 133, depthwise=True)
    f3 = act("f3", (1, 2, 2, 8), 6 / 255)
    conv("conv2", f2, 6 / 255, (8, 3, 3, 8), f3, 6 / 255, 125, stride=2)
    boxes, scores = [], []
    for k, (f, hw) in enumerate(((f2, 4), (f3, 2))):  # two anchors a cell: 4 box values, 3 classes (bg first)
        bx = act(f"box{k}", (1, hw, hw, 8), 0.06 + 0.01 * k, 128 + k)
        conv(f"box{k}", f, 6 / 255, (8, 1, 1, 8), bx, 0.06 + 0.01 * k, 130 - k, relu6=False)
        sc = act(f"cls{k}", (1, hw, hw, 6), 0.1 + 0.02 * k, 140 - k)
        conv(f"cls{k}", f, 6 / 255, (6, 1, 1, 8), sc, 0.1 + 0.02 * k, 118 + k, relu6=False)
        rb = act(f"box{k}/r", (1, 2 * hw * hw, 4), 0.06 + 0.01 * k, 128 + k)
        rs = act(f"cls{k}/r", (1, 2 * hw * hw, 3), 0.1 + 0.02 * k, 140 - k)
        op("RESHAPE", [bx, g.constant(f"box{k}/shape", np.array([1, -1, 4], np.int32))], [rb])
        op("RESHAPE", [sc, g.constant(f"cls{k}/shape", np.array([1, -1, 3], np.int32))], [rs])
        boxes.append(rb)
        scores.append(rs)
    n = 2 * (16 + 4)
    all_boxes = act("boxes", (1, n, 4), 0.07, 128)  # parts at other scales: LiteRT's uint8 concat requantizes
    op("CONCATENATION", boxes, [all_boxes], axis=1)
    logits = act("logits", (1, n, 3), 0.12, 139)
    op("CONCATENATION", scores, [logits], axis=1)
    probs = act("probs", (1, n, 3), 1 / 256, 0)
    op("LOGISTIC", [logits], [probs])
    anchors = np.concatenate([rng.random((n, 2)) * 0.8 + 0.1, rng.random((n, 2)) * 0.2 + 0.1], 1)
    anc = g.constant("anchors", np.round(anchors * 255).astype(np.uint8), "UINT8", scale=1 / 255, zero_point=0)
    outs = [g.tensor("det/boxes", (1, 10, 4)), g.tensor("det/classes", (1, 10)), g.tensor("det/scores", (1, 10)),
            g.tensor("det/count", (1,))]
    options = dict(max_detections=10, max_classes_per_detection=1, detections_per_class=10, use_regular_nms=False,
                   nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=2, y_scale=10.0, x_scale=10.0,
                   h_scale=5.0, w_scale=5.0)
    g.op("TFLite_Detection_PostProcess", [all_boxes, probs, anc], outs, custom_options=flex_options(options))
    g.output(*outs, *([probs] if probs_output else []))
    return write_model(g.build())


SSD = _ssd_model()
SSD_INPUTS = [[_u8((1, 8, 8, 3))] for _ in range(3)]


@pytest.mark.parametrize("k", range(len(SSD_INPUTS)))
def test_ssd_like_uint8_detector_matches_litert(runtime, k):
    inputs = SSD_INPUTS[k]
    want = peer_outputs(SSD, inputs, "litert", isolate=True)
    got = run_on(runtime, SSD, inputs)
    count = int(want[3][0])
    assert int(got[3][0]) == count and count > 0
    # LiteRT leaves the slots past num_detections unwritten (fast NMS): compare the detections only
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_array_equal(g[:, :count], w[:, :count])
