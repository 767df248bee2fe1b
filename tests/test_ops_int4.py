"""INT4 weights as ai-edge-quantizer writes them (TensorType INT4, two values a byte) on both runtimes, bit for bit
with LiteRT's reference kernels: int8 / int16x8 / hybrid (float input, asymmetric or not) FULLY_CONNECTED and
CONV_2D, int8 DEPTHWISE_CONV_2D, the hybrid EMBEDDING_LOOKUP of a 4-bit table; per-tensor and per-channel scales.
The forms LiteRT refuses (a float DEPTHWISE_CONV_2D, TRANSPOSE_CONV) are refused with one line. Both runtimes unpack
the weights once at prepare (the C runtime into a packed-weights copy, edge_int4.h)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from edge_sdk.errors import UnsupportedOpError
from tests.oprunner import T, check_on, op_model, refused_on

CONV = {"padding": "SAME", "stride_w": 1, "stride_h": 1}


def _w4(rng, shape, per_channel, axis=0):
    scale = rng.uniform(0.01, 0.05, shape[axis]) if per_channel else 0.03
    return T(shape, "INT4", scale=scale, zero_point=0, quantized_dimension=axis,
             data=rng.integers(-8, 7, shape, endpoint=True).astype(np.int8))


def _act(kind, shape):
    return {"INT8": T(shape, "INT8", scale=0.05, zero_point=-2), "INT16": T(shape, "INT16", scale=0.001, zero_point=0),
            "FLOAT32": T(shape, "FLOAT32")}[kind]


def _out(kind, shape):
    return {"INT8": T(shape, "INT8", scale=0.1, zero_point=3), "INT16": T(shape, "INT16", scale=0.002, zero_point=0),
            "FLOAT32": T(shape, "FLOAT32")}[kind]


def _bias(rng, kind, n):
    if kind == "FLOAT32":
        return T((n,), "FLOAT32", data=rng.uniform(-1, 1, n).astype(np.float32))
    btype, scale = ("INT32", 0.0015) if kind == "INT8" else ("INT64", 0.00003)
    return T((n,), btype, scale=scale, zero_point=0, data=rng.integers(-100, 100, n).astype(btype.lower()))


def _feed(rng, kind, shape):
    if kind == "FLOAT32":
        return rng.uniform(-1, 1, shape).astype(np.float32)
    bound = 127 if kind == "INT8" else 3000
    return rng.integers(-bound, bound, shape).astype(kind.lower())


def _case(op, kind, per_channel, asymmetric=False):
    rng = np.random.default_rng(zlib.crc32(repr((op, kind, per_channel, asymmetric)).encode()))
    if op == "FULLY_CONNECTED":
        opts = {"asymmetric_quantize_inputs": asymmetric}
        return op_model(op, [_act(kind, (2, 8)), _w4(rng, (5, 8), per_channel), _bias(rng, kind, 5)],
                        [_out(kind, (2, 5))], options=opts), [_feed(rng, kind, (2, 8))]
    if op == "CONV_2D":
        return op_model(op, [_act(kind, (1, 5, 5, 3)), _w4(rng, (4, 3, 3, 3), per_channel), _bias(rng, kind, 4)],
                        [_out(kind, (1, 5, 5, 4))], options=CONV), [_feed(rng, kind, (1, 5, 5, 3))]
    # DEPTHWISE_CONV_2D at version 6: LiteRT's reference resolver registers up to 6 (its default one 7)
    return op_model(op, [_act(kind, (1, 5, 5, 3)), _w4(rng, (1, 3, 3, 3), per_channel, axis=3),
                         _bias(rng, kind, 3)], [_out(kind, (1, 5, 5, 3))], options={**CONV, "depth_multiplier": 1},
                    version=6), [_feed(rng, kind, (1, 5, 5, 3))]


CASES = [(op, kind, pc, asym) for op, kinds in (("FULLY_CONNECTED", ("INT8", "INT16", "FLOAT32")),
                                                ("CONV_2D", ("INT8", "INT16", "FLOAT32")),
                                                ("DEPTHWISE_CONV_2D", ("INT8",)))
         for kind in kinds for pc in (False, True)
         for asym in ((False, True) if kind == "FLOAT32" and op == "FULLY_CONNECTED" else (False,))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-pc{int(c[2])}-asym{int(c[3])}")
def test_int4_weights_as_litert(runtime, case):
    model, feeds = _case(*case)
    check_on(runtime, model, feeds, peer="litert")


@pytest.mark.parametrize("per_row", [False, True])
def test_int4_embedding_table_as_litert(runtime, per_row):
    rng = np.random.default_rng(4)
    table = _w4(rng, (6, 4), per_row)
    model = op_model("EMBEDDING_LOOKUP", [T((3,), "INT32"), table], [T((3, 4), "FLOAT32")], version=4)
    check_on(runtime, model, [np.array([5, 0, 2], np.int32)], peer="litert")


def test_int4_forms_litert_refuses_are_refused(runtime):
    rng = np.random.default_rng(5)
    dw = op_model("DEPTHWISE_CONV_2D", [T((1, 5, 5, 3), "FLOAT32"), _w4(rng, (1, 3, 3, 3), True, axis=3), None],
                  [T((1, 5, 5, 3), "FLOAT32")], options={**CONV, "depth_multiplier": 1}, version=6)
    refused_on(runtime, dw, [np.zeros((1, 5, 5, 3), np.float32)], UnsupportedOpError, "INT4")
    tc = op_model("TRANSPOSE_CONV", [T((4,), "INT32", data=np.array([1, 6, 6, 2], np.int32)),
                                     _w4(rng, (2, 3, 3, 3), False), _act("INT8", (1, 3, 3, 3))],
                  [_out("INT8", (1, 6, 6, 2))], options={"padding": "SAME", "stride_w": 2, "stride_h": 2})
    refused_on(runtime, tc, [np.zeros((1, 3, 3, 3), np.int8)], UnsupportedOpError, "INT4|INT8/INT8")
