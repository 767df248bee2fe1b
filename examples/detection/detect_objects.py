"""Object detection post-processing: SSD-style box decoding with anchors, then non-maximum suppression (NMS).

    .venv/bin/python examples/detection/detect_objects.py [--out out/examples/detection] [--iou 0.3]

No pretrained detector ships with the repository, so this example builds a tiny one with
``edge_sdk.model.builder.GraphBuilder`` whose outputs have the shape of a real single-shot detector's: raw box
encodings (1, 128, 4) relative to 128 anchors and a score logit per anchor (1, 128, 1). Its "feature
extractor" is an 8x8 average pool over a 32x32 grayscale image (stride 4: an 8x8 grid of cells) and its
"head" a fully connected layer giving each cell's two anchors (8 and 12 pixels wide) a logit that grows
with the cell's brightness: it finds bright squares. Neighbouring cells see the same square, so a square
yields several overlapping candidates — exactly what NMS is for.

Steps: (1) decode + NMS by hand on synthetic outputs with ``edge_sdk.tasks.pipeline.decode_boxes`` / ``nms``
(what each stage keeps, class-aware vs not); (2) the built model on a synthetic scene with two squares through
``edge_sdk.tasks.pipeline.Detector`` (candidates above the score threshold, detections after NMS, a PNG with the
boxes drawn); (3) the model packaged with its anchors and thresholds in its manifest, run by ``edge run``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.manifest import write_manifest
from edge_sdk.tasks.pipeline import Detector, decode_boxes, nms, sigmoid
from examples._cli import edge, show

SIZE = 32  # input image side, pixels
GRID = 8  # cells per side (stride 4)
ANCHOR_SIZES = (0.25, 0.375)  # anchor side as a fraction of the image: 8 and 12 pixels
# logit of anchor a = GAIN[a] * (mean brightness of its window - BIAS[a]): high only when the window is (almost)
# all bright; the 12-pixel anchor gets the higher score when both fit, so it wins NMS over an 8-pixel box inside
GAIN = (10.0, 12.0)
BIAS = (0.8, 0.7)


def make_anchors() -> np.ndarray:
    """(GRID*GRID*2, 4) anchors (y_center, x_center, h, w), cell by cell, row by row."""
    rows = []
    for i in range(GRID):
        for j in range(GRID):
            for s in ANCHOR_SIZES:
                rows.append(((i + 0.5) / GRID, (j + 0.5) / GRID, s, s))
    return np.array(rows, np.float32)


def build_detector(manifest: dict | None = None) -> bytes:
    """The bright-square detector (float32): image (1, 32, 32, 1) -> boxes (1, 128, 4), scores (1, 128, 1).

    Features: the mean brightness under each anchor (AVERAGE_POOL 8x8 and 12x12, stride 4, SAME: windows
    centred on the anchors), concatenated per cell; scores: gain * (feature - bias) per anchor."""
    k = len(ANCHOR_SIZES)
    n = GRID * GRID * k
    g = GraphBuilder("bright_squares")
    x = g.input("image", (1, SIZE, SIZE, 1), "FLOAT32")
    pools = []
    for s in ANCHOR_SIZES:
        side = round(s * SIZE)
        p = g.tensor(f"window_{side}px", (1, GRID, GRID, 1), "FLOAT32")
        g.op("AVERAGE_POOL_2D", [x], [p], padding="SAME", stride_w=4, stride_h=4, filter_width=side,
             filter_height=side)
        pools.append(p)
    features = g.tensor("features", (1, GRID, GRID, k), "FLOAT32")
    g.op("CONCATENATION", pools, [features], axis=3)
    flat = g.tensor("features_flat", (1, n), "FLOAT32")
    g.op("RESHAPE", [features, g.constant("flat_shape", np.array([1, n], np.int32))], [flat], new_shape=[1, n])
    gain = np.tile(np.array(GAIN, np.float32), GRID * GRID)[None]
    bias = np.tile(-np.array(GAIN, np.float32) * np.array(BIAS, np.float32), GRID * GRID)[None]
    scaled = g.tensor("scaled", (1, n), "FLOAT32")
    g.op("MUL", [flat, g.constant("head/gain", gain)], [scaled])
    logits = g.tensor("logits", (1, n), "FLOAT32")
    g.op("ADD", [scaled, g.constant("head/bias", bias)], [logits])
    scores = g.tensor("raw_scores", (1, n, 1), "FLOAT32")
    g.op("RESHAPE", [logits, g.constant("scores_shape", np.array([1, n, 1], np.int32))], [scores],
         new_shape=[1, n, 1])
    # box regression: this toy head predicts "the anchor itself" (zero offsets), computed from the features
    # (0 * their mean) so the output is a real op output, as in a trained detector
    mean = g.tensor("features_mean", (1, 1), "FLOAT32")
    g.op("MEAN", [flat, g.constant("mean_axes", np.array([1], np.int32))], [mean], keep_dims=True)
    zero = g.tensor("zero", (1, 1), "FLOAT32")
    g.op("MUL", [mean, g.constant("zero_gain", np.zeros((1, 1), np.float32))], [zero])
    boxes = g.tensor("raw_boxes", (1, n, 4), "FLOAT32")
    g.op("ADD", [g.constant("box_offsets", np.zeros((1, n, 4), np.float32)), zero], [boxes])
    g.output(boxes, scores)
    model = g.build(description="edge-sdk detection example: a bright-square detector")
    if manifest is not None:
        write_manifest(model, manifest)
    return write_model(model)


def scene(squares) -> np.ndarray:
    """A dark 32x32 uint8 image with bright squares at (top, left, side) pixels."""
    img = np.full((SIZE, SIZE), 20, np.uint8)
    for top, left, side in squares:
        img[top:top + side, left:left + side] = 235
    return img


def draw(img: np.ndarray, detections, path: Path, scale: int = 8) -> None:
    from PIL import Image, ImageDraw

    big = Image.fromarray(img, "L").resize((SIZE * scale, SIZE * scale), Image.NEAREST).convert("RGB")
    d = ImageDraw.Draw(big)
    for det in detections:
        x0, y0, x1, y1 = (v * SIZE * scale for v in det.box)
        d.rectangle([x0, y0, x1 - 1, y1 - 1], outline=(230, 40, 40), width=2)
        d.text((x0 + 3, y0 + 2), f"{det.label} {det.score:.2f}", fill=(230, 40, 40))
    big.save(path)


def fmt_box(b) -> str:
    return "(" + ", ".join(f"{v:.3f}" for v in b) + ")"


def synthetic(iou: float) -> None:
    print("== 1. decode + NMS on synthetic detector outputs (edge_sdk.tasks.pipeline.decode_boxes, nms)", flush=True)
    anchors = np.array([[0.30, 0.30, 0.20, 0.20], [0.32, 0.30, 0.20, 0.20], [0.30, 0.34, 0.25, 0.25],
                        [0.36, 0.35, 0.20, 0.20], [0.38, 0.36, 0.20, 0.18], [0.75, 0.70, 0.10, 0.10]], np.float32)
    # (ty, tx, th, tw) per anchor with the TF SSD scales (10, 10, 5, 5): a small shift and size change each
    encodings = np.array([[0.5, 0.0, 0.0, 0.0], [-0.5, 0.2, 0.3, 0.0], [0.0, -1.0, -1.0, -1.0],
                          [0.0, 0.0, 0.0, 0.5], [-0.3, 0.0, 0.2, 0.4], [0.0, 0.0, 0.0, 0.0]], np.float32)
    logits = np.array([2.5, 1.8, 1.2, 3.0, 2.2, -0.5])
    classes = np.array([0, 0, 0, 1, 1, 0])  # 0 = face, 1 = a hand in front of it
    names = ["face", "hand"]
    boxes = decode_boxes(encodings, anchors)  # (ymin, xmin, ymax, xmax)
    scores = sigmoid(logits)
    print(f"{'#':>2} {'class':6s} {'score':>6s}  decoded box (ymin, xmin, ymax, xmax)")
    for i in range(len(scores)):
        print(f"{i:2d} {names[classes[i]]:6s} {scores[i]:6.3f}  {fmt_box(boxes[i])}")
    kept = nms(boxes, scores, classes, iou_threshold=iou, score_threshold=0.5)
    print(f"NMS (IoU > {iou} suppresses, score >= 0.5, per class): keeps {kept.tolist()}; "
          f"box 5 is under the score threshold, the others overlap a better box of their class")
    blind = nms(boxes, scores, None, iou_threshold=iou, score_threshold=0.5)
    print(f"NMS ignoring classes (class_aware=False): keeps {blind.tolist()}: the hand (3) now suppresses the "
          f"face it overlaps\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "out" / "examples" / "detection"))
    parser.add_argument("--iou", type=float, default=0.3, help="NMS IoU threshold (default 0.3)")
    parser.add_argument("--score", type=float, default=0.5, help="score threshold (default 0.5)")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    from PIL import Image

    synthetic(args.iou)

    print("== 2. a tiny SSD-style detector built with GraphBuilder, through edge_sdk.tasks.pipeline.Detector", flush=True)
    anchors = make_anchors()
    squares = [(6, 2, 8), (16, 16, 12)]  # (top, left, side) in pixels, on the detector's 4-pixel grid
    img = scene(squares)
    scene_png = out / "scene.png"
    Image.fromarray(img, "L").save(scene_png)
    model = build_detector()
    model_path = out / "bright_squares.tflite"
    model_path.write_bytes(model)
    print(f"wrote {show(model_path)} ({len(model)} bytes; outputs raw_boxes (1, {len(anchors)}, 4), "
          f"raw_scores (1, {len(anchors)}, 1)) and the scene {show(scene_png)} with squares at "
          + ", ".join(f"x {left}..{left + side} y {top}..{top + side}" for top, left, side in squares))
    det = Detector(model, anchors=anchors, labels=["square"], score_threshold=args.score, iou_threshold=args.iou)
    raw = det.runner.run(det.prepare(img)[0])
    candidates = int(np.sum(sigmoid(np.asarray(raw[1], np.float64)) >= args.score))
    found = det.detect(img)
    print(f"{candidates} of {len(anchors)} anchors score >= {args.score}; after NMS: {len(found)} detection(s)")
    for d in found:
        print(f"  {d.label} {d.score:.3f}  box (xmin, ymin, xmax, ymax) {fmt_box(d.box)}  "
              f"pixels {fmt_box(d.box_pixels) if d.box_pixels else '-'}")
    drawn = out / "detections.png"
    draw(img, found, drawn)
    print(f"boxes drawn on {show(drawn)}\n")

    print("== 3. the command line: the anchors and thresholds in the model's manifest, then edge run", flush=True)
    packaged = out / "bright_squares_packaged.tflite"
    packaged.write_bytes(build_detector({
        "task": "detect", "labels": ["square"],
        "detection": {"format": "ssd", "anchors": anchors.tolist(), "score_threshold": args.score,
                      "iou_threshold": args.iou}}))
    edge("run", packaged, scene_png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
