#!/usr/bin/env python3
"""Seed corpus for the libFuzzer harness (fuzz_edge.c): real models and models our writer builds.

    seed_corpus.py OUT_DIR [--max-bytes N]

Writes OUT_DIR/*.tflite:
  - every .tflite under ../shared/models up to --max-bytes (default 320 KB; bigger ones only slow the
    fuzzer, and the harness's fixed arena refuses them anyway), when that folder exists;
  - small one-operator models built with our writer (tests/oprunner.py) for the ops the C runtime has, int8
    (and a few int16 / float32), so that mutations start next to every kernel's prepare and eval; and issue 23's
    ops, one smallest model per op and type (tests/test_audit23_ops_s19.py), IF / WHILE / CALL_ONCE subgraphs too.
OUT_DIR/.max_len gets the largest seed's size (libFuzzer's -max_len).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "models"


def writer_models() -> dict[str, bytes]:
    """name -> .tflite bytes of small one-op models (deterministic)."""
    sys.path.insert(0, str(ROOT))
    from tests.oprunner import T, op_model

    rng = np.random.default_rng(1)

    def q(shape, scale=0.05, zp=3, t="INT8"):
        return T(shape, t, scale=scale, zero_point=zp if t == "INT8" else 0)

    def w8(shape, scale=0.02):
        return T(shape, "INT8", scale=scale, zero_point=0, data=rng.integers(-127, 128, shape).astype(np.int8))

    def b32(n, scale=0.001):
        return T((n,), "INT32", scale=scale, zero_point=0, data=rng.integers(-500, 500, n).astype(np.int32))

    m = {}
    m["fc"] = op_model("FULLY_CONNECTED", [q((2, 8)), w8((4, 8)), b32(4)], [q((2, 4), 0.1, -2)],
                       options=dict(fused_activation_function="RELU"))
    m["conv"] = op_model("CONV_2D", [q((1, 6, 6, 3)), T((4, 3, 3, 3), "INT8", scale=[0.01, 0.02, 0.03, 0.04],
                                                           zero_point=0, data=rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)),
                                     T((4,), "INT32", scale=[5e-4, 1e-3, 1.5e-3, 2e-3], zero_point=0,
                                       data=rng.integers(-500, 500, 4).astype(np.int32))],
                         [q((1, 3, 3, 4), 0.2, -1)],
                         options=dict(padding="SAME", stride_w=2, stride_h=2, fused_activation_function="RELU6"),
                         version=3)
    m["dwconv"] = op_model("DEPTHWISE_CONV_2D", [q((1, 5, 5, 4)), w8((1, 3, 3, 8)), b32(8)], [q((1, 5, 5, 8), 0.2)],
                           options=dict(padding="SAME", stride_w=1, stride_h=1, depth_multiplier=2), version=2)
    m["avgpool"] = op_model("AVERAGE_POOL_2D", [q((1, 4, 4, 2))], [q((1, 2, 2, 2))],
                            options=dict(padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2))
    m["maxpool"] = op_model("MAX_POOL_2D", [q((1, 4, 4, 2))], [q((1, 2, 2, 2))],
                            options=dict(padding="SAME", stride_w=2, stride_h=2, filter_width=3, filter_height=3))
    m["add"] = op_model("ADD", [q((1, 3, 4)), q((1, 1, 4), 0.03, -5)], [q((1, 3, 4), 0.07, 1)])
    m["mul"] = op_model("MUL", [q((2, 3)), q((2, 3), 0.02, 1)], [q((2, 3), 0.01, 0)])
    m["sub"] = op_model("SUB", [q((4,)), q((4,), 0.04, 2)], [q((4,), 0.05, 0)], version=2)
    m["softmax"] = op_model("SOFTMAX", [q((1, 10))], [T((1, 10), "INT8", scale=1 / 256, zero_point=-128)],
                            options=dict(beta=1.0))
    m["logistic"] = op_model("LOGISTIC", [q((1, 6), 0.1)], [T((1, 6), "INT8", scale=1 / 256, zero_point=-128)])
    m["tanh"] = op_model("TANH", [q((1, 6), 0.1)], [T((1, 6), "INT8", scale=1 / 128, zero_point=0)])
    m["reshape"] = op_model("RESHAPE", [q((2, 3, 4)), T((2,), "INT32", data=np.array([4, -1], np.int32))],
                            [q((4, 6))])
    m["concat"] = op_model("CONCATENATION", [q((1, 2, 3)), q((1, 2, 2))], [q((1, 2, 5))], options=dict(axis=2))
    m["pad"] = op_model("PAD", [q((1, 3, 3, 1)), T((4, 2), "INT32", data=np.array([[0, 0], [1, 1], [2, 0], [0, 0]],
                                                                                  np.int32))], [q((1, 5, 5, 1))])
    m["mean"] = op_model("MEAN", [q((1, 4, 4, 3)), T((2,), "INT32", data=np.array([1, 2], np.int32))],
                         [q((1, 1, 1, 3), 0.04, 1)], options=dict(keep_dims=True))
    m["transpose"] = op_model("TRANSPOSE", [q((2, 3, 4)), T((3,), "INT32", data=np.array([2, 0, 1], np.int32))],
                              [q((4, 2, 3))])
    m["strided_slice"] = op_model("STRIDED_SLICE", [q((4, 6)), T((2,), "INT32", data=np.array([1, 0], np.int32)),
                                                    T((2,), "INT32", data=np.array([3, 6], np.int32)),
                                                    T((2,), "INT32", data=np.array([1, 2], np.int32))],
                                  [q((2, 3))])
    m["split"] = op_model("SPLIT", [T((), "INT32", data=np.array(1, np.int32)), q((2, 4))], [q((2, 2)), q((2, 2))],
                          options=dict(num_splits=2))
    m["quantize"] = op_model("QUANTIZE", [T((1, 8), "FLOAT32")], [q((1, 8))])
    m["dequantize"] = op_model("DEQUANTIZE", [q((1, 8))], [T((1, 8), "FLOAT32")])
    m["requantize16"] = op_model("QUANTIZE", [T((1, 8), "INT16", scale=0.001, zero_point=0)], [q((1, 8))])
    m["relu"] = op_model("RELU", [q((2, 5))], [q((2, 5), 0.03, -128)])
    m["hard_swish"] = op_model("HARD_SWISH", [q((2, 5))], [q((2, 5), 0.03, -10)])
    m["leaky_relu"] = op_model("LEAKY_RELU", [q((2, 5))], [q((2, 5), 0.04, 0)], options=dict(alpha=0.2))
    m["prelu"] = op_model("PRELU", [q((1, 2, 3)), T((3,), "INT8", scale=0.01, zero_point=0,
                                                     data=np.array([10, -20, 30], np.int8))], [q((1, 2, 3))])
    m["fc_float"] = op_model("FULLY_CONNECTED",
                             [T((1, 4), "FLOAT32"), T((3, 4), "FLOAT32", data=rng.uniform(-1, 1, (3, 4)).astype(np.float32)),
                              None], [T((1, 3), "FLOAT32")])
    m["add16"] = op_model("ADD", [q((1, 4), 0.001, 0, "INT16"), q((1, 4), 0.002, 0, "INT16")],
                          [q((1, 4), 0.003, 0, "INT16")])
    m["tconv"] = op_model("TRANSPOSE_CONV", [T((4,), "INT32", data=np.array([1, 4, 4, 2], np.int32)), w8((2, 3, 3, 3)),
                                             q((1, 2, 2, 3))], [q((1, 4, 4, 2), 0.2)],
                          options=dict(padding="SAME", stride_w=2, stride_h=2))
    # resampling, DENSIFY and MediaPipe's custom ops (issue 16)
    size = T((2,), "INT32", data=np.array([5, 7], np.int32))
    m["resize_bilinear"] = op_model("RESIZE_BILINEAR", [q((1, 3, 4, 2)), size], [q((1, 5, 7, 2))],
                                    options=dict(half_pixel_centers=True), version=3)
    m["resize_nearest"] = op_model("RESIZE_NEAREST_NEIGHBOR", [q((1, 3, 4, 2)), size], [q((1, 5, 7, 2))],
                                   options=dict(align_corners=True), version=3)
    from edge_sdk.model.types import DimensionMetadata, Sparsity
    from edge_sdk.model.writer import write_model
    from tests.oprunner import op_model_object

    dense = op_model_object("DENSIFY", [T((3,), "FLOAT32", data=np.array([1.5, -2.0, 3.0], np.float32))],
                            [T((3, 4), "FLOAT32")])
    dense.subgraphs[0].tensors[0].shape = (3, 4)
    dense.subgraphs[0].tensors[0].sparsity = Sparsity([0, 1], [], [
        DimensionMetadata("DENSE", 3),
        DimensionMetadata("SPARSE_CSR", 0, np.array([0, 1, 1, 3]), np.array([2, 0, 3]))])
    m["densify"] = write_model(dense)
    f32 = rng.standard_normal
    m["mp_tconv_bias"] = op_model("Convolution2DTransposeBias", [
        T((1, 3, 3, 2), "FLOAT32"), T((2, 2, 2, 2), "FLOAT32", data=f32((2, 2, 2, 2)).astype(np.float32)),
        T((2,), "FLOAT32", data=f32(2).astype(np.float32))], [T((1, 6, 6, 2), "FLOAT32")],
        custom_options=np.array([1, 2, 2], "<i4").tobytes())
    m["mp_transform_tensor"] = op_model("TransformTensorBilinear", [T((1, 4, 4, 2), "FLOAT32"),
                                        T((1, 4, 4), "FLOAT32")], [T((1, 3, 3, 2), "FLOAT32")], version=2)
    m["mp_transform_landmarks"] = op_model("TransformLandmarks", [T((1, 5, 3), "FLOAT32"), T((1, 4, 4), "FLOAT32")],
                                           [T((1, 5, 3), "FLOAT32")], version=2)
    i32 = lambda v: T((len(v),), "INT32", data=np.array(v, np.int32))  # noqa: E731
    m["mirror_pad"] = op_model("MIRROR_PAD", [q((3, 4)), T((2, 2), "INT32", data=np.array([[1, 2], [0, 3]], np.int32))],
                               [q((6, 7))], options=dict(mode="SYMMETRIC"))
    m["pack"] = op_model("PACK", [q((2, 3)), q((2, 3))], [q((2, 2, 3))], options=dict(values_count=2, axis=1))
    m["unpack"] = op_model("UNPACK", [q((2, 3))], [q((3,)), q((3,))], options=dict(num=2, axis=0))
    m["slice"] = op_model("SLICE", [q((3, 4)), i32([1, 0]), i32([2, -1])], [q((2, 4))])
    m["tile"] = op_model("TILE", [q((2, 3)), i32([2, 1])], [q((4, 3))])
    m["broadcast_to"] = op_model("BROADCAST_TO", [q((1, 3)), i32([2, 3])], [q((2, 3))])
    m["squeeze"] = op_model("SQUEEZE", [q((1, 3, 1))], [q((3,))], options=dict(squeeze_dims=[0, 2]))
    m["space_to_depth"] = op_model("SPACE_TO_DEPTH", [q((1, 4, 4, 2))], [q((1, 2, 2, 8))], options=dict(block_size=2))
    m["arg_max"] = op_model("ARG_MAX", [q((2, 5)), i32([1])], [T((2,), "INT32")], options=dict(output_type="INT32"))
    m["reduce_max"] = op_model("REDUCE_MAX", [q((2, 3, 4)), i32([0, 2])], [q((3,))])
    m["log_softmax"] = op_model("LOG_SOFTMAX", [q((2, 6), 0.1)], [T((2, 6), "INT8", scale=16 / 256, zero_point=127)])
    m["squared_difference"] = op_model("SQUARED_DIFFERENCE", [q((2, 3)), q((3,), 0.03, -2)], [q((2, 3), 0.3, -100)])
    m["exp"] = op_model("EXP", [T((4,), "FLOAT32")], [T((4,), "FLOAT32")])
    m["pow"] = op_model("POW", [T((2, 2), "INT32"), T((2,), "INT32")], [T((2, 2), "INT32")])
    # comparisons, logical ops, selection (BOOL tensors)
    b8 = lambda shape: T(shape, "BOOL")  # noqa: E731
    m["less_int8"] = op_model("LESS", [q((2, 3)), q((3,), 0.02, -7)], [b8((2, 3))], version=2)
    m["equal_bool"] = op_model("EQUAL", [b8((2, 1)), b8((1, 3))], [b8((2, 3))])
    m["greater_int64"] = op_model("GREATER", [T((3,), "INT64"), T((1,), "INT64")], [b8((3,))])
    m["logical_or"] = op_model("LOGICAL_OR", [b8((2, 3)), b8((3,))], [b8((2, 3))])
    m["logical_not"] = op_model("LOGICAL_NOT", [b8((4,))], [b8((4,))])
    m["select_v2"] = op_model("SELECT_V2", [b8((2, 1)), q((1, 3)), q((2, 3))], [q((2, 3))])
    m["select"] = op_model("SELECT", [b8((2,)), T((2, 3), "INT16"), T((2, 3), "INT16")], [T((2, 3), "INT16")])
    # control flow: IF / WHILE with their subgraphs (tests/test_control_flow.py's models)
    from tests.test_control_flow import counting_while_model, halving_while_model, if_model, nested_model

    m["if_int8"] = if_model("INT8")
    m["while_counting"] = counting_while_model()
    m["while_halving"] = halving_while_model()
    m["while_if_nested"] = nested_model("INT8")
    # the integer LSTM forms (issue 23 point 1): LiteRT's 8x8_16 LSTM with and without layer norm (intermediates),
    # the layer-norm sequence LSTM, the quantized basic cell (tests/test_lstm_integer.py's models)
    from tests.test_lstm_integer import basic_uint8_model, int8_lstm_model

    m["lstm_int8"] = int8_lstm_model(1, False)
    m["lstm_int8_layer_norm"] = int8_lstm_model(3, True, 2.0)
    m["sequence_lstm_int8_layer_norm"] = int8_lstm_model(21, True, sequence=(4, False))
    m["lstm_basic_uint8"] = basic_uint8_model(11)
    # issue 23's ops (tests/test_audit23_ops_s19.py): each op's smallest model per type, CALL_ONCE's init
    # subgraph with resource variables, and UNIQUE / WHERE (which the C runtime refuses at load, saying why)
    from tests.test_audit23_ops_s19 import fuzz_seed_models

    m.update(fuzz_seed_models())
    return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--max-bytes", type=int, default=320 * 1024)
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = []
    if SHARED.is_dir():
        for p in sorted(SHARED.rglob("*.tflite")):
            data = p.read_bytes()
            if len(data) <= a.max_bytes:
                (out / f"shared-{p.stem}.tflite").write_bytes(data)
                sizes.append(len(data))
    for name, data in writer_models().items():
        (out / f"writer-{name}.tflite").write_bytes(data)
        sizes.append(len(data))
    (out / ".max_len").write_text(str(max(sizes)))
    print(f"{len(sizes)} seeds in {out} (largest {max(sizes)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
