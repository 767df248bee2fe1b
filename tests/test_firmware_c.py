"""The C micro-runtime (firmware_c/): warning-clean builds, the planner equal to edge_sdk/runtime/arena.py byte for byte,
FULLY_CONNECTED / RESHAPE bit-exact with our Python kernels and TFLM, a fuzzed loader that never crashes,
and the init-time refusals (arena too small with the numbers, unsupported op named)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sysconfig
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.errors import ArenaTooSmallError, ModelError, UnsupportedOpError
from edge_sdk.runtime import c_build
from edge_sdk.runtime.planner import static_plan
from edge_sdk.model import read_model, write_model

from tests.conftest import needs_c_runtime, shared_model, shared_models
from tests.oprunner import T, op_model, run_ours
from tests.peers import run_tflm

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"

pytestmark = needs_c_runtime


def _plan_tuples(plan):
    return [(b.key, b.offset, b.size, b.first_use, b.last_use) for b in plan.buffers], plan.total


# ------------------------------------------------------------------------------------------------ builds

def _sources():
    return [FW / "src" / "edge.c", *sorted((FW / "src" / "kernels").glob("*.c"))]


@pytest.mark.parametrize("strip", [False, True], ids=["strings", "no-strings"])
def test_build_is_warning_clean_with_gcc(tmp_path, strip):
    table = tmp_path / "edge_ops_generated.c"
    subprocess.run(["python3", str(FW / "tools" / "gen_ops.py"), str(table)], check=True)
    flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes",
             "-O2", f"-I{FW / 'include'}", f"-I{FW / 'src'}", f"-I{FW / 'host'}"]
    if strip:
        flags.append("-DEDGE_NO_STATUS_STRINGS")
    sources = [*_sources(), FW / "host" / "edge_host.c", FW / "host" / "edge_run.c", table]

    def compile_one(src):
        return subprocess.run(["gcc", *flags, "-c", str(src), "-o", str(tmp_path / (src.stem + ".o"))],
                              capture_output=True, text=True)
    # one compile per CPU at a time; every file is still compiled and checked
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        procs = list(pool.map(compile_one, sources))
    for src, proc in zip(sources, procs):
        assert proc.returncode == 0, f"{src.name}:\n{proc.stderr}"


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc is not installed")
def test_cortex_m4_build_is_warning_clean(tmp_path):
    out = tmp_path / "build"
    proc = subprocess.run(["make", "-C", str(FW), f"-j{os.cpu_count() or 1}", "-B", "cortex-m4",
                           f"MODELS={shared_model('tflite-micro/hello_world_int8.tflite')}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    # hello_world_int8 has no float32 or int16 tensor: the library is the per-model type build
    lib = FW / "build" / "cortex-m4" / "libedge-noFLOAT32-noINT16.a"
    assert lib.exists() and lib.stat().st_size > 0, sorted(p.name for p in lib.parent.glob("libedge*.a"))
    table = (FW / "build" / "cortex-m4" / "edge_ops_generated.c").read_text()
    assert "edge_eval_fully_connected" in table and "edge_eval_reshape" not in table  # only the model's ops
    del out


# ------------------------------------------------------------------------------------------------ planner

@pytest.mark.parametrize("path", shared_models(), ids=lambda p: p.name)
def test_plan_matches_python_on_shared_models(backend, path):
    data = path.read_bytes()
    # plan-only runs no prepare, yet leaves out of its plan the constant DEQUANTIZEs a host build folds at prepare
    # (edge_folds_at_prepare, planner.folded_constants' rule): the one host plan
    expected = _plan_tuples(static_plan(read_model(data)))
    c = backend.CInterpreter(model_content=data, plan_only=True)
    c.allocate_tensors()
    assert _plan_tuples(c.arena_plan()) == expected
    info = c.plan_info()
    assert info["n_scratch"] == 0 and info["head_total"] == expected[1]


def _fc_model(rng, shape=(3, 10), units=7, per_channel=False, bias=True, act="RELU", keep=False, version=5,
              itype="INT8"):
    depth = shape[-1]
    out_shape = shape[:-1] + (units,) if keep else (int(np.prod(shape)) // depth, units)
    if itype == "FLOAT32":
        x, y = T(shape, "FLOAT32"), T(out_shape, "FLOAT32")
        w = T((units, depth), "FLOAT32", data=rng.uniform(-1, 1, (units, depth)).astype(np.float32))
        b = T((units,), "FLOAT32", data=rng.uniform(-1, 1, units).astype(np.float32)) if bias else None
    else:
        x = T(shape, "INT8", scale=0.05, zero_point=int(rng.integers(-20, 20)))
        y = T(out_shape, "INT8", scale=0.08, zero_point=int(rng.integers(-10, 10)))
        wdata = rng.integers(-128, 127, (units, depth), endpoint=True).astype(np.int8)
        wscale = rng.uniform(0.002, 0.02, units) if per_channel else 0.01
        w = T((units, depth), "INT8", scale=wscale, zero_point=0, data=wdata)
        b = (T((units,), "INT32", scale=0.05 * 0.01, zero_point=0,
               data=rng.integers(-3000, 3000, units).astype(np.int32)) if bias else None)
    return op_model("FULLY_CONNECTED", [x, w, b], [y],
                    options=dict(fused_activation_function=act, keep_num_dims=keep), version=version)


def _reshape_model(rng, in_shape=(2, 3, 4), new_shape=(4, -1), as_input=True, itype="INT8"):
    x = T(in_shape, itype, scale=0.1 if itype == "INT8" else None, zero_point=3 if itype == "INT8" else None)
    shape = [d for d in new_shape]
    out = tuple(int(np.prod(in_shape)) // int(-np.prod(shape)) if d == -1 else d for d in shape)
    y = T(out, itype, scale=0.1 if itype == "INT8" else None, zero_point=3 if itype == "INT8" else None)
    if as_input:
        return op_model("RESHAPE", [x, T((len(shape),), "INT32", data=np.array(shape, np.int32))], [y])
    return op_model("RESHAPE", [x], [y], options=dict(new_shape=list(shape)))


FC_CASES = [
    # shape, units, per_channel, bias, act, keep, itype
    ((3, 10), 7, False, True, "RELU", False, "INT8"),
    ((2, 3, 8), 5, True, True, "NONE", True, "INT8"),
    ((1, 16), 4, False, False, "RELU6", False, "INT8"),
    ((4, 33), 9, True, False, "RELU_N1_TO_1", False, "INT8"),
    ((2, 6), 3, False, True, "NONE", False, "FLOAT32"),
]


def _fc_id(c):
    return f"{c[6]}-{'x'.join(map(str, c[0]))}-u{c[1]}-pc{int(c[2])}-b{int(c[3])}-{c[4]}-k{int(c[5])}"


def _inputs_for(model: bytes, rng):
    interp = Interpreter(model_content=model)
    feeds = []
    for d in interp.get_input_details():
        if np.issubdtype(d["dtype"], np.floating):
            feeds.append(rng.uniform(-1, 1, tuple(d["shape"])).astype(d["dtype"]))
        else:
            feeds.append(rng.integers(-128, 127, tuple(d["shape"]), endpoint=True).astype(d["dtype"]))
    return feeds


def _run_c(backend, model: bytes, feeds):
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()
    for d, x in zip(c.get_input_details(), feeds):
        c.set_tensor(d["index"], x)
    c.invoke()
    return c, [c.get_tensor(d["index"]) for d in c.get_output_details()]


@pytest.mark.parametrize("case", FC_CASES, ids=_fc_id)
def test_fully_connected_bit_exact_with_python_and_tflm(backend, case):
    shape, units, pc, bias, act, keep, itype = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    model = _fc_model(rng, shape, units, pc, bias, act, keep, itype=itype)
    feeds = _inputs_for(model, rng)
    c, ours_c = _run_c(backend, model, feeds)
    ours_py = run_ours(model, feeds)
    tflm = run_tflm(model, feeds)
    for a, b, t in zip(ours_c, ours_py, tflm):
        assert a.shape == b.shape == t.shape
        if itype == "FLOAT32":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(a, t, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, t)
    # the plan with kernels (computed output shapes) equals the Python interpreter's
    py = Interpreter(model_content=model)
    py.allocate_tensors()
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(py.arena_plan())


@pytest.mark.parametrize("as_input", [True, False], ids=["shape-input", "options"])
def test_reshape_matches_python(backend, as_input):
    rng = np.random.default_rng(7)
    model = _reshape_model(rng, (2, 3, 4), (4, -1), as_input=as_input)
    feeds = _inputs_for(model, rng)
    c, out = _run_c(backend, model, feeds)
    ref = run_ours(model, feeds)
    assert out[0].shape == (4, 6)
    np.testing.assert_array_equal(out[0], ref[0])
    py = Interpreter(model_content=model)
    py.allocate_tensors()
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(py.arena_plan())


# ------------------------------------------------------------------------------------------------ hello_world

def test_hello_world_int8_bit_exact_through_ctypes(backend):
    path = shared_model("tflite-micro/hello_world_int8.tflite")
    data = path.read_bytes()
    c = Interpreter(model_content=data, backend="c")
    assert isinstance(c, backend.CInterpreter)
    c.allocate_tensors()
    py = Interpreter(model_content=data)
    py.allocate_tensors()
    i, o = c.get_input_details()[0]["index"], c.get_output_details()[0]["index"]
    xs = np.arange(-128, 128, dtype=np.int8).reshape(-1, 1, 1)
    got, want = [], []
    for x in xs:
        c.set_tensor(i, x)
        c.invoke()
        got.append(c.get_tensor(o))
        py.set_tensor(i, x)
        py.invoke()
        want.append(py.get_tensor(o))
    got, want = np.concatenate(got), np.concatenate(want)
    np.testing.assert_array_equal(got, want)
    tflm = np.concatenate([run_tflm(data, [x])[0] for x in xs[::17]])
    np.testing.assert_array_equal(got[::17], tflm)
    assert _plan_tuples(c.arena_plan()) == _plan_tuples(py.arena_plan())
    assert len(np.unique(got)) > 10  # a real sine curve, not a constant


@pytest.mark.parametrize("call", ["extension", "ctypes"])
def test_inputs_keep_their_value_when_the_plan_reuses_their_bytes(backend, call, monkeypatch):
    """LiteRT semantics: an input set once keeps its value over several invokes and get_tensor returns it,
    also when the plan gives its bytes to a later tensor (the binding re-stages those inputs), through the
    CPython extension and through the ctypes fallback alike."""
    backend.library()  # builds and loads the invoke extension when Python's headers are installed
    if call == "ctypes":
        monkeypatch.setattr(backend, "_pyfast", None)
    elif backend._pyfast is None:
        include = sysconfig.get_paths().get("include")
        assert not (include and (Path(include) / "Python.h").is_file()), \
            "Python.h is installed but the invoke extension (host/edge_pyfast.c) did not build or load"
        pytest.skip(f"the invoke extension cannot be built here: no Python.h under {include}")
    from edge_sdk.model.builder import GraphBuilder as GB

    rng = np.random.default_rng(3)
    b = GB()
    t = b.input("x", (1, 64), "INT8", scale=0.05, zero_point=1)
    for k in range(3):
        wk = b.constant(f"w{k}", rng.integers(-127, 128, (64, 64)).astype(np.int8), scale=0.01, zero_point=0)
        y = b.tensor(f"y{k}", (1, 64), "INT8", scale=0.4 * (k + 1), zero_point=0)
        b.op("FULLY_CONNECTED", [t, wk, -1], [y], version=4)
        t = y
    b.output(t)
    data = write_model(b.build())
    c = backend.CInterpreter(model_content=data)
    c.allocate_tensors()
    i, o = c.get_input_details()[0]["index"], c.get_output_details()[0]["index"]
    assert i in c._staged, "the plan should reuse the input's bytes in this chain (test premise)"
    assert (c._run is backend._pyfast.invoke) if call == "extension" else (c._run is c._lib.edge_host_invoke_copies)
    feed = rng.integers(-128, 128, (1, 64)).astype(np.int8)
    c.set_tensor(i, feed)
    c.invoke()
    first = c.get_tensor(o)
    c.invoke()
    np.testing.assert_array_equal(c.get_tensor(o), first)
    np.testing.assert_array_equal(c.get_tensor(i), feed)
    np.testing.assert_array_equal(first, run_tflm(data, [feed])[0])


def test_hello_world_int8_through_edge_run_c(backend, tmp_path):
    path = shared_model("tflite-micro/hello_world_int8.tflite")
    data = path.read_bytes()
    py = Interpreter(model_content=data)
    py.allocate_tensors()
    i, o = py.get_input_details()[0]["index"], py.get_output_details()[0]["index"]
    for v in (-128, -40, 0, 13, 127):
        x = np.array([[v]], np.int8)
        (tmp_path / "in.bin").write_bytes(x.tobytes())
        proc = subprocess.run([str(c_build.RUNNER), str(path), str(tmp_path / "in.bin"), str(tmp_path / "out.bin"),
                               "--trace"], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        py.set_tensor(i, x)
        py.invoke()
        np.testing.assert_array_equal(np.fromfile(tmp_path / "out.bin", np.int8), py.get_tensor(o).ravel())
        rows = [line for line in proc.stdout.splitlines() if "FULLY_CONNECTED" in line]
        assert len(rows) == 3 and "ns" in proc.stdout  # one timed line per op


def test_trace_and_arena_accounting(backend):
    data = shared_model("tflite-micro/hello_world_int8.tflite").read_bytes()
    c = backend.CInterpreter(model_content=data)
    c.allocate_tensors()
    c.enable_trace()
    c.set_tensor(c.get_input_details()[0]["index"], np.array([[5]], np.int8))
    c.invoke()
    assert [t["op"] for t in c.trace()] == ["FULLY_CONNECTED"] * 3
    info = c.plan_info()
    # the head holds the tensors and the kernels' scratch (the SIMD FULLY_CONNECTED path on a 64-bit Linux CPU asks
    # for a work buffer); tensors alone when no node asks for scratch
    assert info["arena_used"] == info["head_total"] + info["persistent"]
    assert info["n_scratch"] > 0 or info["head_total"] == info["tensor_total"]
    assert info["high_water"] >= info["arena_used"]


# ------------------------------------------------------------------------------------------------ refusals

def test_arena_too_small_reports_required_and_given(backend):
    rng = np.random.default_rng(3)
    model = _fc_model(rng, shape=(4, 1000), units=300, bias=True)
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()
    used = c.plan_info()["high_water"]
    with pytest.raises(ArenaTooSmallError) as exc:
        backend.CInterpreter(model_content=model, arena_size=used - 16).allocate_tensors()
    assert exc.value.required == used and exc.value.given == used - 16
    ok = backend.CInterpreter(model_content=model, arena_size=exc.value.required)
    ok.allocate_tensors()  # exactly the reported size is enough
    with pytest.raises(ArenaTooSmallError) as tiny:
        backend.CInterpreter(model_content=model, arena_size=64).allocate_tensors()
    assert tiny.value.given == 64 and tiny.value.required > 64


def test_unsupported_op_is_refused_naming_it(backend, tmp_path):
    rng = np.random.default_rng(4)
    too_new = _fc_model(rng, version=99)
    with pytest.raises(UnsupportedOpError, match=r"FULLY_CONNECTED code 9 v99"):
        backend.CInterpreter(model_content=too_new).allocate_tensors()
    # SKIP_GRAM: a builtin the C runtime has no kernel for (a string op: nor plans one).
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    y = g.tensor("y", (1, 4), "FLOAT32")
    g.op("SKIP_GRAM", [x], [y])
    g.output(y)
    model = g.build()
    path = tmp_path / "skip_gram.tflite"
    write_model(model, path)
    with pytest.raises(UnsupportedOpError, match=r"node 0 \(SKIP_GRAM code 30 v1\)"):
        backend.CInterpreter(model_path=path).allocate_tensors()
    assert "SKIP_GRAM v1" in " ".join(backend.missing_ops(model))
    proc = subprocess.run([str(c_build.RUNNER), str(path), "/dev/null", str(tmp_path / "o.bin")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 3 and "SKIP_GRAM" in proc.stderr


def test_malformed_headers_are_refused(backend):
    data = shared_model("tflite-micro/hello_world_int8.tflite").read_bytes()
    for bad in (b"", b"1234", data[:3] + b"X" + data[4:8].replace(b"TFL3", b"TFL4") + data[8:]):
        with pytest.raises(ModelError, match="EDGE_MODEL"):
            backend.CInterpreter(model_content=bad).allocate_tensors()


# ------------------------------------------------------------------------------------------------ fuzz

def _mutations(seed_models: list[bytes], n: int, seed: int) -> tuple[bytes, int]:
    rng = np.random.default_rng(seed)
    out = bytearray()
    for i in range(n):
        b = bytearray(seed_models[i % len(seed_models)])
        kind = int(rng.integers(0, 6))
        if kind == 0:  # bit flips
            for _ in range(int(rng.integers(1, 8))):
                p = int(rng.integers(0, len(b)))
                b[p] ^= 1 << int(rng.integers(0, 8))
        elif kind == 1:  # interesting 32-bit values at aligned places (offsets, counts, indices)
            for _ in range(int(rng.integers(1, 4))):
                p = int(rng.integers(0, len(b) - 4)) // 4 * 4
                v = int(rng.choice([0, 1, 4, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, len(b), len(b) - 4,
                                    int(rng.integers(0, 1 << 32))]))
                b[p:p + 4] = struct.pack("<I", v)
        elif kind == 2:  # truncation
            b = b[: int(rng.integers(0, len(b)))]
        elif kind == 3:  # random bytes
            for _ in range(int(rng.integers(1, 32))):
                b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        elif kind == 4:  # 16-bit vtable entries
            p = int(rng.integers(0, len(b) - 2)) // 2 * 2
            b[p:p + 2] = struct.pack("<H", int(rng.choice([0, 2, 4, 0xFFFF, int(rng.integers(0, 1 << 16))])))
        else:  # small signed changes to int32s (shape dims, tensor indices, versions)
            p = int(rng.integers(0, len(b) - 4)) // 4 * 4
            (v,) = struct.unpack_from("<i", b, p)
            b[p:p + 4] = struct.pack("<i", max(-(1 << 31), min((1 << 31) - 1, v + int(rng.integers(-3, 4)))))
        out += struct.pack("<I", len(b)) + b
    return bytes(out), n


def test_fuzzed_models_never_crash_the_loader(backend, tmp_path, asan_build):
    seeds = [shared_model("tflite-micro/hello_world_int8.tflite").read_bytes(),
             shared_model("tflite-micro/simple_add_model.tflite").read_bytes()]
    rng = np.random.default_rng(11)
    seeds.append(_fc_model(rng, shape=(2, 8), units=4, per_channel=True))
    seeds.append(_reshape_model(rng, (2, 3, 4), (4, -1)))
    cases, n = _mutations(seeds, 2000, seed=20261130)
    path = tmp_path / "cases.bin"
    path.write_bytes(cases)
    runner = str(asan_build[0] or c_build.RUNNER)  # the sanitizer build when this compiler has ASan/UBSan
    proc = subprocess.run([runner, "--fuzz", str(path), "--arena", str(1 << 20)], capture_output=True, text=True,
                          timeout=300)
    lines = proc.stdout.splitlines()
    started = [line for line in lines if line.endswith(" start")]
    assert proc.returncode == 0, f"crash at {started[-1] if started else 'start'}:\n{proc.stderr[-3000:]}"
    statuses = [int(line.split()[3]) for line in lines if " status " in line]
    plans = [int(line.split()[3]) for line in lines if " plan " in line]
    assert lines[-1] == f"done {n}" and len(statuses) == n and len(plans) == n
    assert all(0 <= s < len(backend.STATUS) for s in statuses + plans)
    # the mutations reach every layer: refusals of several kinds, and models that still load and run
    kinds = set(statuses)
    assert backend.STATUS["EDGE_OK"] in kinds and backend.STATUS["EDGE_MODEL_MALFORMED"] in kinds
    assert len(kinds) >= 5
