"""PAD folded into its conv (issue 26; edge_sdk.runtime.planner.folded_pads): time and arena with and without the
fold, in one run, one thread, interleaved.

    .venv/bin/python benchmarks/pad_fold.py [--models a.tflite ...] [--rounds 15] [--invokes 5]

"Unfolded" is the same model with every PAD's output also returned (the rule never folds a returned tensor, and
the runtimes then run the PAD as before the fold); "folded" is the model as it is. Per model: the folds, the C
runtime's arena (CInterpreter.arena_size) and the Python tensor plan, each unfolded -> folded; the C runtime's
invoke time unfolded / folded (median over rounds of A B A B turns, each the best of --invokes invokes) and
LiteRT's (XNNPACK, one thread) in the same turns, as ratios. Default models: ../shared's mobilenet_v2 int8 and
palm_detection_lite, and an ONNX Conv stack (pads 1 on every side, stride 2: the importer writes PAD + VALID
conv) imported by converters.convert, float32.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_palm import best_ms  # noqa: E402  (the benchmarks' one best-of-N invoke loop)

from edge_sdk import Interpreter  # noqa: E402
from edge_sdk.model import read_model, write_model  # noqa: E402
from edge_sdk.runtime import planner  # noqa: E402

SHARED = Path(os.environ.get("EDGE_SHARED_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models"))


def unfolded(data: bytes) -> bytes:
    """The model with every PAD's output returned too: nothing folds."""
    m = read_model(data)
    for s, sg in enumerate(m.subgraphs):
        pads = [op.outputs[0] for op in sg.operators if planner.pad_fold_role(m, op) == "pad"]
        m.subgraphs[s] = dataclasses.replace(sg, outputs=list(sg.outputs) + pads)
    return write_model(m)


def onnx_conv_stack() -> bytes:
    """An ONNX graph of 3x3 stride-2 convs with pads 1 on every side (+ ReLU, a depthwise among them), converted
    (float32): each becomes PAD + VALID CONV_2D / DEPTHWISE_CONV_2D."""
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper

    from converters import convert

    rng = np.random.default_rng(0)
    nodes, inits, c, x = [], [], 3, "images"
    for k, (o, group) in enumerate([(16, 1), (16, 16), (32, 1), (32, 32), (64, 1)]):
        w = rng.standard_normal((o, c // group, 3, 3)).astype(np.float32) * 0.2
        inits.append(helper.make_tensor(f"w{k}", TP.FLOAT, w.shape, w.reshape(-1)))
        nodes.append(helper.make_node("Conv", [x, f"w{k}"], [f"c{k}"], kernel_shape=[3, 3], strides=[2, 2] if k % 2 == 0
                                      else [1, 1], pads=[1, 1, 1, 1], group=group))
        nodes.append(helper.make_node("Relu", [f"c{k}"], [f"r{k}"]))
        x, c = f"r{k}", o
    graph = helper.make_graph(nodes, "padstack", [helper.make_tensor_value_info("images", TP.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info(x, TP.FLOAT, [1, 64, 28, 28])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return convert(model, quantize="none").tflite


def _feeds(it) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    out = []
    for d in it.get_input_details():
        if np.issubdtype(d["dtype"], np.floating):
            out.append(rng.uniform(-1, 1, d["shape"]).astype(d["dtype"]))
        else:
            info = np.iinfo(d["dtype"])
            out.append(rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]))
    return out


def _ready(it, feeds):
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], x)
    return it


def measure(name: str, data: bytes, rounds: int, invokes: int) -> dict:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    m = read_model(data)
    folds = planner.folded_pads(m, planner.declared_infos(m))
    twin = unfolded(data)
    probe = Interpreter(model_content=data)
    feeds = _feeds(probe)
    runs = {"folded": _ready(Interpreter(model_content=data, backend="c", num_threads=1), feeds),
            "unfolded": _ready(Interpreter(model_content=twin, backend="c", num_threads=1), feeds),
            "litert": _ready(LiteRT(model_content=data, num_threads=1), feeds)}
    runs["folded"].invoke()
    runs["unfolded"].invoke()
    same = np.array_equal(runs["folded"].get_tensor(runs["folded"].get_output_details()[0]["index"]).view(np.uint8),
                          runs["unfolded"].get_tensor(runs["unfolded"].get_output_details()[0]["index"]).view(np.uint8))
    times: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(rounds):  # A B A B: the order flips every round
        order = list(runs) if r % 2 == 0 else list(reversed(runs))
        for k in order:
            times[k].append(best_ms(runs[k], invokes) / 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    py = {k: _ready(Interpreter(model_content=d), feeds).arena_plan().total for k, d in (("folded", data),
                                                                                          ("unfolded", twin))}
    return {"model": name, "folds": len(folds), "fold_bytes": sum(f.bytes for f in folds), "same_bits": same,
            "c_arena": (runs["unfolded"].arena_size, runs["folded"].arena_size),
            "py_plan": (py["unfolded"], py["folded"]),
            "ms": {k: 1e3 * v for k, v in med.items()},
            "folded/unfolded": med["folded"] / med["unfolded"],
            "folded/xnnpack": med["folded"] / med["litert"], "unfolded/xnnpack": med["unfolded"] / med["litert"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--invokes", type=int, default=5)
    args = ap.parse_args(argv)
    models: list[tuple[str, bytes]] = []
    if args.models:
        models = [(Path(p).name, Path(p).read_bytes()) for p in args.models]
    else:
        for rel in ("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite", "mediapipe/palm_detection_lite.tflite"):
            if (SHARED / rel).exists():
                models.append((Path(rel).name, (SHARED / rel).read_bytes()))
        models.append(("onnx_conv_stack_224 (converted, float32)", onnx_conv_stack()))
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores shared)")
    for name, data in models:
        r = measure(name, data, args.rounds, args.invokes)
        print(f"{r['model']}: {r['folds']} PADs folded ({r['fold_bytes']} B of PAD outputs), same bits "
              f"{r['same_bits']}; C arena {r['c_arena'][0]} -> {r['c_arena'][1]} B, Python tensor plan "
              f"{r['py_plan'][0]} -> {r['py_plan'][1]} B; C 1 thread {r['ms']['unfolded']:.3f} -> "
              f"{r['ms']['folded']:.3f} ms (folded / unfolded {r['folded/unfolded']:.3f}); C / XNNPACK "
              f"{r['unfolded/xnnpack']:.3f} -> {r['folded/xnnpack']:.3f} (XNNPACK {r['ms']['litert']:.3f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
