"""The C runtime's own arena base (issue 26): a SIMD host build (the host library, x86-64 / aarch64 fast paths) puts
the plan's offset 0 on a cache line whatever the caller's arena alignment, so that a C caller with a 16-aligned arena
(an exported project built with the fast paths, a user's firmware on a Linux board) gets its tensors where
CInterpreter's 64-aligned arena puts them: 64-byte loads within one line. edge_arena_used counts the padding, and
exactly that many bytes from the same start are enough (one fewer is refused)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.conftest import needs_c_runtime
from tests.test_speed26_align import _pointwise

pytestmark = needs_c_runtime

P = ctypes.c_void_p


def _lib(backend):
    lib = backend.library()
    lib.edge_arena_used.restype = ctypes.c_size_t
    lib.edge_arena_used.argtypes = [P]
    lib.edge_arena_high_water.restype = ctypes.c_size_t
    lib.edge_arena_high_water.argtypes = [P]
    return lib  # edge_host_tensor, edge_init_ex, edge_host_interp_size: declared by library() itself


def _init(lib, model: np.ndarray, start: int, nbytes: int):
    """edge_init_ex on an arena of nbytes at `start` mod 64: (status, the bytes it needs (arena_used or the high
    water), the arena tensors' addresses mod 64 and from the arena's start, the kept buffers)."""
    interp = np.zeros(lib.edge_host_interp_size() + 64, np.uint8)
    owner = np.zeros(nbytes + 128, np.uint8)
    arena = owner.ctypes.data + (-owner.ctypes.data) % 64 + start
    status = lib.edge_init_ex(interp.ctypes.data, model.ctypes.data, model.size, arena, nbytes, 0)
    if status:
        return status, 0, None, (interp, owner)
    where = []
    data, size, kind, rank = P(), ctypes.c_uint32(), ctypes.c_int32(), ctypes.c_int32()
    dims, scale, zp = (ctypes.c_int32 * 8)(), ctypes.c_float(), ctypes.c_int32()
    i = 0
    while lib.edge_host_tensor(interp.ctypes.data, 2, i, ctypes.byref(data), ctypes.byref(size), ctypes.byref(kind),
                               ctypes.byref(rank), dims, 8, ctypes.byref(scale), ctypes.byref(zp)) == 0:
        if data.value and arena <= data.value < arena + nbytes:
            where.append((data.value % 64, data.value - arena))
        i += 1
    need = max(lib.edge_arena_used(interp.ctypes.data), lib.edge_arena_high_water(interp.ctypes.data))
    return status, need, where, (interp, owner)


@pytest.mark.parametrize("h,c,o,dtype", [(8, 16, 32, "FLOAT32"), (13, 32, 16, "FLOAT32"), (16, 16, 64, "INT8")])
def test_tensors_keep_their_cache_line_offsets_from_a_16_aligned_arena(backend, h, c, o, dtype):
    lib = _lib(backend)
    simd = lib.edge_simd_level() > 0
    blob = _pointwise(h, c, o, dtype)
    model = np.zeros(len(blob) + 64, np.uint8)
    model = model[(-model.ctypes.data) % 64:][:len(blob)]
    model[:] = np.frombuffer(blob, np.uint8)
    status, used0, lines0, _ = _init(lib, model, 0, 1 << 22)
    assert status == 0 and lines0
    for start in (16, 32, 48):
        status, used, lines, _ = _init(lib, model, start, 1 << 22)
        assert status == 0
        if simd:  # the base rounded up to the next line: the padding counted, every tensor on its line offset
            assert used == used0 + 64 - start, f"start {start}: arena_used {used}, {used0} from a line"
            assert [m for m, _ in lines] == [m for m, _ in lines0], f"start {start}"
        else:  # no fast paths: the base keeps 16-byte alignment
            assert used == used0
        assert _init(lib, model, start, used)[0] == 0, f"start {start}: arena_used {used} bytes refused"
        assert _init(lib, model, start, used - 1)[0] != 0, f"start {start}: {used - 1} bytes accepted"
