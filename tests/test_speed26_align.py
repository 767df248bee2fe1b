"""Tensor addresses of the C runtime on the host (issue 26): CInterpreter gives the C runtime an arena that starts at a
64-byte boundary (c_interpreter.ARENA_ALIGN), so that every tensor whose plan offset is a multiple of 64 starts a
cache line and the AVX-512 kernels' 64-byte loads and stores do not straddle two lines (numpy's large buffers start
16 bytes past a page: every tensor sat at 16 mod 64, float 1x1 conv / depthwise 1.08-1.39x slower). The model's
bytes too. Several sizes, float32 and int8."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model

pytestmark = needs_c_runtime


def _pointwise(h: int, c: int, o: int, dtype: str) -> bytes:
    """CONV_2D 1x1 RELU6 on 1 x h x h x c into o channels (activations of multiples of 64 bytes)."""
    rng = np.random.default_rng(h + c + o)
    if dtype == "FLOAT32":
        w = T((o, 1, 1, c), "FLOAT32", data=rng.uniform(-1, 1, (o, 1, 1, c)).astype(np.float32))
        b = T((o,), "FLOAT32", data=rng.uniform(-1, 1, o).astype(np.float32))
        x, y = T((1, h, h, c), "FLOAT32"), T((1, h, h, o), "FLOAT32")
    else:
        w = T((o, 1, 1, c), "INT8", 0.02, 0, data=rng.integers(-127, 128, (o, 1, 1, c), dtype=np.int8))
        b = T((o,), "INT32", 0.05 * 0.02, 0, data=rng.integers(-300, 300, o).astype(np.int32))
        x, y = T((1, h, h, c), "INT8", 0.05, 3), T((1, h, h, o), "INT8", 0.1, -5)
    return op_model("CONV_2D", [x, w, b], [y], options=dict(padding="SAME", stride_h=1, stride_w=1,
                                                             fused_activation_function="RELU6"), version=3)


@pytest.mark.parametrize("h,c,o,dtype", [(8, 16, 32, "FLOAT32"), (24, 8, 48, "FLOAT32"), (13, 32, 16, "FLOAT32"),
                                         (16, 16, 64, "INT8")])
def test_tensors_start_at_cache_lines(backend, h, c, o, dtype):
    it = backend.CInterpreter(model_content=_pointwise(h, c, o, dtype), num_threads=1)
    it.allocate_tensors()
    plan = it.arena_plan()
    lines = [b for b in plan.buffers if b.offset % 64 == 0]
    assert len(lines) >= 2, f"plan offsets {[b.offset for b in plan.buffers]}: expected tensors at multiples of 64"
    for d in it.get_input_details() + it.get_output_details():
        addr = it.tensor(d["index"])().ctypes.data
        offset = next(b.offset for b in plan.buffers if b.name == d["name"])
        assert (addr - offset) % 64 == 0, f"{d['name']}: arena start {addr - offset:#x} is not a cache line"
        if offset % 64 == 0:
            assert addr % 64 == 0, f"{d['name']} at {addr:#x}"
