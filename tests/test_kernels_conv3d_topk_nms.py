"""CONV_3D, TOPK_V2 and NON_MAX_SUPPRESSION_V4 / V5 (LiteRT builtins TFLM lacks; issue 15 point 3): single-op
models through our Python interpreter and the C runtime (Interpreter(backend="c")) against LiteRT's
reference kernels: float within 1e-5 of the output's range, indices and counts exact."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from tests.oprunner import T, assert_same, op_model, run_c, run_ours, run_peer

RNG = np.random.default_rng(1503)
HAVE_C = shutil.which("gcc") is not None and shutil.which("make") is not None


def compare(model, feeds, float_tol=1e-5):
    """Ours (Python, and C when gcc is here) against LiteRT; returns LiteRT's outputs."""
    peer = run_peer(model, feeds, "litert")
    runs = [("Python", run_ours(model, feeds))]
    if HAVE_C:
        runs.append(("C", run_c(model, feeds)))
    for what, got in runs:
        assert len(got) == len(peer)
        for g, p in zip(got, peer):
            assert g.shape == p.shape and g.dtype == p.dtype, (what, g.shape, p.shape, g.dtype, p.dtype)
            if p.dtype.kind == "f":
                scale = max(float(np.abs(p).max()) if p.size else 0.0, 1.0)
                np.testing.assert_allclose(g, p, rtol=0, atol=float_tol * scale, err_msg=f"{what} vs LiteRT")
            else:
                assert_same([g], [p], what=f"{what} vs LiteRT")
    return peer


# ------------------------------------------------------------------------------------------------ CONV_3D


def _out_size(padding, size, k, stride, dil):
    eff = (k - 1) * dil + 1
    return -(-size // stride) if padding == "SAME" else (size - eff) // stride + 1


@pytest.mark.parametrize("padding,strides,dilations,act,bias", [
    ("VALID", (1, 1, 1), (1, 1, 1), "NONE", True),
    ("SAME", (2, 1, 2), (1, 1, 1), "RELU", True),
    ("SAME", (1, 2, 1), (2, 1, 2), "NONE", False),
    ("VALID", (2, 2, 3), (1, 2, 1), "RELU6", True),
    ("SAME", (3, 3, 3), (1, 1, 1), "RELU_N1_TO_1", True),
])
def test_conv_3d(padding, strides, dilations, act, bias):
    n, d, h, w, c, o, k = 2, 6, 7, 5, 3, 4, (3, 2, 3)
    wv = RNG.standard_normal(k + (c, o)).astype(np.float32)
    out = tuple(_out_size(padding, s, kk, st, dl) for s, kk, st, dl in zip((d, h, w), k, strides, dilations))
    inputs = [T((n, d, h, w, c), "FLOAT32"), T(wv.shape, "FLOAT32", data=wv)]
    if bias:
        inputs.append(T((o,), "FLOAT32", data=RNG.standard_normal(o).astype(np.float32)))
    opts = {"padding": padding, "stride_d": strides[0], "stride_h": strides[1], "stride_w": strides[2],
            "dilation_d_factor": dilations[0], "dilation_h_factor": dilations[1],
            "dilation_w_factor": dilations[2], "fused_activation_function": act}
    model = op_model("CONV_3D", inputs, [T((n,) + out + (o,), "FLOAT32")], opts)
    compare(model, [RNG.standard_normal((n, d, h, w, c)).astype(np.float32)])


def test_conv_3d_refuses_groups_and_int8():
    wv = np.zeros((1, 1, 1, 2, 4), np.float32)
    model = op_model("CONV_3D", [T((1, 2, 2, 2, 4), "FLOAT32"), T(wv.shape, "FLOAT32", data=wv)],
                     [T((1, 2, 2, 2, 4), "FLOAT32")], {"padding": "VALID"})
    with pytest.raises(ModelError, match="filter input depth 2 differs from the input depth 4"):
        run_ours(model, [np.zeros((1, 2, 2, 2, 4), np.float32)])
    wq = np.zeros((1, 1, 1, 4, 4), np.int8)
    model = op_model("CONV_3D", [T((1, 2, 2, 2, 4), "INT8", 0.1, 0), T(wq.shape, "INT8", 0.1, 0, data=wq)],
                     [T((1, 2, 2, 2, 4), "INT8", 0.1, 0)], {"padding": "VALID"})
    with pytest.raises(ModelError, match="FLOAT32"):
        run_ours(model, [np.zeros((1, 2, 2, 2, 4), np.int8)])
