"""`make demo`: the main job, end to end, on what every machine has.

Today (the core, issue 2): build a small int8 image classifier with our writer, inspect it, run it in our
fixed-arena interpreter and in TensorFlow Lite Micro, and show that the two agree bit for bit. Later stages of
the product (convert, flash to the QEMU board, profile) plug in here as they land.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from edge_sdk import Interpreter, log  # noqa: E402
from edge_sdk.inspection import format_inspection, inspect_model  # noqa: E402
from edge_sdk.model import write_model  # noqa: E402
from edge_sdk.model.builder import GraphBuilder  # noqa: E402

OUT = ROOT / "out" / "demo"
CLASSES = ["horizontal", "vertical", "diagonal", "blob"]


def build_classifier(seed: int = 7):
    """A 16x16 grayscale int8 CNN: conv 3x3/2 -> depthwise 3x3 -> average pool -> fully connected -> softmax."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder("classifier")
    in_scale = 1.0 / 128
    x = g.input("image", (1, 16, 16, 1), "INT8", scale=in_scale, zero_point=0)

    w1_scale = rng.uniform(0.004, 0.01, 8).astype(np.float32)
    w1 = g.constant("conv1/weights", rng.integers(-127, 128, (8, 3, 3, 1), dtype=np.int8),
                    scale=w1_scale, zero_point=0, quantized_dimension=0)
    b1 = g.constant("conv1/bias", rng.integers(-200, 200, 8, dtype=np.int32),
                    scale=in_scale * w1_scale, zero_point=0)
    y1 = g.tensor("conv1/relu", (1, 8, 8, 8), "INT8", scale=0.02, zero_point=-128)
    g.op("CONV_2D", [x, w1, b1], [y1], version=3, padding="SAME", stride_w=2, stride_h=2,
         fused_activation_function="RELU")

    w2_scale = rng.uniform(0.004, 0.01, 8).astype(np.float32)
    w2 = g.constant("dw/weights", rng.integers(-127, 128, (1, 3, 3, 8), dtype=np.int8),
                    scale=w2_scale, zero_point=0, quantized_dimension=3)
    b2 = g.constant("dw/bias", rng.integers(-500, 500, 8, dtype=np.int32), scale=0.02 * w2_scale, zero_point=0)
    y2 = g.tensor("dw/relu6", (1, 8, 8, 8), "INT8", scale=0.03, zero_point=-128)
    g.op("DEPTHWISE_CONV_2D", [y1, w2, b2], [y2], version=3, padding="SAME", stride_w=1, stride_h=1,
         depth_multiplier=1, fused_activation_function="RELU6")

    y3 = g.tensor("pool", (1, 1, 1, 8), "INT8", scale=0.03, zero_point=-128)
    g.op("AVERAGE_POOL_2D", [y2], [y3], version=2, padding="VALID", stride_w=8, stride_h=8, filter_width=8,
         filter_height=8)
    shape = g.constant("flatten/shape", np.array([1, 8], np.int32))
    y4 = g.tensor("flatten", (1, 8), "INT8", scale=0.03, zero_point=-128)
    g.op("RESHAPE", [y3, shape], [y4], new_shape=[1, 8])

    w5 = g.constant("fc/weights", rng.integers(-127, 128, (4, 8), dtype=np.int8), scale=0.01, zero_point=0)
    b5 = g.constant("fc/bias", rng.integers(-300, 300, 4, dtype=np.int32), scale=0.03 * 0.01, zero_point=0)
    y5 = g.tensor("logits", (1, 4), "INT8", scale=0.05, zero_point=0)
    g.op("FULLY_CONNECTED", [y4, w5, b5], [y5], version=4)
    y6 = g.tensor("probabilities", (1, 4), "INT8", scale=1.0 / 256, zero_point=-128)
    g.op("SOFTMAX", [y5], [y6], version=2, beta=1.0)
    g.output(y6)
    return g.build(description="edge-sdk demo classifier")


def test_images() -> dict[str, np.ndarray]:
    images = {}
    base = np.full((16, 16), -100, np.int8)
    h = base.copy(); h[7:9, :] = 120; images["horizontal"] = h
    v = base.copy(); v[:, 7:9] = 120; images["vertical"] = v
    d = base.copy(); np.fill_diagonal(d, 120); images["diagonal"] = d
    b = base.copy(); b[5:11, 5:11] = 120; images["blob"] = b
    return {k: im.reshape(1, 16, 16, 1) for k, im in images.items()}


def main() -> int:
    log.configure(0)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "classifier_int8.tflite"

    log.stage(f"building an int8 classifier with our writer -> {path.relative_to(ROOT)}")
    data = write_model(build_classifier(), path)
    print(f"{path.relative_to(ROOT)}: {len(data)} bytes\n")

    log.stage("edge inspect")
    print(format_inspection(inspect_model(str(path))))

    log.stage("running it in our interpreter and in TensorFlow Lite Micro")
    ours = Interpreter(model_path=str(path))
    ours.allocate_tensors()
    inp, out = ours.get_input_details()[0], ours.get_output_details()[0]
    try:
        from tflite_micro.python.tflite_micro import runtime

        tflm = runtime.Interpreter.from_bytes(data, arena_size=1 << 20)
    except ImportError:
        tflm = None
        log.warning("tflite-micro is not installed: showing our outputs only (pip install tflite-micro)")
    agree = 0
    for name, image in test_images().items():
        ours.set_tensor(inp["index"], image)
        ours.invoke()
        y = ours.get_tensor(out["index"])
        line = f"  {name:11s} ours {y.ravel().tolist()}"
        if tflm is not None:
            tflm.set_input(image, 0)
            tflm.invoke()
            t = tflm.get_output(0)
            same = np.array_equal(y, t)
            agree += same
            line += f"  TFLM {t.ravel().tolist()}  {'bit-exact' if same else 'MISMATCH'}"
        print(line)
    t0 = time.perf_counter()
    for _ in range(100):
        ours.invoke()
    ms = (time.perf_counter() - t0) * 10
    print(f"\nour invoke: {ms:.3f} ms (mean of 100; benchmarks/interpreter.py measures against the peers); "
          f"arena {ours.arena_size} bytes, liveness lower bound {ours.arena_plan().lower_bound} bytes")
    if tflm is not None:
        print(f"bit-exact with TFLM on {agree} of {len(CLASSES)} inputs")
        return 0 if agree == len(CLASSES) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
