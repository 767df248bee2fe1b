"""Edge cases a sweep found LiteRT's reference kernels (OpResolverType.BUILTIN_REF) run and we refused or computed
differently (issue 23), on both runtimes (the ``runtime`` grid): a batch of 0 through CONV_2D and
DEPTHWISE_CONV_2D (an empty output)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, check_on, op_model

CONV_TYPES = {  # input type, its quantization; filter type, its scale; bias type (None: float)
    "INT8": ({"scale": 0.1, "zero_point": 1}, "INT8", "INT32"),
    "INT16": ({"scale": 0.001, "zero_point": 0}, "INT8", "INT64"),
    "FLOAT32": ({}, "FLOAT32", "FLOAT32"),
}


def _conv_model(op: str, type_: str, hw: tuple[int, int], c: int, m: int, rng) -> bytes:
    """A 3x3 VALID conv (or depthwise conv of multiplier ``m``) over a batch of 0: input (0, h, w, c)."""
    q, wtype, btype = CONV_TYPES[type_]
    o = c * m if op == "DEPTHWISE_CONV_2D" else 4
    wshape = (1, 3, 3, o) if op == "DEPTHWISE_CONV_2D" else (o, 3, 3, c)
    wq = {"scale": 0.05, "zero_point": 0} if wtype == "INT8" else {}
    wdata = rng.integers(-127, 128, wshape).astype(np.int8 if wtype == "INT8" else np.float32)
    bq = {"scale": q["scale"] * 0.05, "zero_point": 0} if q else {}
    bdata = np.arange(o).astype({"INT32": np.int32, "INT64": np.int64, "FLOAT32": np.float32}[btype])
    yq = {"scale": q["scale"] * 2, "zero_point": q["zero_point"]} if q else {}
    x = T((0, *hw, c), type_, **q)
    y = T((0, hw[0] - 2, hw[1] - 2, o), type_, **yq)
    options = {"padding": "VALID", "stride_w": 1, "stride_h": 1}
    if op == "DEPTHWISE_CONV_2D":
        options["depth_multiplier"] = m
    ins = [x, T(wshape, wtype, data=wdata, **wq), T((o,), btype, data=bdata, **bq)]
    return op_model(op, ins, [y], options, version=3 if op == "DEPTHWISE_CONV_2D" or type_ != "INT16" else 4)


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D"])
@pytest.mark.parametrize("type_", list(CONV_TYPES))
@pytest.mark.parametrize("hw,c,m", [((5, 5), 3, 1), ((4, 7), 2, 2)])
def test_conv_batch_of_zero_gives_an_empty_output(runtime, rng, op, type_, hw, c, m):
    model = _conv_model(op, type_, hw, c, m, rng)
    x = np.zeros((0, *hw, c), np.float32 if type_ == "FLOAT32" else getattr(np, type_.lower()))
    (out,) = check_on(runtime, model, [x], peer="litert")
    assert out.shape[0] == 0 and out.shape[1:] == (hw[0] - 2, hw[1] - 2, out.shape[3])
