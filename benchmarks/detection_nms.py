"""Speed of TFLite_Detection_PostProcess (an SSD's post-processing) in our runtimes against LiteRT.

    .venv/bin/python benchmarks/detection_nms.py [--rounds R] [--invokes N]

The op alone, on SSD MobileNet's shapes: 1917 anchors, 91 classes + background, scores a sigmoid of
N(-4, 2) logits (all above nms_score_threshold 1e-8: every anchor is a candidate in every class),
anchors on a grid or crowded around 5 points, random box encodings. Regular NMS (100 per class, 100 detections) and fast NMS. Prints ms
per invoke (best of N, the runtimes taking turns for R rounds; the best round kept) and ours / LiteRT. The
outputs are checked equal to LiteRT's before timing. Machines are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.oprunner import T, flex_options, op_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_palm import best_ms  # noqa: E402  (the benchmarks' one best-of-N invoke loop)

ANCHORS, CLASSES = 1917, 91


def ssd_postprocess_model(regular: bool, crowded: bool, rng, score_threshold: float = 1e-8) -> bytes:
    """Anchors on a 44 x 44 grid, or crowded around 5 points (most candidates suppressed: NMS walks them all)."""
    side = np.linspace(0.05, 0.95, 44)
    yx = np.stack(np.meshgrid(side, side), -1).reshape(-1, 2)[:ANCHORS]
    if crowded:
        yx = rng.random((5, 2))[rng.integers(0, 5, ANCHORS)] + rng.normal(0, 0.03, (ANCHORS, 2))
    hw = rng.uniform(0.05, 0.4, (ANCHORS, 2))
    anchors = np.concatenate([yx, hw], axis=1).astype(np.float32)
    opts = dict(max_detections=100, max_classes_per_detection=1, detections_per_class=100,
                use_regular_nms=regular, nms_score_threshold=score_threshold, nms_iou_threshold=0.6, num_classes=CLASSES,
                y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0)
    ins = [T((1, ANCHORS, 4), "FLOAT32"), T((1, ANCHORS, CLASSES + 1), "FLOAT32"),
           T((ANCHORS, 4), "FLOAT32", data=anchors)]
    outs = [T((1, 100, 4), "FLOAT32"), T((1, 100), "FLOAT32"), T((1, 100), "FLOAT32"), T((1,), "FLOAT32")]
    return op_model("TFLite_Detection_PostProcess", ins, outs, custom_options=flex_options(opts))


def ssd_inputs(rng) -> list[np.ndarray]:
    enc = rng.standard_normal((1, ANCHORS, 4)).astype(np.float32)
    scores = (1 / (1 + np.exp(-rng.normal(-4, 2, (1, ANCHORS, CLASSES + 1))))).astype(np.float32)
    return [enc, scores]


def ready(model: bytes, inputs, runtime: str):
    if runtime == "litert":
        from ai_edge_litert.interpreter import Interpreter
        it = Interpreter(model_content=model, num_threads=1)
    else:
        from edge_sdk import Interpreter
        it = Interpreter(model_content=model, backend=runtime)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    return it


def outputs(it) -> list[np.ndarray]:
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--invokes", type=int, default=5)
    ap.add_argument("--runtimes", default="python,c")
    ap.add_argument("--score-threshold", type=float, default=1e-8,
                    help="nms_score_threshold (default 1e-8: every anchor a candidate; SSD exports write 1e-8 or 0.3+)")
    args = ap.parse_args()
    rng = np.random.default_rng(1917)
    for regular, crowded in ((True, False), (False, False), (True, True), (False, True)):
        model, inputs = ssd_postprocess_model(regular, crowded, rng, args.score_threshold), ssd_inputs(rng)
        its = {rt: ready(model, inputs, rt) for rt in ["litert"] + args.runtimes.split(",")}
        theirs = outputs(its["litert"])
        count = int(theirs[3][0])
        for rt, it in its.items():
            ours = outputs(it)
            same = all(np.array_equal(a.reshape(-1)[:count * (4 if k == 0 else 1)], b.reshape(-1)[:count * (4 if k == 0 else 1)])
                       for k, (a, b) in enumerate(zip(ours, theirs)))
            if not same:
                print(f"{rt}: outputs differ from LiteRT's")
        times = {rt: float("inf") for rt in its}
        for _ in range(args.rounds):
            for rt, it in its.items():
                times[rt] = min(times[rt], best_ms(it, args.invokes))
        name = ("regular" if regular else "fast") + (", crowded anchors" if crowded else ", grid anchors")
        row = ", ".join(f"{rt} {ms:.2f} ms" for rt, ms in times.items())
        ratios = ", ".join(f"{rt}/litert {times[rt] / times['litert']:.2f}" for rt in its if rt != "litert")
        print(f"{name}, {ANCHORS} anchors x {CLASSES} classes, {count} detections: {row}; {ratios}")


if __name__ == "__main__":
    main()
