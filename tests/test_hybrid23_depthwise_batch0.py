"""Hybrid DEPTHWISE_CONV_2D (FLOAT32 data, INT8 weights) over a batch of 0 (issue 23): both runtimes run it to an
empty output.

LiteRT fails the invoke (depthwise_conv.cc EvalHybridPerChannel: ``batch_size != 0 was not true``), a check that
guards its per-batch input scaling factors; every other form LiteRT runs to an empty output: float, int8 and int16
DEPTHWISE_CONV_2D and hybrid CONV_2D over a batch of 0 (tests/test_litert23_edges.py). We take that answer here too:
an empty batch has one result, the empty tensor, and no model LiteRT runs gets another result from us (LiteRT gives
none here); a refusal would stop a model whose batch is resized to 0 that every other conv runs. The LiteRT
refusal is asserted too, so that a LiteRT that runs the case is compared instead."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, op_model, run_on, run_peer
from tests.peers import PeerCrashed


def _hybrid_depthwise(batch: int, multiplier: int) -> bytes:
    """(batch, 5, 6, 3) * [1, 3, 3, 3m] INT8 (a scale per output channel: LiteRT's hybrid depthwise refuses one
    scale) + FLOAT32 bias -> (batch, 3, 4, 3m)."""
    rng = np.random.default_rng(multiplier)
    o = 3 * multiplier
    w = T((1, 3, 3, o), "INT8", scale=list(np.linspace(0.01, 0.05, o)), zero_point=0, quantized_dimension=3,
          data=rng.integers(-127, 128, (1, 3, 3, o)).astype(np.int8))
    b = T((o,), "FLOAT32", data=np.linspace(-1, 1, o).astype(np.float32))
    return op_model("DEPTHWISE_CONV_2D", [T((batch, 5, 6, 3), "FLOAT32"), w, b], [T((batch, 3, 4, o), "FLOAT32")],
                    {"padding": "VALID", "stride_w": 1, "stride_h": 1, "depth_multiplier": multiplier,
                     "fused_activation_function": "RELU6"}, version=6)


@pytest.mark.parametrize("multiplier", [1, 2, 4])
def test_hybrid_depthwise_batch_of_zero_runs_to_an_empty_output(runtime, multiplier):
    model = _hybrid_depthwise(0, multiplier)
    (out,) = run_on(runtime, model, [np.zeros((0, 5, 6, 3), np.float32)])
    assert out.shape == (0, 3, 4, 3 * multiplier) and out.dtype == np.float32
    # the same node over a batch of 2 is LiteRT's hybrid kernel (this is the hybrid path, not a float one)
    x = np.random.default_rng(5).standard_normal((2, 5, 6, 3)).astype(np.float32)
    two = _hybrid_depthwise(2, multiplier)
    (ours,) = run_on(runtime, two, [x])
    (theirs,) = run_peer(two, [x], "litert", isolate=True)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_litert_still_refuses_the_hybrid_depthwise_batch_of_zero():
    model = _hybrid_depthwise(0, 1)
    with pytest.raises(PeerCrashed, match="batch_size != 0"):
        run_peer(model, [np.zeros((0, 5, 6, 3), np.float32)], "litert", isolate=True)
