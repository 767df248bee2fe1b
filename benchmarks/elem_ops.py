"""Issue 26, session 19: the elementwise / softmax / SVDF one-op models behind XNNPACK (HARD_SWISH, float ADD / MUL
at mobilenet_v3-small 96 shapes, SOFTMAX of a 1000-class head float32 and int8, and keyword_scrambled's SVDF stack
as a whole model) on the C runtime before and after a change, beside XNNPACK, in one run.

    .venv/bin/python benchmarks/elem_ops.py --before DIR [--rounds 5] [--seconds 0.2] [--match TEXT]
(benchmarks/f32_ops.py's command line and timing, over these items)

DIR is another checkout whose firmware_c is built (make -C DIR/firmware_c host). The models are built here by our
writer (tests/oprunner.op_model, random data, seed 0), keyword_scrambled.tflite from ../shared. Timing and table:
benchmarks/conv_igemm.py's compare_items (three long-lived workers, thread CPU time per invoke, bursts in turns).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EDGE_SHARED_MODELS", ROOT.parent / "shared" / "models"))


def hard_swish(shape) -> bytes:
    from tests.oprunner import T, op_model

    return op_model("HARD_SWISH", [T(shape, "FLOAT32")], [T(shape, "FLOAT32")])


def binary(op: str, shape, other) -> bytes:
    from tests.oprunner import T, op_model

    return op_model(op, [T(shape, "FLOAT32"), T(other, "FLOAT32")], [T(shape, "FLOAT32")],
                    options={"fused_activation_function": "NONE"})


def softmax(n: int, dtype: str) -> bytes:
    from tests.oprunner import T, op_model

    if dtype == "FLOAT32":
        return op_model("SOFTMAX", [T((1, n), "FLOAT32")], [T((1, n), "FLOAT32")], options={"beta": 1.0})
    return op_model("SOFTMAX", [T((1, n), "INT8", 0.1, 3)], [T((1, n), "INT8", 1.0 / 256, -128)],
                    options={"beta": 1.0})


ITEMS = ([(f"hard_swish {s}", lambda s=s: hard_swish(s)) for s in ((1, 48, 48, 16), (1, 24, 24, 72), (1, 12, 12, 96),
                                                                    (1, 6, 6, 576))]
         + [(f"{op.lower()} {s} x {o}", lambda op=op, s=s, o=o: binary(op, s, o))
            for op, s, o in (("ADD", (1, 12, 12, 40), (1, 12, 12, 40)), ("ADD", (1, 6, 6, 96), (1, 6, 6, 96)),
                             ("MUL", (1, 12, 12, 96), (1, 1, 1, 96)), ("MUL", (1, 6, 6, 576), (1, 1, 1, 576)))]
         + [(f"softmax 1x1000 {t.lower()}", lambda t=t: softmax(1000, t)) for t in ("FLOAT32", "INT8")]
         + [("keyword_scrambled (svdf x7)", lambda: next(SHARED.rglob("keyword_scrambled.tflite")).read_bytes())])


def main(argv=None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import f32_ops

    return f32_ops.compare(argv, {"elem": ITEMS},
                           "elementwise / softmax / SVDF models (our writer; keyword_scrambled)")


if __name__ == "__main__":
    sys.exit(main())
