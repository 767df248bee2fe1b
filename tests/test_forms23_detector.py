"""Whole SSD-style detectors, as real exports lay them out (issue 23): a small conv backbone, box and class heads on
two feature maps, RESHAPE + CONCATENATION into (1, anchors, 4) / (1, anchors, classes + 1), LOGISTIC, then
TFLite_Detection_PostProcess with the anchors as a constant tensor and its 4 float outputs (boxes, classes, scores,
count). Float; int8 (the converter's layout: the post-process stays float behind DEQUANTIZE); uint8 (old SSD
MobileNet v1 quantized exports: uint8 end to end, uint8 anchors, float post-process outputs). Both runtimes
against LiteRT's reference kernels (float within 1e-4 of range, classes and count exact; integer models exact) and
TFLM where it runs the graph (float, int8), then `edge run` on an image and on a tensor (detections, not top-5).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from edge_sdk.cli import main
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.writer import write_model
from tests.oprunner import flex_options, peer_outputs, run_on

CLASSES = 3  # + the background column
PER_CELL = 2  # anchors per feature-map cell
OUT_SCALE = 8 / 128  # the heads' int8 scale: values in [-8, 8)


def grid_anchors(sizes: list[int]) -> np.ndarray:
    """(y, x, h, w) anchors, PER_CELL per cell of each square feature map: shape (sum(size^2) * PER_CELL, 4)."""
    rows = []
    for size in sizes:
        for i in range(size):
            for j in range(size):
                for k in range(PER_CELL):
                    side = 0.6 * (k + 1) / (PER_CELL + 1)
                    rows.append([(i + 0.5) / size, (j + 0.5) / size, side, side * (1.5 if k % 2 else 1.0)])
    return np.array(rows, np.float32)


class _Ssd:
    """Builds the detector for one tensor type ("FLOAT32", "INT8", "UINT8") with made-up but fixed scales."""

    def __init__(self, kind: str, seed: int):
        self.kind, self.rng, self.g = kind, np.random.default_rng(seed), GraphBuilder()

    def quant(self, scale: float, signed_zero: bool) -> dict:
        """Quantization of an activation: zero at the middle (signed_zero) or the bottom of the type's range."""
        if self.kind == "FLOAT32":
            return {}
        low = -128 if self.kind == "INT8" else 0
        return {"scale": scale, "zero_point": low + 128 if signed_zero else low}

    def tensor(self, name, shape, scale, signed_zero=True) -> int:
        return self.g.tensor(name, shape, self.kind, **self.quant(scale, signed_zero))

    def conv(self, name, x, in_scale, cout, k, stride, relu, shape, out_scale, signed_zero) -> int:
        cin = self.g.tensors[x].shape[-1]
        w = (self.rng.standard_normal((cout, k, k, cin)) / np.sqrt(k * k * cin)).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.1).astype(np.float32)
        if self.kind == "FLOAT32":
            wt, bt = self.g.constant(f"{name}/w", w), self.g.constant(f"{name}/b", b)
        else:  # int8: per-channel symmetric weights; uint8: one scale, zero point 128 (LiteRT's filter offset)
            per_channel = np.abs(w).reshape(cout, -1).max(1) / 127
            ws = per_channel if self.kind == "INT8" else np.full(cout, per_channel.max())
            q = np.clip(np.round(w / ws[:, None, None, None]), -127, 127)
            if self.kind == "INT8":
                wt = self.g.constant(f"{name}/w", q.astype(np.int8), scale=ws, zero_point=0)
            else:
                wt = self.g.constant(f"{name}/w", (q + 128).astype(np.uint8), scale=float(ws[0]), zero_point=128)
            bt = self.g.constant(f"{name}/b", np.round(b / (ws * in_scale)).astype(np.int32), scale=ws * in_scale,
                                 zero_point=0)
        y = self.tensor(name, shape, out_scale, signed_zero)
        self.g.op("CONV_2D", [x, wt, bt], [y], padding="SAME", stride_w=stride, stride_h=stride,
                  fused_activation_function="RELU" if relu else "NONE")
        return y


def ssd_model(kind: str = "FLOAT32", size: int = 16, regular: bool = False, seed: int = 0, output_order=(0, 1, 2, 3),
              raw_scores: bool = False, **options) -> bytes:
    """The detector on a (1, size, size, 3) image: feature maps size/2 and size/4, (size/2)^2 + (size/4)^2 cells;
    the model lists the post-process's outputs (boxes, classes, scores, count) in ``output_order``, after the raw
    class scores with ``raw_scores``."""
    s = _Ssd(kind, seed)
    g = s.g
    image = s.tensor("image", (1, size, size, 3), 1 / 128)
    g.inputs.append(image)
    relu6 = 6 / 255
    h1, h2 = size // 2, size // 4
    f1 = s.conv("features1", image, 1 / 128, 8, 3, 2, True, (1, h1, h1, 8), relu6, False)
    f2 = s.conv("features2", f1, relu6, 16, 3, 2, True, (1, h2, h2, 16), relu6, False)
    boxes, logits = [], []
    for level, (f, side) in enumerate([(f1, h1), (f2, h2)]):
        n = side * side * PER_CELL
        for head, last, parts in [("box", 4, boxes), ("class", CLASSES + 1, logits)]:
            y = s.conv(f"{head}{level}", f, relu6, PER_CELL * last, 1, 1, False, (1, side, side, PER_CELL * last),
                       OUT_SCALE, True)
            flat = s.tensor(f"{head}{level}/reshaped", (1, n, last), OUT_SCALE)
            shape = g.constant(f"{head}{level}/shape", np.array([1, n, last], np.int32))
            g.op("RESHAPE", [y, shape], [flat], new_shape=[1, n, last])
            parts.append(flat)
    n = sum(side * side * PER_CELL for side in (h1, h2))
    encodings = s.tensor("box_encodings", (1, n, 4), OUT_SCALE)
    g.op("CONCATENATION", boxes, [encodings], axis=1, fused_activation_function="NONE")
    joined = s.tensor("class_logits", (1, n, CLASSES + 1), OUT_SCALE)
    g.op("CONCATENATION", logits, [joined], axis=1, fused_activation_function="NONE")
    scores = s.tensor("class_scores", (1, n, CLASSES + 1), 1 / 256, signed_zero=False)
    g.op("LOGISTIC", [joined], [scores])
    anchors = grid_anchors([h1, h2])
    if kind == "INT8":  # the post-process stays float: DEQUANTIZE in front of it
        float_enc, float_scores = g.tensor("box_float", (1, n, 4)), g.tensor("scores_float", (1, n, CLASSES + 1))
        g.op("DEQUANTIZE", [encodings], [float_enc])
        g.op("DEQUANTIZE", [scores], [float_scores])
        encodings, scores = float_enc, float_scores
    if kind == "UINT8":
        anchor_t = g.constant("anchors", np.clip(np.round(anchors * 256), 0, 255).astype(np.uint8), scale=1 / 256,
                              zero_point=0)
    else:
        anchor_t = g.constant("anchors", anchors)
    opts = dict(max_detections=10, max_classes_per_detection=1, detections_per_class=5, use_regular_nms=regular,
                nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=CLASSES, y_scale=10.0, x_scale=10.0,
                h_scale=5.0, w_scale=5.0)
    opts.update(options)
    slots = opts["max_detections"] * opts["max_classes_per_detection"]
    outs = [g.tensor("detection_boxes", (1, slots, 4)), g.tensor("detection_classes", (1, slots)),
            g.tensor("detection_scores", (1, slots)), g.tensor("num_detections", (1,))]
    g.op("TFLite_Detection_PostProcess", [encodings, scores, anchor_t], outs, custom_options=flex_options(opts))
    g.output(*([scores] if raw_scores else []), *[outs[k] for k in output_order])
    return write_model(g.build())


def image_tensor(kind: str, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "FLOAT32":
        return (rng.random((1, size, size, 3)) * 2 - 1).astype(np.float32)
    info = np.iinfo(np.int8 if kind == "INT8" else np.uint8)
    return rng.integers(info.min, info.max + 1, (1, size, size, 3)).astype(info.dtype)


def same_detections(ours, theirs, exact: bool, what: str) -> None:
    """Count and classes exact; boxes and scores exact or within 1e-4 of their range, over the peer's detections
    (LiteRT leaves the slots past them unwritten)."""
    count = int(theirs[3][0])
    assert ours[3][0] == theirs[3][0], f"{what}: {ours[3][0]} detections vs {theirs[3][0]}"
    assert count > 0, f"{what}: the case detects nothing (a weak test)"
    assert np.array_equal(ours[1][:, :count], theirs[1][:, :count]), f"{what}: classes differ"
    for i in (0, 2):
        a, b = ours[i][:, :count], theirs[i][:, :count]
        atol = 0.0 if exact else 1e-4 * max(float(np.ptp(b)), 1e-30)
        np.testing.assert_allclose(a, b, rtol=0, atol=atol, err_msg=f"{what}: output {i}")


@pytest.mark.parametrize("kind,regular,size", [
    ("FLOAT32", False, 16), ("FLOAT32", True, 24), ("INT8", False, 24), ("INT8", True, 16), ("UINT8", False, 16),
    ("UINT8", True, 24),
])
def test_ssd_detector_matches_peers(runtime, kind, regular, size):
    model = ssd_model(kind, size, regular, seed=size)
    feeds = [image_tensor(kind, size, seed=size + 1)]
    ours = run_on(runtime, model, feeds)
    same_detections(ours, peer_outputs(model, feeds, "litert"), kind != "FLOAT32", f"{runtime} {kind} vs litert")
    if kind != "UINT8":  # TFLM has no uint8 convolution
        same_detections(ours, peer_outputs(model, feeds, "tflm"), kind != "FLOAT32", f"{runtime} {kind} vs tflm")


def test_edge_run_prints_detections(tmp_path, capsys):
    from PIL import Image

    model = tmp_path / "det.tflite"
    model.write_bytes(ssd_model("UINT8", 16, regular=True, seed=3))
    photo = tmp_path / "photo.jpg"
    Image.fromarray((np.random.default_rng(4).random((48, 64, 3)) * 255).astype(np.uint8)).save(photo)
    assert main(["run", str(model), str(photo)]) == 0
    text = capsys.readouterr().out
    assert "box (" in text and "top" not in text.lower(), text
    # a tensor input: the printed detections are LiteRT's, those at or above the default score threshold 0.5
    x = image_tensor("UINT8", 16, seed=5)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(model), str(tmp_path / "x.npy"), "--json"]) == 0
    printed_as_litert_detects(json.loads(capsys.readouterr().out)[0]["detections"], model.read_bytes(), x)


@pytest.mark.parametrize("order,raw", [((2, 0, 3, 1), False), ((3, 2, 1, 0), False), ((1, 3, 0, 2), True)])
def test_edge_run_finds_the_outputs_in_any_order(tmp_path, capsys, order, raw):
    # TF2 detection exports list the model's outputs as scores, boxes, count, classes (some the raw class scores
    # too, 5 outputs): read by the node's order
    model = tmp_path / "det.tflite"
    model.write_bytes(ssd_model("FLOAT32", 16, regular=False, seed=11, output_order=order, raw_scores=raw))
    x = image_tensor("FLOAT32", 16, seed=12)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(model), str(tmp_path / "x.npy"), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)[0]["detections"]
    printed_as_litert_detects(found, model.read_bytes(), x, order, skip=int(raw))


def printed_as_litert_detects(found: list[dict], model: bytes, x: np.ndarray, order=(0, 1, 2, 3), skip=0) -> None:
    """`edge run`'s detections are LiteRT's post-process outputs at or above the default score threshold 0.5 (float
    runs within 1e-6)."""
    listed = peer_outputs(model, [x], "litert")[skip:]  # ``skip`` outputs listed before the post-process's
    boxes, classes, scores, count = (listed[order.index(k)] for k in range(4))
    kept = [k for k in range(int(count[0])) if scores[0, k] >= 0.5]
    assert kept, "no detection above the threshold: a weak case"
    assert [d["class_id"] for d in found] == [int(classes[0, k]) for k in kept]
    assert [d["score"] for d in found] == pytest.approx([float(scores[0, k]) for k in kept], abs=1e-6)
    for d, k in zip(found, kept):  # JSON rounds boxes to 6 decimals
        ymin, xmin, ymax, xmax = np.clip(boxes[0, k], 0, 1)
        assert d["box"] == pytest.approx([xmin, ymin, xmax, ymax], abs=2e-6)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                    reason="needs QEMU and the Arm GCC toolchain (qemu-system-arm gcc-arm-none-eabi)")
@pytest.mark.parametrize("kind", ["FLOAT32", "UINT8"])
def test_detector_validates_on_the_qemu_board(state, tmp_path, capsys, kind):
    """`edge profile` flashes the detector to the QEMU board and validates its 4 float outputs against the host
    (within the printed tolerance); the post-process has its own per-op row."""
    model = tmp_path / f"det_{kind.lower()}.tflite"
    model.write_bytes(ssd_model(kind, 16, regular=kind == "UINT8", seed=7))
    assert main(["profile", str(model), "--target", "qemu-mps2-an386", "--runs", "1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["validated"] is True and r["mismatches"] == [], r.get("mismatches")
    assert len(r["float_outputs"]) == 4 and all(f["within"] for f in r["float_outputs"])
    assert "TFLite_Detection_PostProcess" in json.dumps(r["ops"])


def test_bench_names_the_custom_op_on_both_backends(tmp_path, capsys):
    # the C runtime's per-op rows named the post-process "CUSTOM" (its op-name table knows builtin codes only)
    model = tmp_path / "det.tflite"
    model.write_bytes(ssd_model("FLOAT32", 16, seed=9))
    for backend in ("python", "c"):
        assert main(["bench", str(model), "--backend", backend, "--runs", "2", "--warmup", "1", "--json"]) == 0
        ops = [row["op"] for row in json.loads(capsys.readouterr().out)["ops"]]
        assert ops[-1] == "TFLite_Detection_PostProcess" and "CUSTOM" not in ops, (backend, ops)


@pytest.mark.parametrize("stored", ["FLOAT16", "INT8", "input"])
def test_anchors_computed_at_run_time(runtime, stored):
    # float16 / int8-converted models keep the anchors as a quantized constant behind DEQUANTIZE (LiteRT reads
    # anchors at invoke); the Python interpreter refused them as "computed at run time", the C runtime an input
    anchors = grid_anchors([4, 2])
    n = anchors.shape[0]
    g = GraphBuilder()
    enc, cls = g.input("box_encodings", (1, n, 4)), g.input("class_scores", (1, n, CLASSES + 1))
    if stored == "input":
        anchor_t = g.input("anchors", (n, 4))
    else:
        q = g.constant("anchors_fp16", anchors.astype(np.float16)) if stored == "FLOAT16" else g.constant(
            "anchors_int8", np.round(anchors * 127).astype(np.int8), scale=1 / 127, zero_point=0)
        anchor_t = g.tensor("anchors", (n, 4))
        g.op("DEQUANTIZE", [q], [anchor_t])
    outs = [g.tensor("boxes", (1, 6, 4)), g.tensor("classes", (1, 6)), g.tensor("scores", (1, 6)),
            g.tensor("count", (1,))]
    opts = dict(max_detections=6, max_classes_per_detection=1, detections_per_class=3, use_regular_nms=True,
                nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=CLASSES, y_scale=10.0, x_scale=10.0,
                h_scale=5.0, w_scale=5.0)
    g.op("TFLite_Detection_PostProcess", [enc, cls, anchor_t], outs, custom_options=flex_options(opts))
    g.output(*outs)
    model = write_model(g.build())
    rng = np.random.default_rng(len(stored))
    feeds = [rng.standard_normal((1, n, 4)).astype(np.float32), rng.random((1, n, CLASSES + 1)).astype(np.float32)]
    feeds += [anchors] if stored == "input" else []
    same_detections(run_on(runtime, model, feeds), peer_outputs(model, feeds, "litert"), True, f"{runtime} {stored}")
    if stored == "input":  # a negative height fails the invoke, naming the node (LiteRT: invalid boxes)
        from edge_sdk.errors import DataError
        from tests.oprunner import refused_on

        bad = anchors.copy()
        bad[3, 2] = -0.1
        refused_on(runtime, model, feeds[:2] + [bad], DataError, "TFLite_Detection_PostProcess.*(negative|value)")


@pytest.mark.parametrize("kind", ["FLOAT32", "INT8", "UINT8"])
def test_check_on_a_pi_and_a_microcontroller(kind):
    # `edge check` on both kinds of target: RUNS, the arena measured by the runtime that runs it there
    from edge_sdk.targets.check import RUNS, check_model

    model = ssd_model(kind, 16, regular=kind == "INT8", seed=13)
    for target in ("raspberry-pi-4", "stm32f746-disco"):
        r = check_model(model, target, stack=False)
        assert r.verdict == RUNS, (target, r.problems)
        assert r.arena_bytes > 0


@pytest.mark.parametrize("regular", [True, False])
@pytest.mark.parametrize("seed,zero_area", [(1, False), (2, False), (3, True), (4, True)])
def test_nms_selection_on_crowded_tied_candidates(runtime, regular, seed, zero_area):
    # many anchors around a few centres (heavy suppression), scores on 6 levels (ties everywhere), and with
    # zero_area some anchors of height or width 0 (IoU 0; TFLM fails such an invoke: LiteRT only): the C runtime
    # takes candidates best first from a heap and compares each with the boxes kept so far, LiteRT sorts them all
    # and deactivates; the selection must be the same, slot for slot
    rng = np.random.default_rng(seed)
    n, classes = 300, 7
    centres = rng.random((5, 2))
    sides = [0.0, 0.1, 0.2, 0.3] if zero_area else [0.05, 0.1, 0.2, 0.3]
    anchors = np.concatenate([centres[rng.integers(0, 5, n)] + rng.normal(0, 0.03, (n, 2)),
                              rng.choice(sides, (n, 2), p=[0.1, 0.3, 0.3, 0.3])], 1).astype(np.float32)
    g = GraphBuilder()
    enc, cls = g.input("box_encodings", (1, n, 4)), g.input("class_scores", (1, n, classes + 1))
    max_det = 12
    outs = [g.tensor("boxes", (1, max_det, 4)), g.tensor("classes", (1, max_det)), g.tensor("scores", (1, max_det)),
            g.tensor("count", (1,))]
    opts = dict(max_detections=max_det, max_classes_per_detection=1, detections_per_class=8, use_regular_nms=regular,
                nms_score_threshold=0.2, nms_iou_threshold=0.4, num_classes=classes, y_scale=10.0, x_scale=10.0,
                h_scale=5.0, w_scale=5.0)
    g.op("TFLite_Detection_PostProcess", [enc, cls, g.constant("anchors", anchors)], outs,
         custom_options=flex_options(opts))
    g.output(*outs)
    model = write_model(g.build())
    feeds = [(rng.standard_normal((1, n, 4)) * 0.5).astype(np.float32),
             rng.choice(np.linspace(0.1, 0.9, 6, dtype=np.float32), (1, n, classes + 1))]
    ours = run_on(runtime, model, feeds)
    for peer in ("litert",) if zero_area else ("litert", "tflm"):
        same_detections(ours, peer_outputs(model, feeds, peer), True, f"{runtime} vs {peer}")
    assert int(ours[3][0]) == max_det
