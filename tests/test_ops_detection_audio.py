"""TFLite_Detection_PostProcess, AudioSpectrogram, Mfcc (custom ops) in both runtimes, and WHERE / UNIQUE (outputs
sized by the data: the Python interpreter runs them, the C runtime refuses them with that reason), against LiteRT's
reference kernels (its builtin resolver registers the three customs) and, for the detection op, bit for bit against
TFLM where TFLM runs the case (float inputs; fast NMS with one class per detection, or regular NMS: TFLM lays out
max_classes_per_detection > 1 differently, see the test).

Detection outputs are compared exactly (decoding in double with libm exp, IoU in float32, the same sorts). LiteRT
leaves the fast-NMS slots no detection fills unwritten: those are compared only up to its num_detections. The
audio ops compare within 1e-4 of the output's range (the FFT's roundings differ from LiteRT's Ooura rdft).
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.model.types import Operator, OperatorCode, Tensor
from edge_sdk.model import schema
from edge_sdk.model.writer import write_model
from tests.oprunner import T, assert_same, op_model, op_model_object, peer_outputs, refused_on, run_on
from tests.oprunner import flex_options as flex

RNG = np.random.default_rng(23)


# ------------------------------------------------------------------------------------ TFLite_Detection_PostProcess
N_BOXES = 48
# (y, x, h, w): boxes clustered around four centers, so that many pairs overlap near the IoU threshold
ANCHORS = np.concatenate([RNG.choice([0.3, 0.7], (N_BOXES, 2)) + RNG.normal(0, 0.04, (N_BOXES, 2)),
                          RNG.random((N_BOXES, 2)) * 0.1 + 0.2], axis=1).astype(np.float32)


def detection_model(classes, background, max_det, per_anchor, regular, enc_type="FLOAT32", cls_type="FLOAT32",
                    per_class=3, anchors=ANCHORS, **extra):
    options = dict(max_detections=max_det, max_classes_per_detection=per_anchor, detections_per_class=per_class,
                   use_regular_nms=regular, nms_score_threshold=0.25, nms_iou_threshold=0.45, num_classes=classes,
                   y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0)
    options.update(extra)
    q = {"UINT8": (0.05, 128), "INT8": (0.05, 0)}
    cq = {"UINT8": (1 / 255, 0), "INT8": (1 / 255, -128)}
    n = anchors.shape[0]
    if enc_type == "UINT8":
        a = T((n, 4), "UINT8", 1 / 128, 0, data=np.clip(np.round(anchors * 128), 0, 255).astype(np.uint8))
    else:
        a = T((n, 4), "FLOAT32", data=anchors)
    slots = max_det * per_anchor
    ins = [T((1, n, 4), enc_type, *q.get(enc_type, (None, None))),
           T((1, n, classes + background), cls_type, *cq.get(cls_type, (None, None))), a]
    outs = [T((1, slots, 4), "FLOAT32"), T((1, slots), "FLOAT32"), T((1, slots), "FLOAT32"), T((1,), "FLOAT32")]
    return op_model("TFLite_Detection_PostProcess", ins, outs, custom_options=flex(options))


def detection_inputs(classes, background, enc_type="FLOAT32", cls_type="FLOAT32", n=N_BOXES):
    enc = RNG.standard_normal((1, n, 4)).astype(np.float32)
    if enc_type == "UINT8":
        enc = RNG.integers(100, 156, (1, n, 4)).astype(np.uint8)
    scores = RNG.random((1, n, classes + background)).astype(np.float32)
    if cls_type == "UINT8":
        scores = RNG.permutation(np.arange(n * (classes + background)) % 256).reshape(scores.shape).astype(np.uint8)
    if cls_type == "INT8":
        scores = (RNG.permutation(np.arange(n * (classes + background)) % 256) - 128).reshape(scores.shape).astype(np.int8)
    return [enc, scores]


def check_detection(ours, theirs, fast_slots_per_anchor=None, regular_slots=None, what="vs peer"):
    """Equal outputs. LiteRT leaves the slots no detection fills unwritten: for fast NMS only the slots of its
    detections are compared, for regular NMS the first ``regular_slots`` (max_detections); ours are 0 after them."""
    if fast_slots_per_anchor is None and regular_slots is None:
        assert_same(ours, theirs, what=what)
        return
    k = int(theirs[3][0]) * fast_slots_per_anchor if regular_slots is None else regular_slots
    assert_same(ours[3:], theirs[3:], what=what)
    assert_same([ours[0][:, :k], ours[1][:, :k], ours[2][:, :k]], [theirs[0][:, :k], theirs[1][:, :k], theirs[2][:, :k]],
                what=what)
    assert not ours[0][:, k:].any() and not ours[2][:, k:].any(), "slots past the detections are 0"


@pytest.mark.parametrize("regular,classes,background,per_anchor", [
    (False, 3, 1, 1),   # fast NMS, one class per detection: TFLM too
    (True, 3, 1, 1),    # regular NMS: TFLM too
    (True, 4, 0, 1),    # no background column
    (False, 4, 0, 2),   # two classes per detection (TFLM's layout differs: LiteRT only)
    (True, 3, 1, 2),    # regular NMS with room for 2 per detection: the slots past max_detections stay 0
])
def test_detection_float(runtime, regular, classes, background, per_anchor):
    model = detection_model(classes, background, max_det=6, per_anchor=per_anchor, regular=regular)
    feeds = detection_inputs(classes, background)
    ours = run_on(runtime, model, feeds)
    fast = None if regular else per_anchor
    room = 6 if regular and per_anchor > 1 else None
    check_detection(ours, peer_outputs(model, feeds, "litert"), fast, room, what=f"{runtime} vs litert")
    if per_anchor == 1:
        check_detection(ours, peer_outputs(model, feeds, "tflm"), what=f"{runtime} vs tflm")
    assert 0 < ours[3][0] <= 6


@pytest.mark.parametrize("regular", [False, True])
def test_detection_ties_in_anchor_and_class_order(runtime, regular):
    # scores of four levels: equal scores keep anchor order (stable sorts), earlier classes first in the merge
    model = detection_model(3, 1, max_det=8, per_anchor=1, regular=regular, per_class=4)
    enc, _ = detection_inputs(3, 1)
    scores = RNG.choice(np.array([0.3, 0.5, 0.7, 0.9], np.float32), (1, N_BOXES, 4))
    ours = run_on(runtime, model, [enc, scores])
    for peer in ("litert", "tflm"):
        check_detection(ours, peer_outputs(model, [enc, scores], peer), what=f"{runtime} vs {peer}")


@pytest.mark.parametrize("enc_type,cls_type", [("UINT8", "UINT8"), ("FLOAT32", "UINT8"), ("UINT8", "FLOAT32")])
def test_detection_quantized(runtime, enc_type, cls_type):
    model = detection_model(3, 1, max_det=5, per_anchor=1, regular=True, enc_type=enc_type, cls_type=cls_type)
    feeds = detection_inputs(3, 1, enc_type, cls_type)
    check_detection(run_on(runtime, model, feeds), peer_outputs(model, feeds, "litert"), what=f"{runtime} vs litert")


def test_detection_int8_scores_equal_their_uint8_twin(runtime):
    # LiteRT takes no INT8 class predictions: q - zp is the same value in the UINT8 twin (q + 128, zp + 128)
    model = detection_model(3, 1, max_det=5, per_anchor=1, regular=False, cls_type="INT8")
    twin = detection_model(3, 1, max_det=5, per_anchor=1, regular=False, cls_type="UINT8")
    enc, scores = detection_inputs(3, 1, cls_type="INT8")
    ours = run_on(runtime, model, [enc, scores])
    check_detection(ours, peer_outputs(twin, [enc, (scores.astype(np.int16) + 128).astype(np.uint8)], "litert"), 1)


def test_detection_refusals(runtime):
    refused_on(runtime, detection_model(3, 1, max_det=4, per_anchor=1, regular=False, num_classes=5), [],
               ModelError, "num_classes|classes")
    refused_on(runtime, detection_model(3, 1, max_det=4, per_anchor=1, regular=False, cls_type="INT16"),
               [], UnsupportedOpError, "class predictions")
    refused_on(runtime, detection_model(3, 1, 4, 1, False, nms_iou_threshold=0.0), [], ModelError, "iou")


# ------------------------------------------------------------------------------------------- AudioSpectrogram, Mfcc
def spectrogram_model(samples, channels, window, stride, squared):
    frames = 1 + (samples - window) // stride
    bins = (1 << (window - 1).bit_length()) // 2 + 1
    return op_model("AudioSpectrogram", [T((samples, channels), "FLOAT32")], [T((channels, frames, bins), "FLOAT32")],
                    custom_options=flex(dict(window_size=window, stride=stride, magnitude_squared=squared)))


def close_to(ours, theirs, what):
    (a,), (b,) = ours, theirs
    assert a.shape == b.shape and a.dtype == b.dtype, what
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-4 * max(float(np.ptp(b)), 1e-30), err_msg=what)


@pytest.mark.parametrize("samples,channels,window,stride,squared", [
    (400, 1, 160, 80, False),  # a window that is not a power of two (zero-padded to 256)
    (300, 2, 64, 50, True),
])
def test_audio_spectrogram(runtime, samples, channels, window, stride, squared):
    model = spectrogram_model(samples, channels, window, stride, squared)
    x = [(RNG.standard_normal((samples, channels)) * 0.5).astype(np.float32)]
    close_to(run_on(runtime, model, x), peer_outputs(model, x, "litert"), f"{runtime} vs litert")


def mfcc_model(frames, bins, rate=16000, upper=4000, lower=20, channels=20, coefficients=13, rate_const=True):
    r = T((1,), "INT32", data=np.array([rate], np.int32)) if rate_const else T((1,), "INT32")
    return op_model("Mfcc", [T((1, frames, bins), "FLOAT32"), r], [T((1, frames, coefficients), "FLOAT32")],
                    custom_options=flex(dict(upper_frequency_limit=upper, lower_frequency_limit=lower,
                                             filterbank_channel_count=channels, dct_coefficient_count=coefficients)))


@pytest.mark.parametrize("bins,upper,lower,channels,coefficients", [(129, 4000, 20, 40, 13), (257, 7600, 125, 30, 30)])
def test_mfcc(runtime, bins, upper, lower, channels, coefficients):
    model = mfcc_model(4, bins, upper=upper, lower=lower, channels=channels, coefficients=coefficients)
    x = [(RNG.random((1, 4, bins)) ** 3 * 50).astype(np.float32)]
    close_to(run_on(runtime, model, x), peer_outputs(model, x, "litert"), f"{runtime} vs litert")


def test_audio_refusals(runtime):
    x = np.zeros((1, 4, 33), np.float32)
    refused_on(runtime, mfcc_model(4, 33, upper=12000), [x], ModelError, "upper")
    # a sample rate fed from data runs, read at eval as LiteRT reads it: tests/test_c23d_computed_params.py
    refused_on(runtime, mfcc_model(4, 33, coefficients=30, channels=20), [x], ModelError, "coefficient")
    spec = op_model("AudioSpectrogram", [T((100, 1), "FLOAT32")], [T((1, 1, 2), "FLOAT32")],
                    custom_options=flex(dict(window_size=1, stride=1)))
    refused_on(runtime, spec, [np.zeros((100, 1), np.float32)], ModelError, "window_size")
    spec = op_model("AudioSpectrogram", [T((100, 1), "INT16")], [T((1, 1, 2), "INT16")],
                    custom_options=flex(dict(window_size=4, stride=1)))
    refused_on(runtime, spec, [np.zeros((100, 1), np.int16)], UnsupportedOpError, "FLOAT32")


# ------------------------------------------------------------------------------------------------- WHERE, UNIQUE
DATA_SIZED = "output size depends on the data"
NP = {"BOOL": np.bool_, "FLOAT32": np.float32, "INT32": np.int32, "INT64": np.int64, "INT8": np.int8,
      "UINT8": np.uint8, "INT16": np.int16}


@pytest.mark.parametrize("type_", ["BOOL", "FLOAT32", "INT32", "INT64", "INT8", "UINT8"])
def test_where(runtime, type_):
    shape = (3, 4, 2)
    model = op_model("WHERE", [T(shape, type_)], [T((1, len(shape)), "INT64")])
    x = (RNG.random(shape) < 0.4) * RNG.integers(1, 5, shape)
    x = x.astype(NP[type_])
    if type_ == "FLOAT32":
        x[0, 0, 0] = np.nan  # nonzero
    if runtime == "c":
        refused_on(runtime, model, [x], UnsupportedOpError, DATA_SIZED)
        return
    (ours,) = run_on(runtime, model, [x])
    assert_same([ours], peer_outputs(model, [x], "litert"), what="python vs litert")
    assert ours.shape == (np.count_nonzero(x), 3)


def test_where_sizes_its_output_at_every_invoke(runtime):
    from edge_sdk import Interpreter

    model = op_model("WHERE", [T((5,), "BOOL")], [T((5, 1), "INT64")])
    if runtime == "c":
        refused_on(runtime, model, [np.ones(5, bool)], UnsupportedOpError, DATA_SIZED)
        return
    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    out = interp.get_output_details()[0]["index"]
    for x in (np.array([1, 0, 1, 1, 0], bool), np.zeros(5, bool), np.ones(5, bool)):
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        np.testing.assert_array_equal(interp.get_tensor(out), np.argwhere(x))
        assert tuple(interp.get_output_details()[0]["shape"]) == (int(x.sum()), 1)


@pytest.mark.parametrize("type_,idx", [("INT32", "INT32"), ("FLOAT32", "INT64"), ("INT8", "INT32"), ("INT64", "INT64"),
                                       ("UINT8", "INT32"), ("INT16", "INT32")])
def test_unique(runtime, type_, idx):
    x = RNG.integers(0, 6, 17).astype(NP[type_])
    model = op_model("UNIQUE", [T((17,), type_)], [T((17,), type_), T((17,), idx)], options={"idx_out_type": idx})
    if runtime == "c":
        refused_on(runtime, model, [x], UnsupportedOpError, DATA_SIZED)
        return
    ours = run_on(runtime, model, [x])
    assert_same(ours, peer_outputs(model, [x], "litert"), what="python vs litert")
    np.testing.assert_array_equal(ours[0][ours[1]], x)


@pytest.mark.parametrize("mask", [[1, 0, 1, 1], [0, 0, 0, 0]])
def test_a_data_sized_output_read_by_another_op(runtime, mask):
    # WHERE -> CAST: the Python interpreter prepares the CAST at eval, at WHERE's output shape (as LiteRT prepares
    # the nodes after a dynamic tensor; tests/test_while23_readers.py); the C runtime refuses WHERE
    m = op_model_object("WHERE", [T((4,), "BOOL")], [T((4, 1), "INT64")])
    sg = m.subgraphs[0]
    sg.tensors.append(Tensor(name="cast", shape=(4, 1), type="INT32", buffer=0))
    m.operator_codes.append(OperatorCode(schema.BUILTIN_OPERATOR_CODES["CAST"], None, 1))
    sg.operators.append(Operator(opcode_index=1, inputs=[1], outputs=[2], options_type=None, options={}))
    sg.outputs = [2]
    x = np.array(mask, bool)
    if runtime == "c":
        refused_on(runtime, write_model(m), [x], UnsupportedOpError, DATA_SIZED)
        return
    (ours,) = run_on(runtime, write_model(m), [x])
    assert_same([ours], peer_outputs(write_model(m), [x], "litert"), what="python vs litert")
    np.testing.assert_array_equal(ours, np.argwhere(x).astype(np.int32))


def test_unique_refuses_2d(runtime):
    model = op_model("UNIQUE", [T((2, 3), "INT32")], [T((6,), "INT32"), T((2, 3), "INT32")])
    refused_on(runtime, model, [np.zeros((2, 3), np.int32)], UnsupportedOpError if runtime == "c" else ModelError,
               DATA_SIZED if runtime == "c" else "1-D")
