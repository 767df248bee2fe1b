"""Person detection on 96x96 grayscale camera frames with TFLM's person_detect model (int8 MobileNet).

    .venv/bin/python examples/person_detection/detect_person.py [IMAGE ...] [--model person_detect.tflite]
        [--encoding auto|pixels|int8] [--out out/examples/person_detection]

Default inputs (from ../shared/models/tflite-micro, TFLM's example test data): person.bmp and no_person.bmp.
The example skips with a message when that folder is absent.

About the two BMP files, honestly: TFLM's test copies a BMP's pixel bytes straight into the int8 input
tensor. no_person.bmp is an ordinary grayscale image (its pixel values p are fed as p - 128, the same as our
pipeline does for any image), but person.bmp was saved with the int8 values themselves as its bytes: read as an
image it looks wrong (the bright half of the range wraps around). ``--encoding`` says how to read a file:

    pixels  an ordinary grayscale image (what any camera or PNG gives)
    int8    the bytes are int8 tensor values (pixel - 128, TFLM's person.bmp); decoded to the real photo first
    auto    (default) int8 for a file whose SHA-256 is that of TFLM's person.bmp, pixels for anything else

Steps: (1) classify each image with ``edge_sdk.tasks.pipeline.ImageClassifier`` (scores for "no person" and
"person"), writing the decoded photos as PNG; (2) package a copy of the model with a manifest naming its two
labels and (3) run the same files through the command line, ``edge run``, as a user would.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples._cli import edge, show

SHARED = Path(os.environ.get("EDGE_SHARED_MODELS", ROOT.parent / "shared" / "models")) / "tflite-micro"
MODEL = SHARED / "person_detect.tflite"
TESTDATA = SHARED / "testdata" / "person_detection"
LABELS = ["no person", "person"]  # the model's output order (TFLM: kNotAPersonIndex 0, kPersonIndex 1)
# Files known to hold int8 values as their bytes (TFLM's person_detection/testdata/person.bmp at 90b983c).
INT8_ENCODED_SHA256 = {"b50a4d51e86551ea13038c96c222b9c3aaf653f5946211e5e5fd3e60b029e4d2": "TFLM's person.bmp"}


def read_frame(path: Path, encoding: str):
    """(the 8-bit grayscale photo as a PIL image, how the file was read)."""
    from PIL import Image

    data = path.read_bytes()
    if encoding == "auto":
        known = INT8_ENCODED_SHA256.get(hashlib.sha256(data).hexdigest())
        encoding, why = ("int8", f"auto: {known} stores int8 values") if known else ("pixels", "auto: an image")
    else:
        why = f"--encoding {encoding}"
    with Image.open(path) as im:
        gray = np.asarray(im.convert("L"))
    if encoding == "int8":
        gray = (gray.view(np.int8).astype(np.int16) + 128).astype(np.uint8)  # undo pixel - 128 stored as bytes
    return Image.fromarray(gray, "L"), why


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("images", nargs="*", help="grayscale frames (BMP/PNG/JPEG); default TFLM's two BMPs")
    parser.add_argument("--model", default=str(MODEL), help="person_detect.tflite (default: ../shared/models)")
    parser.add_argument("--encoding", choices=("auto", "pixels", "int8"), default="auto",
                        help="how to read the image files (see above; default auto)")
    parser.add_argument("--out", default=str(ROOT / "out" / "examples" / "person_detection"))
    args = parser.parse_args(argv)
    model = Path(args.model)
    images = [Path(p) for p in args.images] or [TESTDATA / "person.bmp", TESTDATA / "no_person.bmp"]
    missing = [p for p in [model, *images] if not p.exists()]
    if missing:
        print(f"skipped: {', '.join(show(p) for p in missing)} not found (the reference models live in "
              f"../shared/models/tflite-micro/, outside this repository; pass --model and image paths instead)")
        return 0
    from edge_sdk.model import read_model, write_model
    from edge_sdk.model.manifest import write_manifest
    from edge_sdk.tasks.pipeline import ImageClassifier

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)

    print(f"== 1. classify with edge_sdk.tasks.pipeline.ImageClassifier ({show(model)})", flush=True)
    clf = ImageClassifier(str(model), labels=LABELS)
    inp = clf.input
    print(f"input {np.dtype(inp['dtype']).name} {[int(d) for d in inp['shape']]} scale {inp['quantization'][0]:g} zero point "
          f"{inp['quantization'][1]}: pixel p is fed as p - 128")
    photos = []
    for path in images:
        photo, why = read_frame(path, args.encoding)
        png = out / f"{path.stem}.png"
        photo.save(png)
        photos.append(png)
        scores = dict(clf.predict(photo, top_k=2))
        verdict = "person" if scores["person"] > scores["no person"] else "no person"
        print(f"{path.name:16s} ({why}) -> {verdict:9s}  person {scores['person']:.3f}  "
              f"no person {scores['no person']:.3f}   photo: {show(png)}")
    print()

    print("== 2. package a copy with a manifest naming the labels, so the command line needs no options", flush=True)
    packaged = out / "person_detect_labelled.tflite"
    m = read_model(model.read_bytes())
    write_manifest(m, {"labels": LABELS, "task": "classify",
                       "source": {"path": model.name, "sha256": hashlib.sha256(model.read_bytes()).hexdigest()}})
    write_model(m, packaged)
    print(f"wrote {show(packaged)} (the same model; TFLM and LiteRT ignore the manifest entry)\n")

    print("== 3. the same with the command line (the decoded photos)", flush=True)
    edge("run", packaged, *photos, "--top-k", "2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
