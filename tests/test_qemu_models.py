"""Bit-exactness on the emulated board: every int8/int16 shared model the C runtime runs (and two models our
converter produces) flashed to QEMU mps2-an386 in the serial-protocol firmware (firmware_c/app), fed seeded
random inputs over the full range of each input's dtype through the UART, and its outputs compared bit for
bit with our Python interpreter and with TFLM after the same number of invokes (3 for stateful models).
The seanet single-op models are also run on the input csv TFLM ships with them, against its golden csv.

Grouping (a flash costs ~2 s: linking the firmware against the shared runtime objects, booting, HELLO): each
full model gets its own board, serving all its input sets; the seanet single-op models are merged into ONE
model (their subgraphs side by side: disjoint tensors, each part's inputs and outputs kept as graph inputs
and outputs) flashed once per test worker, and each seanet test sends only its own part's inputs and reads
only its part's outputs. The peers always run the ORIGINAL model file, so a seanet test proves the board
computes that model's op exactly as TFLM does on that model.

The board runs integer models: models with a float input or output, and those the C runtime cannot run
(tests/conftest.py C_RUNTIME_CANNOT_RUN), are not collected. A collected model that does not fit the profile,
or whose inputs plus outputs exceed IO_LIMIT_BYTES (the UART moves ~9-10 KB/s), skips with the reason (and so
fails CI: tests/skip_policy.py). Every board
started here is stopped in a fixture finalizer.
"""

from __future__ import annotations

import math
import re
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import C_RUNTIME_CANNOT_RUN, SHARED_MODELS, shared_models

NEEDS = "apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"
PROFILE = "qemu-mps2-an386"
IO_LIMIT_BYTES = 160 * 1024  # inputs + outputs of one input set: ~17 s of UART at ~9 KB/s (mobilenet_v2: 148 KB)
STATEFUL_INVOKES = 3
NEAR_ZP = 16  # the extra input set of models that full-range noise saturates: zero point +- this
SEANET_PER_OP = 2
BYTES = {"INT8": 1, "UINT8": 1, "INT16": 2, "INT32": 4, "INT64": 8, "FLOAT32": 4, "FLOAT16": 2, "BOOL": 1}
STATE_OPS = {"VAR_HANDLE", "ASSIGN_VARIABLE", "READ_VARIABLE", "CALL_ONCE"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                       reason=f"needs QEMU and the Arm GCC toolchain: {NEEDS}"),
]


# ------------------------------------------------------------------------------------------------ cases
def _number(path: Path) -> int:
    m = re.search(r"(\d+)$", path.stem)
    return int(m.group(1)) if m else -1


def _for_the_board(path: Path) -> bool:
    """An integer model (int8/int16 inputs and outputs) the C runtime can run."""
    from edge_sdk.model import read_model

    if path.name in C_RUNTIME_CANNOT_RUN:
        return False
    ins, outs = _io_tensors(read_model(path.read_bytes()))
    types = {t.type for t in ins + outs}
    return not types & {"FLOAT32", "FLOAT16", "FLOAT64"} and bool(types & {"INT8", "INT16"})  # as _skip_reason


def _shared_cases() -> list:
    top = [p for p in shared_models("tflite-micro/*.tflite") if _for_the_board(p)]
    seanet = []
    folders = sorted({p.parent for p in shared_models("tflite-micro/seanet/*/*.tflite")})
    for folder in folders:
        seanet += sorted(folder.glob("*.tflite"), key=_number)[:SEANET_PER_OP]
    cases = [pytest.param(p, id=p.stem) for p in top] + [pytest.param(p, id=f"seanet-{p.stem}") for p in seanet]
    return cases or [pytest.param(None, id="shared-models-absent")]


# ------------------------------------------------------------------------------------------------ boards
@pytest.fixture
def board_factory(tmp_path, monkeypatch):
    """flash(model path) -> FlashResult on QEMU; every board started is stopped when the test ends."""
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    started = []

    def start(model_path):
        r = fl.flash(model_path, PROFILE, build_dir=tmp_path / f"build{len(started)}")
        started.append(r)
        return r

    yield start
    for r in started:
        if r.pid:
            qb._kill_group(r.pid, r.pid)
    qb.stop_board(all=True)
    assert qb.list_boards() == []


# ------------------------------------------------------------------------------------------------ helpers
def _io_tensors(model):
    sg = model.subgraphs[0]
    return [sg.tensors[i] for i in sg.inputs], [sg.tensors[i] for i in sg.outputs]


def _nbytes(t) -> int:
    return int(math.prod(int(d) for d in t.shape)) * BYTES.get(t.type, 4)


def _stateful(model) -> bool:
    names = {model.operator_codes[op.opcode_index].name for sg in model.subgraphs for op in sg.operators}
    return bool(names & STATE_OPS) or any(t.is_variable for sg in model.subgraphs for t in sg.tensors)


def _host_library() -> None:
    """Build/load the C host library under a lock between processes: edge_sdk.runtime.c_build builds a checkout's library in
    place (make writes libedge.so directly), so two xdist workers building it at once can load a half-written
    file ("file too short")."""
    import fcntl
    import hashlib
    import tempfile

    from edge_sdk.runtime import c_build, c_interpreter

    key = hashlib.sha256(str(c_build.HOST_TREE).encode()).hexdigest()[:12]
    with open(Path(tempfile.gettempdir()) / f"edge-sdk-host-{key}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            c_interpreter.library()
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _skip_reason(name: str, data: bytes, model) -> str | None:
    """Why this model is not run on the board (None: run it)."""
    from edge_sdk.runtime import c_interpreter
    from edge_sdk.targets.profiles import load_profile

    _host_library()

    ins, outs = _io_tensors(model)
    io_types = {t.type for t in ins + outs}
    if io_types & {"FLOAT32", "FLOAT16", "FLOAT64"} or not io_types & {"INT8", "INT16"}:
        return f"{name}: not an int8/int16 model (inputs/outputs {sorted(io_types)})"
    missing = c_interpreter.missing_ops(model)
    if missing:
        return f"{name}: the C runtime has no kernel for {', '.join(missing)}"
    profile = load_profile(PROFILE)
    problems = []
    if len(data) > profile.flash_model_bytes:
        problems.append(f"the model is {len(data)} B, {PROFILE} allows flash_model_bytes={profile.flash_model_bytes}")
    io = sum(_nbytes(t) for t in ins + outs)
    if io > IO_LIMIT_BYTES:
        problems.append(f"inputs+outputs are {io} B ({io / 1024:.0f} KB), over the {IO_LIMIT_BYTES // 1024} KB "
                        f"UART budget (~{io / 9216:.0f} s at ~9 KB/s)")
    if not problems:
        from edge_sdk.tools import flash as fl

        arena = fl.measure_arena(data, profile.ram_arena_bytes)
        if arena > profile.ram_arena_bytes:
            problems.append(f"its arena is {arena} B, {PROFILE} allows ram_arena_bytes={profile.ram_arena_bytes}")
    return f"{name}: " + "; ".join(problems) if problems else None


def _shape_inputs(model) -> dict[int, list[int]]:
    """Graph inputs of subgraph 0 that are a TRANSPOSE_CONV's output shape: {tensor index: that shape}."""
    sg = model.subgraphs[0]
    out = {}
    for op in sg.operators:
        if model.operator_codes[op.opcode_index].name == "TRANSPOSE_CONV" and op.inputs and op.inputs[0] in sg.inputs:
            out[op.inputs[0]] = [int(d) for d in sg.tensors[op.outputs[0]].shape]
    return out


def _random_inputs(name: str, model) -> list[np.ndarray]:
    """Seeded (by model name) random values over each input's full dtype range; an input that is the output
    shape of a TRANSPOSE_CONV gets that shape (random values there would make a malformed call, not a test)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    sg = model.subgraphs[0]
    shapes = _shape_inputs(model)
    xs = []
    for i in sg.inputs:
        t = sg.tensors[i]
        dtype = np.dtype(t.type.lower())
        if i in shapes:
            xs.append(np.array(shapes[i], dtype).reshape(tuple(t.shape)))
            continue
        info = np.iinfo(dtype)
        xs.append(rng.integers(info.min, info.max, size=tuple(int(d) for d in t.shape), dtype=dtype,
                               endpoint=True))
    return xs


def _python_steps(data: bytes, xs, invokes: int) -> list[list[np.ndarray]]:
    """Our interpreter's outputs after each of ``invokes`` invokes (the same inputs every time)."""
    from edge_sdk import Interpreter

    it = Interpreter(model_content=data)
    it.allocate_tensors()
    steps = []
    for _ in range(invokes):
        for d, x in zip(it.get_input_details(), xs):
            it.set_tensor(d["index"], x)
        it.invoke()
        steps.append([np.array(it.get_tensor(d["index"])) for d in it.get_output_details()])
    return steps


def _near_zero_point(name: str, model, xs) -> list[np.ndarray]:
    """Seeded inputs within NEAR_ZP of each input's zero point (shape inputs kept)."""
    rng = np.random.default_rng(zlib.crc32(f"{name}/near".encode()))
    sg = model.subgraphs[0]
    shapes = _shape_inputs(model)
    out = []
    for i, x in zip(sg.inputs, xs):
        q = sg.tensors[i].quantization
        if i in shapes or q is None or not len(q.zero_point):
            out.append(x)
            continue
        info = np.iinfo(x.dtype)
        v = int(q.zero_point[0]) + rng.integers(-NEAR_ZP, NEAR_ZP, size=x.shape, endpoint=True)
        out.append(np.clip(v, info.min, info.max).astype(x.dtype))
    return out


def _saturated(outputs) -> bool:
    """More than half of all output elements sit at their dtype's min or max."""
    flat = [o.reshape(-1) for o in outputs if o.dtype.kind in "iu"]
    if not flat:
        return False
    hits = sum(int(np.count_nonzero((o == np.iinfo(o.dtype).min) | (o == np.iinfo(o.dtype).max))) for o in flat)
    return hits * 2 > sum(o.size for o in flat)


def _same(got, want, what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: output {k} is {g.dtype}{g.shape}, " \
                                                          f"expected {w.dtype}{w.shape}"
        bad = np.flatnonzero(g.reshape(-1) != w.reshape(-1))
        assert bad.size == 0, (f"{what}: output {k} differs in {bad.size}/{g.size} elements, first at {bad[0]}: "
                               f"{g.reshape(-1)[bad[0]]} vs {w.reshape(-1)[bad[0]]} "
                               f"(max |diff| {np.abs(g.astype(np.int64) - w.astype(np.int64)).max()})")


_CSV_DTYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32}


def _read_csv(path: Path) -> np.ndarray:
    values = [int(v) for v in re.split(r"[,\s]+", path.read_text()) if v]
    return np.array(values, _CSV_DTYPES[path.stem.rsplit("_", 1)[1]])


def _golden_set(path: Path, model):
    """(inputs, golden outputs) from TFLM's csv files next to a seanet model, or None when it has none."""
    inputs = sorted(path.parent.glob(f"{path.stem}_input*_*.csv"),
                    key=lambda p: int(re.search(r"_input(\d+)_", p.name).group(1)))
    golden = sorted(path.parent.glob(f"{path.stem}_golden_*.csv"))
    ins, outs = _io_tensors(model)
    if not golden or len(inputs) != len(ins) or len(golden) != len(outs):
        return None
    xs = [_read_csv(p).reshape(tuple(t.shape)) for p, t in zip(inputs, ins)]
    ys = [_read_csv(p).reshape(tuple(t.shape)) for p, t in zip(golden, outs)]
    return xs, ys


def _expected(name: str, path: Path, golden: bool = False):
    """Skip when the model is not for the board; else (model bytes, model, invokes, input sets). Each set is
    (label, inputs, our Python interpreter's outputs after each invoke), checked equal to TFLM's after the
    same number of invokes (and to the golden csv). Sets: seeded full-range random inputs; TFLM's csv inputs
    (seanet); inputs near the zero point when full-range noise saturates most outputs (such outputs would
    hide a wrong kernel)."""
    from edge_sdk.model import read_model
    from tests.peers import run_tflm

    data = path.read_bytes()
    model = read_model(data)
    reason = _skip_reason(name, data, model)
    if reason:
        pytest.skip(reason)
    invokes = STATEFUL_INVOKES if _stateful(model) else 1
    sets = [("random", _random_inputs(name, model), None)]
    if golden:
        gs = _golden_set(path, model)
        assert gs is not None, f"{name}: no usable input/golden csv files next to the model"
        sets.append(("csv", gs[0], gs[1]))
    expected = []
    for label, xs, want in sets:
        steps = _python_steps(data, xs, invokes)
        expected.append((label, xs, steps))
        if label == "random" and _saturated(steps[-1]):
            near = _near_zero_point(name, model, xs)
            expected.append(("near-zero-point", near, _python_steps(data, near, invokes)))
    for label, xs, steps in expected:
        for k in range(invokes):
            tflm = run_tflm(data, xs, isolate=True, invocations=k + 1)
            _same(steps[k], tflm, f"{name} ({label} inputs, {k + 1} invoke(s)): Python vs TFLM")
        want = next((w for lab, _, w in sets if lab == label), None)
        if want is not None:
            _same(steps[-1], want, f"{name} ({label} inputs): Python/TFLM vs TFLM's golden csv")
    return data, model, invokes, expected


def _run_on_board(name: str, link, expected, invokes: int, in_pos, out_pos, where: str) -> list[str]:
    """Each input set on the board: from the initial state, one invoke at a time (outputs read after each),
    then again as one INVOKE of ``invokes`` runs; every read bit-exact with Python (= TFLM)."""
    for label, xs, steps in expected:
        link.reset_state()  # each input set starts from the initial state, like a fresh peer interpreter
        for pos, x in zip(in_pos, xs):
            link.set_input(pos, x)
        for k in range(invokes):
            assert link.invoke(1).runs == 1
            _same([link.get_output(p) for p in out_pos], steps[k],
                  f"{name} ({label} inputs, invoke {k + 1}): {where} vs Python and TFLM")
        if invokes > 1:
            link.reset_state()
            assert link.invoke(invokes).runs == invokes
            _same([link.get_output(p) for p in out_pos], steps[-1],
                  f"{name} ({label} inputs, INVOKE of {invokes} runs after RESET_STATE): {where} vs Python "
                  f"and TFLM")
    return [label for label, _, _ in expected]


def _check(name: str, path: Path, board_factory) -> list[str]:
    """A full model on its own board: flash ``path``, run every input set, compare with Python and TFLM."""
    from edge_sdk.device.serial_link import SerialLink

    data, model, invokes, expected = _expected(name, path)
    r = board_factory(path)
    with SerialLink(r.port, timeout=1.0) as link:
        link.expect_model(data)
        info = link.info()
        ins, outs = _io_tensors(model)
        assert [(s.type, s.shape) for s in info.inputs] == [(t.type, tuple(t.shape)) for t in ins]
        assert [(s.type, s.shape) for s in info.outputs] == [(t.type, tuple(t.shape)) for t in outs]
        return _run_on_board(name, link, expected, invokes, range(len(ins)), range(len(outs)), "QEMU")


# ------------------------------------------------------------------------------------------------ grouping
def _shifted(ids, base: int) -> list[int]:
    return [i + base if i >= 0 else i for i in ids]  # -1 (an omitted optional input) stays -1


def _merge(models) -> tuple[object, list[tuple[list[int], list[int]]]]:
    """One model running the single-subgraph ``models`` side by side in its subgraph 0; returns it and, per
    part, (its graph input positions, its graph output positions) in the merged model."""
    from dataclasses import replace

    from edge_sdk.model.types import Buffer, Model, SubGraph

    codes, code_index, buffers = [], {}, [Buffer()]
    tensors, operators, inputs, outputs, parts = [], [], [], [], []
    for k, m in enumerate(models):
        assert len(m.subgraphs) == 1, "only single-subgraph models are merged"
        sg = m.subgraphs[0]
        base = len(tensors)
        for t in sg.tensors:
            data = bytes(m.buffers[t.buffer].data) if t.buffer else b""
            if data:
                buffers.append(Buffer(data))
            tensors.append(replace(t, name=f"part{k}/{t.name}", buffer=len(buffers) - 1 if data else 0))
        for op in sg.operators:
            code = m.operator_codes[op.opcode_index]
            key = (code.builtin_code, code.custom_code, code.version)
            if key not in code_index:
                code_index[key] = len(codes)
                codes.append(replace(code))
            operators.append(replace(op, opcode_index=code_index[key], inputs=_shifted(op.inputs, base),
                                     outputs=_shifted(op.outputs, base),
                                     intermediates=_shifted(op.intermediates, base)))
        parts.append((list(range(len(inputs), len(inputs) + len(sg.inputs))),
                      list(range(len(outputs), len(outputs) + len(sg.outputs)))))
        inputs += [i + base for i in sg.inputs]
        outputs += [i + base for i in sg.outputs]
    merged = Model(operator_codes=codes, buffers=buffers, description="seanet models side by side",
                   subgraphs=[SubGraph(tensors=tensors, inputs=inputs, outputs=outputs, operators=operators,
                                       name="main")])
    return merged, parts


_SEANET = [p for p in (c.values[0] for c in _shared_cases()) if p is not None and p.parent.parent.name == "seanet"]


@pytest.fixture(scope="module")
def seanet_board(tmp_path_factory):
    """The seanet models the board can run, merged into one model and flashed once: yields
    {model path: (SerialLink, input positions, output positions)}; the board is stopped at the end."""
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl
    from edge_sdk.device.serial_link import SerialLink
    from edge_sdk.model import read_model, write_model

    folder = tmp_path_factory.mktemp("seanet")
    chosen, models = [], []
    for path in _SEANET:
        data = path.read_bytes()
        model = read_model(data)
        if _skip_reason(path.stem, data, model) is None:
            chosen.append(path)
            models.append(model)
    if not chosen:
        yield {}
        return
    merged, parts = _merge(models)
    merged_path = folder / "seanet_merged.tflite"
    merged_path.write_bytes(write_model(merged))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDGE_STATE_DIR", str(folder / "state"))
        r = link = None
        try:
            r = fl.flash(merged_path, PROFILE, build_dir=folder / "build")
            link = SerialLink(r.port, timeout=1.0)
            link.expect_model(merged_path.read_bytes())
            # inputs persist on the board and every part runs on every invoke: give each part's
            # TRANSPOSE_CONV output-shape inputs their value once (zeros are valid for the others)
            for path, model, (in_pos, _) in zip(chosen, models, parts):
                xs, shapes = _random_inputs(path.stem, model), _shape_inputs(model)
                for pos, x, index in zip(in_pos, xs, model.subgraphs[0].inputs):
                    if index in shapes:
                        link.set_input(pos, x)
            yield {p: (link, *part) for p, part in zip(chosen, parts)}
        finally:
            if link is not None:
                link.close()
            if r is not None and r.pid:
                qb._kill_group(r.pid, r.pid)
            qb.stop_board(all=True)
            assert qb.list_boards() == []


def _check_seanet(name: str, path: Path, seanet_board) -> list[str]:
    _, model, invokes, expected = _expected(name, path, golden=True)
    assert path in seanet_board, f"{name} runs but was not merged into the seanet board"
    link, in_pos, out_pos = seanet_board[path]
    info = link.info()
    ins, outs = _io_tensors(model)
    assert [(info.inputs[p].type, info.inputs[p].shape) for p in in_pos] == [(t.type, tuple(t.shape)) for t in ins]
    assert [(info.outputs[p].type, info.outputs[p].shape) for p in out_pos] == \
        [(t.type, tuple(t.shape)) for t in outs]
    return _run_on_board(name, link, expected, invokes, in_pos, out_pos,
                         f"QEMU (merged seanet firmware) on {path.name}")


# ------------------------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("path", [c for c in _shared_cases() if c.values[0] is None
                                  or c.values[0].parent.parent.name != "seanet"])
def test_shared_model_bit_exact_on_qemu(path, board_factory):
    if path is None:
        pytest.skip(f"reference models not found: {SHARED_MODELS} is absent in this checkout")
    assert _check(path.stem, path, board_factory)[0] == "random"


@pytest.mark.parametrize("path", _SEANET, ids=lambda p: p.stem)
def test_seanet_model_bit_exact_on_qemu(path, seanet_board):
    assert {"random", "csv"} <= set(_check_seanet(f"seanet/{path.stem}", path, seanet_board))


def test_seanet_merge_keeps_each_model():
    """The merged seanet model computes, per part, exactly what each original model computes (Python)."""
    from edge_sdk.model import read_model, write_model

    if len(_SEANET) < 2:
        pytest.skip(f"seanet models not found under {SHARED_MODELS}")
    models = [read_model(p.read_bytes()) for p in _SEANET[:4]]
    merged, parts = _merge(models)
    data = write_model(merged)
    sets = [_random_inputs(p.stem, m) for p, m in zip(_SEANET, models)]
    xs = [None] * sum(len(x) for x in sets)
    for (in_pos, _), part in zip(parts, sets):
        for pos, x in zip(in_pos, part):
            xs[pos] = x
    got = _python_steps(data, xs, 1)[-1]
    for p, m, (_, out_pos), part in zip(_SEANET, models, parts, sets):
        _same([got[i] for i in out_pos], _python_steps(p.read_bytes(), part, 1)[-1], f"merged part {p.stem}")


@pytest.fixture(scope="module")
def digits_models(tmp_path_factory):
    """examples/digits/digits_cnn.onnx through our converter, int8 and int16x8 (one calibration set)."""
    from converters import convert

    onnx = Path(__file__).resolve().parent.parent / "examples" / "digits" / "digits_cnn.onnx"
    calib = np.random.default_rng(0).random((16, 1, 8, 8)).astype(np.float32)
    folder = tmp_path_factory.mktemp("digits")
    paths = {}
    for mode in ("int8", "int16x8"):
        paths[mode] = folder / f"digits_cnn_{mode}.tflite"
        paths[mode].write_bytes(convert(str(onnx), quantize=mode, calibration=calib).tflite)
    return paths


@pytest.mark.parametrize("mode", ["int8", "int16x8"])
def test_converted_model_bit_exact_on_qemu(mode, digits_models, board_factory):
    from edge_sdk.model import read_model

    path = digits_models[mode]
    model = read_model(path.read_bytes())
    ins, outs = _io_tensors(model)
    want = "INT8" if mode == "int8" else "INT16"
    assert {t.type for t in ins + outs} == {want}, f"converter output has I/O {[t.type for t in ins + outs]}"
    assert _check(f"digits_cnn_{mode}", path, board_factory)[0] == "random"
