"""LiteRT's hybrid TRANSPOSE_CONV (float input, constant INT8 filter: transpose_conv.cc EvalHybrid, which TFLM
lacks) on both runtimes, bit for bit with LiteRT's reference kernel: per-tensor and per-channel filter scales,
SAME / VALID padding, strides 1-3, with and without bias, fused activations, two images a batch."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, check_on, op_model

CASES = [  # per_channel, padding, stride, activation, bias, batch
    (True, "SAME", 2, "NONE", True, 1),
    (False, "VALID", 1, "RELU", False, 2),
    (True, "SAME", 3, "RELU6", True, 2),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"pc{int(c[0])}-{c[1]}-s{c[2]}-{c[3]}-b{int(c[4])}-n{c[5]}")
def test_hybrid_transpose_conv_as_litert(runtime, case):
    per_channel, padding, stride, act, has_bias, n = case
    rng = np.random.default_rng(stride)
    h = w = 4
    cin, o, k = 3, 5, 3
    oh = h * stride if padding == "SAME" else (h - 1) * stride + k
    filt = T((o, k, k, cin), "INT8", scale=rng.uniform(0.01, 0.03, o) if per_channel else 0.02, zero_point=0,
             data=rng.integers(-127, 127, (o, k, k, cin)).astype(np.int8))
    inputs = [T((4,), "INT32", data=np.array([n, oh, oh, o], np.int32)), filt, T((n, h, w, cin), "FLOAT32")]
    if has_bias:
        inputs.append(T((o,), "FLOAT32", data=rng.uniform(-1, 1, o).astype(np.float32)))
    model = op_model("TRANSPOSE_CONV", inputs, [T((n, oh, oh, o), "FLOAT32")],
                     options={"padding": padding, "stride_w": stride, "stride_h": stride,
                              "fused_activation_function": act}, version=4 if act != "NONE" else 3)
    check_on(runtime, model, [rng.uniform(-2, 3, (n, h, w, cin)).astype(np.float32)], peer="litert")
