"""The C runtime's arena against TFLM's: everything edge_init takes from the caller's arena (the tensor plan,
kernel scratch, persistent op data and the runtime's own structs, and the planner's temporary memory, which
edge_arena_high_water counts) must be no larger than TFLM's whole arena (head + tail, as its
RecordingMicroAllocator reports "Arena allocation total") on every model in ../shared/models the C runtime
runs. Also: an arena of exactly edge_arena_used bytes is enough and one byte less is refused, and a node's
scratch never shares bytes with a tensor live at the same step."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import C_RUNTIME_CANNOT_RUN, needs_c_runtime, shared_model, shared_models

pytestmark = needs_c_runtime

_TFLM_TOTALS = r"""
import sys
from tflite_micro.python.tflite_micro import runtime
for path in sys.argv[1:]:
    print("@@MODEL " + path, file=sys.stderr, flush=True)
    try:  # a model TFLM refuses (float16 DEQUANTIZE, MediaPipe's float models) has no total: it is not compared
        runtime.Interpreter.from_file(path, arena_size=64 << 20).print_allocations()
    except RuntimeError as exc:
        print("refused: %s" % exc, file=sys.stderr, flush=True)
"""


def tflm_totals(paths) -> dict[str, int]:
    """TFLM's whole arena per model (head + tail), from print_allocations in a child process."""
    proc = subprocess.run([sys.executable, "-c", _TFLM_TOTALS, *map(str, paths)], capture_output=True, text=True,
                          check=False, timeout=600)
    out = {}
    for chunk in proc.stderr.split("@@MODEL ")[1:]:
        path, _, text = chunk.partition("\n")
        total = re.search(r"Arena allocation total (\d+) bytes", text)
        if total:
            out[path] = int(total.group(1))
    return out


def _runnable():
    return [p for p in shared_models() if p.name not in C_RUNTIME_CANNOT_RUN]


def test_c_runtime_has_every_op_of_the_shared_models(backend):
    """Every shared model outside C_RUNTIME_CANNOT_RUN has all its ops in C (the C tests leave none out)."""
    from edge_sdk.model import read_model

    paths = shared_models()
    if not paths:
        pytest.skip("../shared/models is absent in this checkout")
    missing = {p.name: backend.missing_ops(read_model(p.read_bytes())) for p in paths}
    assert {n: m for n, m in missing.items() if m and n not in C_RUNTIME_CANNOT_RUN} == {}
    assert all(missing[n] for n in C_RUNTIME_CANNOT_RUN if n in missing), "C_RUNTIME_CANNOT_RUN is stale"


@pytest.fixture(scope="module")
def measured(backend):
    paths = _runnable()
    if not paths:
        pytest.skip("../shared/models is absent in this checkout")
    tflm = tflm_totals(paths)
    rows = {}
    # The arena a microcontroller build needs: the portable kernels (SIMD level 0). On a 64-bit Linux CPU the
    # fast paths add their repacked weights to the persistent part (tests/test_c_simd.py checks they are counted).
    lib = backend.library()
    simd_set = getattr(lib, "edge_simd_set", None)
    if simd_set is not None:
        simd_set(0)
    try:
        for p in paths:
            it = backend.CInterpreter(model_content=p.read_bytes())
            it.allocate_tensors()
            info = it.plan_info()
            rows[p] = (max(info["arena_used"], info["high_water"]), tflm.get(str(p)))
    finally:
        if simd_set is not None:
            simd_set(-1)
    return rows


def test_c_arena_is_no_larger_than_tflm_on_shared_models(measured):
    compared = {p: (c, t) for p, (c, t) in measured.items() if t}
    assert len(compared) >= 10, "TFLM reported too few arenas"  # the top-level models and the seanet ops
    over = {p.name: (c, t) for p, (c, t) in compared.items() if c > t}
    assert not over, "C arena above TFLM's (C, TFLM bytes): " + ", ".join(f"{n} {v}" for n, v in sorted(over.items()))


@pytest.mark.parametrize("name", ["hello_world_int8.tflite", "keyword_scrambled_8bit.tflite",
                                  "trained_lstm_int8.tflite", "person_detect.tflite"])
def test_exactly_arena_used_bytes_are_enough(backend, name):
    from edge_sdk.errors import ArenaTooSmallError

    data = shared_model(f"tflite-micro/{name}").read_bytes()
    probe = backend.CInterpreter(model_content=data)
    probe.allocate_tensors()
    need = max(probe.plan_info()["arena_used"], probe.plan_info()["high_water"])
    exact = backend.CInterpreter(model_content=data, arena_size=need)
    exact.allocate_tensors()
    assert exact.plan_info()["arena_used"] == probe.plan_info()["arena_used"]
    with pytest.raises(ArenaTooSmallError):
        backend.CInterpreter(model_content=data, arena_size=need - 1).allocate_tensors()


def test_scratch_never_overlaps_a_live_tensor(backend):
    data = shared_model("tflite-micro/person_detect.tflite").read_bytes()
    it = backend.CInterpreter(model_content=data)
    it.allocate_tensors()
    entries = it.plan_entries()
    scratch = [e for e in entries if e["tensor"] == -1]
    tensors = [e for e in entries if e["tensor"] >= 0]
    assert scratch, "person_detect's convolutions ask for scratch"
    for s in scratch:
        assert s["offset"] % 16 == 0 and s["size"] % 16 == 0 and s["first_use"] <= s["last_use"]
        for t in tensors:
            live = t["first_use"] <= s["last_use"] and s["first_use"] <= t["last_use"]
            apart = s["offset"] + s["size"] <= t["offset"] or t["offset"] + t["size"] <= s["offset"]
            assert not live or apart, f"scratch of node {s['node']} overlaps tensor {t['tensor']}"


def test_runtime_structs_stay_small(tmp_path):
    """One edge_tensor_t per tensor and one edge_node_t per op live in the persistent part: 40 and 48 bytes with
    8-byte pointers (TFLM's per-tensor TfLiteEvalTensor is 24, its per-op NodeAndRegistration 64)."""
    from edge_sdk.runtime import c_build

    src = tmp_path / "sizes.c"
    src.write_text('#include <stdio.h>\n#include "edge_kernel.h"\nint main(void) { printf("%u %u %u\\n", '
                   '(unsigned)sizeof(void *), (unsigned)sizeof(edge_tensor_t), (unsigned)sizeof(edge_node_t)); '
                   'return 0; }\n')
    exe = tmp_path / "sizes"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{c_build.FIRMWARE / 'include'}",
                    "-o", str(exe), str(src)], check=True, capture_output=True)
    ptr, tensor, node = map(int, subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split())
    assert tensor <= 3 * ptr + 16 and node <= 3 * ptr + 24, (ptr, tensor, node)


@pytest.mark.parametrize("zero_point, ok", [(-32768, True), (32767, True), (32768, False), (-40000, False)])
def test_zero_points_beyond_int16_are_a_runtime_limit(backend, zero_point, ok):
    """edge_tensor_t keeps zero points as int16 (every quantized TFLite type's fit): beyond that, a clear refusal."""
    from edge_sdk.errors import ModelError
    from tests.oprunner import T, op_model

    data = op_model("RESHAPE", [T((1, 4), "INT32", scale=1.0, zero_point=zero_point)],
                    [T((4,), "INT32", scale=1.0, zero_point=zero_point)], options={"new_shape": [4]})
    it = backend.CInterpreter(model_content=data)
    if ok:
        it.allocate_tensors()
        return
    with pytest.raises(ModelError, match="zero point outside int16"):
        it.allocate_tensors()
