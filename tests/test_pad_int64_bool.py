"""PAD / PADV2 of INT64 and BOOL tensors (issue 23, LiteRT op matrix: ai-edge-torch pads int64 indices and bool
masks), on both runtimes against LiteRT's reference kernels, with a pad value whose bytes differ (an int64 of
0x0102030405060708: every element byte-exact, not a memset) and a true bool."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, check_on, op_model

pytest.importorskip("ai_edge_litert")

PADS = np.array([[1, 0], [0, 2], [2, 1]], np.int32)


@pytest.mark.parametrize("dtype,value,x", [
    ("INT64", np.array(0x0102030405060708, np.int64), np.arange(-6, 6, dtype=np.int64).reshape(2, 3, 2)),
    ("BOOL", np.array(True), (np.arange(12) % 3 == 0).reshape(2, 3, 2)),
], ids=["int64", "bool"])
def test_padv2_value_and_pad(runtime, dtype, value, x):
    pads = T((3, 2), "INT32", data=PADS)
    padv2 = op_model("PADV2", [T((2, 3, 2), dtype), pads, T((), dtype, data=value)], [T((3, 5, 5), dtype)])
    check_on(runtime, padv2, [x], peer="litert")
    pad = op_model("PAD", [T((2, 3, 2), dtype), pads], [T((3, 5, 5), dtype)])
    check_on(runtime, pad, [x], peer="litert")
