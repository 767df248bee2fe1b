"""Issue 26: float32 one-op models (depthwise 3x3 / 5x5, 1x1 CONV_2D with a small K, FULLY_CONNECTED) on the C
runtime before and after a change, beside XNNPACK, in one run.

    .venv/bin/python benchmarks/f32_ops.py --before DIR [--rounds 5] [--seconds 0.2] [--only dw pw fc]

DIR is another checkout whose firmware_c is built (make -C DIR/firmware_c host), the "before". The models are
built here by our writer (tests/oprunner.op_model, random weights, seed 0); the shapes are the per-op rows where
issue 26's C / XNNPACK gap was largest (mid-size depthwise at stride 1 and 2, pointwise GEMMs with K 8-32, the
1280 -> 1000 classifier) and a few neighbours, so that a kernel tuned on one shape shows what it does to others.
Timing: benchmarks/conv_igemm.py's three long-lived workers (thread CPU time per invoke, bursts in turns, the order
rotating every round, median of the rounds' medians). Prints us per invoke, after / before, after / XNNPACK, and
whether before and after gave the same output bytes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _f32(rng, shape, scale=1.0):
    from tests.oprunner import T

    return T(shape, "FLOAT32", data=rng.uniform(-scale, scale, shape).astype(np.float32))


def depthwise(h: int, c: int, k: int, s: int, act: str = "RELU6") -> bytes:
    """DEPTHWISE_CONV_2D k x k stride s SAME on a 1 x h x h x c float input (multiplier 1, bias, activation)."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(0)
    oh = -(-h // s)
    return op_model("DEPTHWISE_CONV_2D", [T((1, h, h, c), "FLOAT32"), _f32(rng, (1, k, k, c)), _f32(rng, (c,))],
                    [T((1, oh, oh, c), "FLOAT32")],
                    options=dict(padding="SAME", stride_w=s, stride_h=s, depth_multiplier=1,
                                 fused_activation_function=act), version=1)


def pointwise(h: int, c: int, o: int, act: str = "RELU6") -> bytes:
    """CONV_2D 1x1 stride 1 on 1 x h x h x c into o channels (the direct GEMM: h*h rows, K = c, N = o)."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(0)
    return op_model("CONV_2D", [T((1, h, h, c), "FLOAT32"), _f32(rng, (o, 1, 1, c)), _f32(rng, (o,))],
                    [T((1, h, h, o), "FLOAT32")],
                    options=dict(padding="SAME", stride_w=1, stride_h=1, fused_activation_function=act), version=1)


def fully_connected(n: int, k: int, batch: int = 1) -> bytes:
    """FULLY_CONNECTED batch x k -> batch x n, bias, no activation (a classifier head)."""
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(0)
    return op_model("FULLY_CONNECTED", [T((batch, k), "FLOAT32"), _f32(rng, (n, k), 0.05), _f32(rng, (n,))],
                    [T((batch, n), "FLOAT32")], version=1)


ITEMS = {
    "dw": [(f"dw 3x3 s1 {h}x{h}x{c}", lambda h=h, c=c: depthwise(h, c, 3, 1))
           for h, c in ((112, 32), (56, 96), (32, 144), (28, 192), (16, 384), (14, 576), (8, 960))]
          + [(f"dw 3x3 s2 {h}x{h}x{c}", lambda h=h, c=c: depthwise(h, c, 3, 2))
             for h, c in ((112, 96), (112, 32), (64, 96), (56, 144), (56, 192), (28, 192), (14, 576), (7, 960))]
          + [(f"dw 5x5 s{s} {h}x{h}x{c}", lambda h=h, c=c, s=s: depthwise(h, c, 5, s))
             for h, c, s in ((48, 128, 1), (24, 96, 1), (28, 240, 2), (14, 480, 1))],
    "pw": [(f"1x1 {h}x{h} K{c}->N{o}", lambda h=h, c=c, o=o: pointwise(h, c, o))
           for h, c, o in ((112, 16, 96), (56, 24, 144), (64, 8, 48), (128, 16, 16), (48, 32, 192), (96, 24, 24),
                           (28, 32, 192), (14, 96, 576), (7, 160, 960))],
    "fc": [("fc 1280->1000", lambda: fully_connected(1000, 1280)), ("fc 1024->256", lambda: fully_connected(256, 1024)),
           ("fc 576->1024", lambda: fully_connected(1024, 576)), ("fc 1280->1000 batch 4",
                                                                  lambda: fully_connected(1000, 1280, 4))],
}


def compare(argv, items: dict, what: str) -> int:
    """The command line of this script over ``items`` ({group: [(name, model bytes builder)]}): the groups --only
    names (all by default) timed by conv_igemm.compare_items against --before. benchmarks/elem_ops.py runs its own."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the checkout (its firmware_c built) to compare against")
    ap.add_argument("--only", nargs="*", choices=sorted(items), default=sorted(items))
    ap.add_argument("--match", default="", help="only the items whose names hold this text")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.2, help="per burst")
    a = ap.parse_args(argv)
    sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
    if not (a.before / "firmware_c" / "build" / "host" / "libedge.so").is_file():
        print("--before DIR: a checkout whose firmware_c is built (make -C DIR/firmware_c host)", file=sys.stderr)
        return 2
    import conv_igemm

    with tempfile.TemporaryDirectory(prefix="f32_ops-") as tmp:
        chosen = []
        for group in a.only:
            for name, build in items[group]:
                if a.match in name:
                    path = Path(tmp) / f"item{len(chosen)}.tflite"
                    path.write_bytes(build())
                    chosen.append((name, path))
        a.no_cuts, a.no_models, a.pointwise, a.models = True, True, False, []
        return conv_igemm.compare_items(a, chosen, what)


def main(argv=None) -> int:
    return compare(argv, ITEMS, "float32 one-op models (our writer, random weights)")


if __name__ == "__main__":
    sys.exit(main())
