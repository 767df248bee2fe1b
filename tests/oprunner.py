"""Build one-operator .tflite models with our writer and compare our interpreter with the peers on them.

    x = T((1, 4), "INT8", scale=0.5, zero_point=-1)
    w = T((3, 4), "INT8", scale=[0.1, 0.2, 0.3], zero_point=0, data=np.ones((3, 4), np.int8))
    y = T((1, 3), "INT8", scale=0.25, zero_point=2)
    model = op_model("FULLY_CONNECTED", [x, w, None], [y], options={"fused_activation_function": "RELU"})
    ours = check_op(model, [np.zeros((1, 4), np.int8)])          # ours == TFLM, bit for bit

Inputs with ``data`` become constant tensors; variables (``is_variable=True``) become variable tensors; the
other inputs become the model's inputs, in order. ``None`` is an omitted optional input (index -1). Passing
the same ``T`` object twice makes both operator inputs one tensor.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge_sdk.errors import ModelError
from edge_sdk.model import schema
from edge_sdk.model.types import TENSOR_TYPES, Buffer, Model, Operator, OperatorCode, Quantization, SubGraph, Tensor
from edge_sdk.model.writer import option_defaults, options_for, write_model


@dataclass(eq=False)
class TensorSpec:
    shape: tuple[int, ...]
    type: str = "INT8"
    scale: float | list[float] | np.ndarray | None = None
    zero_point: int | list[int] | np.ndarray | None = None
    quantized_dimension: int = 0
    data: np.ndarray | None = None
    name: str | None = None
    is_variable: bool = False


def T(shape, type="INT8", scale=None, zero_point=None, quantized_dimension=0, data=None, name=None, is_variable=False):
    """A tensor of a one-op model: shape, TensorType name, quantization, and (for constants) its value."""
    if type not in TENSOR_TYPES:
        raise ValueError(f"unknown tensor type {type!r}")
    shape = tuple(int(d) for d in shape)
    if data is not None:
        data = np.asarray(data)
        if data.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"data has {data.size} values, shape {shape} needs {int(np.prod(shape))}")
    return TensorSpec(shape, type, scale, zero_point, quantized_dimension, data, name, is_variable)


def _quantization(spec: TensorSpec) -> Quantization | None:
    if spec.scale is None:
        return None
    scale = np.atleast_1d(np.asarray(spec.scale, dtype=np.float32))
    zp = spec.zero_point if spec.zero_point is not None else 0
    zp = np.atleast_1d(np.asarray(zp, dtype=np.int64))
    if zp.size == 1 and scale.size > 1:
        zp = np.full(scale.size, zp[0], np.int64)
    return Quantization(scale=scale, zero_point=zp, quantized_dimension=spec.quantized_dimension)


def _pack_nibbles(values: np.ndarray, bits: int) -> bytes:
    """int4 / uint4 / int2 values packed into bytes, lowest bits first (TFLite's packed layout)."""
    v = values.reshape(-1).astype(np.int64) & ((1 << bits) - 1)
    per = 8 // bits
    v = np.concatenate([v, np.zeros((-len(v)) % per, np.int64)]).reshape(-1, per)
    out = np.zeros(len(v), np.int64)
    for k in range(per):
        out |= v[:, k] << (bits * k)
    return out.astype(np.uint8).tobytes()


def _constant_bytes(spec: TensorSpec) -> bytes:
    if spec.type in ("INT4", "UINT4"):
        return _pack_nibbles(spec.data, 4)
    if spec.type == "INT2":
        return _pack_nibbles(spec.data, 2)
    dtype = TENSOR_TYPES[spec.type][1]
    if dtype is None:
        raise ValueError(f"cannot build constant data for tensor type {spec.type}")
    return np.ascontiguousarray(spec.data, dtype=dtype.newbyteorder("<")).tobytes()


# Models built by op_model, by what they were built from: a grid case builds its model once per runtime, and the
# flatbuffers writer costs more than running a small model; tests/conftest.py empties this after each module.
MODELS: dict[tuple, bytes] = {}


def _frozen(value):
    """A hashable, exact stand-in for an op_model argument (arrays by dtype, shape and bytes: no repr rounding)."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        value = np.asarray(value)
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return ("dict", tuple((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, (bytes, bytearray)):
        return ("bytes", bytes(value))
    return (type(value).__name__, value)


def _model_key(op, inputs, outputs, options, version, custom_options, options_type) -> tuple:
    first_use: dict[int, int] = {}  # the same T object twice is one tensor: the key keeps which repeat which
    specs = []
    for spec in list(inputs) + list(outputs):
        if spec is None:
            specs.append(None)
            continue
        position = first_use.setdefault(id(spec), len(first_use))
        specs.append((position, spec.shape, spec.type, _frozen(spec.scale), _frozen(spec.zero_point),
                      spec.quantized_dimension, _frozen(spec.data), spec.name, spec.is_variable))
    return (op, len(inputs), tuple(specs), _frozen(options), version, _frozen(custom_options), options_type)


def op_model(op, inputs, outputs, options=None, version=1, custom_options=None, options_type=None) -> bytes:
    """A .tflite model holding one operator ``op`` (a builtin name like "CONV_2D", or a custom op's code)."""
    key = _model_key(op, inputs, outputs, options, version, custom_options, options_type)
    if key not in MODELS:
        MODELS[key] = write_model(op_model_object(op, inputs, outputs, options, version, custom_options, options_type))
    return MODELS[key]


def op_model_object(op, inputs, outputs, options=None, version=1, custom_options=None, options_type=None) -> Model:
    """The ``Model`` that ``op_model`` serializes (for tests that want to tweak it before writing)."""
    tensors: list[Tensor] = []
    buffers = [Buffer(b"")]
    index_of: dict[int, int] = {}
    model_inputs: list[int] = []

    def add(spec: TensorSpec, default_name: str) -> int:
        if id(spec) in index_of:
            return index_of[id(spec)]
        buffer = 0
        if spec.data is not None:
            buffers.append(Buffer(_constant_bytes(spec)))
            buffer = len(buffers) - 1
        tensors.append(
            Tensor(
                name=spec.name or default_name,
                shape=spec.shape,
                type=spec.type,
                buffer=buffer,
                quantization=_quantization(spec),
                is_variable=spec.is_variable,
            )
        )
        index_of[id(spec)] = len(tensors) - 1
        return len(tensors) - 1

    op_inputs = []
    for i, spec in enumerate(inputs):
        if spec is None:
            op_inputs.append(-1)
            continue
        fresh = id(spec) not in index_of
        idx = add(spec, f"input_{i}")
        op_inputs.append(idx)
        if fresh and spec.data is None and not spec.is_variable:
            model_inputs.append(idx)
    op_outputs = [add(spec, f"output_{i}") for i, spec in enumerate(outputs)]

    if op in schema.BUILTIN_OPERATOR_CODES and op != "CUSTOM":
        code = OperatorCode(schema.BUILTIN_OPERATOR_CODES[op], None, version)
    else:
        code = OperatorCode(schema.CUSTOM_CODE, op, version)
    if options_type is None and not code.is_custom:
        options_type = options_for(op)
    opts = {}
    if options_type is not None:
        opts = option_defaults(options_type)
        opts.update(options or {})
    elif options:
        raise ModelError(f"{op} has no builtin options table: pass options_type to give it options")
    operator = Operator(
        opcode_index=0,
        inputs=op_inputs,
        outputs=op_outputs,
        options_type=options_type,
        options=opts,
        custom_options=bytes(custom_options) if custom_options is not None else None,
    )
    subgraph = SubGraph(tensors=tensors, inputs=model_inputs, outputs=op_outputs, operators=[operator], name="main")
    return Model(operator_codes=[code], subgraphs=[subgraph], buffers=buffers, description="edge-sdk op test")


def _fed(x, detail) -> np.ndarray:
    """An input as set_tensor takes it: C-contiguous; a 0-d value stays 0-d for a scalar input (np.ascontiguousarray
    alone makes it shape (1,), which a (1,) input takes and a () input refuses)."""
    if np.ndim(x) == 0 and len(detail["shape"]) == 0:
        return np.array(x)
    return np.ascontiguousarray(x)


def run_ours(model_bytes: bytes, inputs) -> list[np.ndarray]:
    """Outputs of our interpreter (edge_sdk.Interpreter, the LiteRT-style API) for one invoke."""
    from edge_sdk import Interpreter

    interp = Interpreter(model_content=bytes(model_bytes))
    interp.allocate_tensors()
    details = interp.get_input_details()
    if len(details) != len(inputs):
        raise AssertionError(f"the model has {len(details)} inputs, {len(inputs)} given")
    for d, x in zip(details, inputs):
        interp.set_tensor(d["index"], _fed(x, d))
    interp.invoke()
    return [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]


def run_peer(model_bytes: bytes, inputs, peer: str = "tflm", isolate: bool = False,
             invocations: int = 1) -> list[np.ndarray]:
    """A peer's outputs after ``invocations`` invokes with the same inputs: "tflm", "litert" (reference kernels),
    "litert_opt", or "python" (our interpreter: the reference of a C case where no peer runs the op or a
    tolerance hides what bit-exactness would show)."""
    from tests import peers

    if peer == "python":
        return run_invokes("python", model_bytes, inputs, invocations, check_reset=False)
    if peer == "tflm":
        return peers.run_tflm(model_bytes, inputs, isolate=isolate, invocations=invocations)
    if peer in ("litert", "litert_ref"):
        return peers.run_litert(model_bytes, inputs, reference=True, isolate=isolate, invocations=invocations)
    if peer == "litert_opt":
        return peers.run_litert(model_bytes, inputs, reference=False, isolate=isolate, invocations=invocations)
    raise ValueError(f"unknown peer {peer!r} (tflm, litert, litert_opt, python)")


# The peers' outputs per case, keyed by (peer, model bytes, inputs): a test on the runtime grid runs its case on
# each runtime, the peer once (whichever runtime asks first). tests/conftest.py empties the dict after each module
# and, under xdist, points PEER_CACHE_DIR at a folder the session's workers share, so a case whose two runtimes
# land on two workers still runs its peer once (a lock per case: the second worker waits for the first's answer).
PEER_OUTPUTS: dict[str, list[np.ndarray]] = {}
PEER_CRASHES: dict[str, Exception] = {}
PEER_CACHE_DIR: Path | None = None


def case_key(model_bytes: bytes, inputs, peer: str, invocations: int = 1) -> str:
    """A digest of what a peer's outputs depend on: the peer, the invokes, the model, each input's dtype, shape
    and bytes."""
    h = hashlib.sha256(f"{peer}\0{invocations}\0".encode())
    h.update(bytes(model_bytes))
    for x in inputs:
        x = np.ascontiguousarray(x)
        h.update(f"\0{x.dtype.str}{x.shape}\0".encode())
        h.update(x.tobytes())
    return h.hexdigest()


def peer_outputs(model_bytes: bytes, inputs, peer: str = "tflm", isolate: bool = False,
                 invocations: int = 1) -> list[np.ndarray]:
    """``run_peer``'s outputs, computed once per (peer, invokes, model, inputs) in a session (copies: callers
    may write)."""
    from tests.peers import PeerCrashed

    key = case_key(model_bytes, inputs, peer, invocations)
    if key in PEER_CRASHES:  # a peer that crashed on this case crashes again: not run twice
        raise PEER_CRASHES[key]
    if key not in PEER_OUTPUTS:
        try:
            PEER_OUTPUTS[key] = _shared_peer_outputs(key, model_bytes, inputs, peer, isolate, invocations)
        except PeerCrashed as crash:
            PEER_CRASHES[key] = crash
            raise
    return [a.copy() for a in PEER_OUTPUTS[key]]


def keep_python_outputs(model_bytes: bytes, inputs, outputs, invocations: int = 1) -> None:
    """The Python case's own outputs, left as the "python" peer's for the C case of the same grid case."""
    PEER_OUTPUTS.setdefault(case_key(model_bytes, inputs, "python", invocations), [np.array(a) for a in outputs])


def _shared_peer_outputs(key: str, model_bytes: bytes, inputs, peer: str, isolate: bool,
                         invocations: int) -> list[np.ndarray]:
    if PEER_CACHE_DIR is None:
        return run_peer(model_bytes, inputs, peer, isolate=isolate, invocations=invocations)
    import fcntl
    import pickle

    done = PEER_CACHE_DIR / f"{key}.pkl"
    with open(PEER_CACHE_DIR / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.exists():
            return pickle.loads(done.read_bytes())
        outputs = run_peer(model_bytes, inputs, peer, isolate=isolate, invocations=invocations)
        partial = done.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(pickle.dumps(outputs))
        partial.replace(done)
        return outputs


def assert_same(ours, theirs, rtol: float = 0.0, atol: float = 0.0, what: str = "ours vs peer") -> None:
    """Same count, shapes, dtypes; values equal (exactly when both tolerances are 0)."""
    assert len(ours) == len(theirs), f"{what}: {len(ours)} outputs vs {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, f"{what}: output {i} shape {a.shape} vs {b.shape}"
        assert a.dtype == b.dtype, f"{what}: output {i} dtype {a.dtype} vs {b.dtype}"
        if rtol == 0.0 and atol == 0.0:
            same = np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
            if not same:
                diff = a != b if a.dtype.kind not in "fc" else ~((a == b) | (np.isnan(a) & np.isnan(b)))
                where = np.argwhere(diff)
                first = tuple(int(k) for k in where[0]) if where.size else ()
                extra = ""
                if a.dtype.kind in "iu":
                    extra = f", max |diff| {int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))))}"
                raise AssertionError(
                    f"{what}: output {i} differs in {int(diff.sum())} of {a.size} values{extra}; "
                    f"first at {first}: {a[first]!r} vs {b[first]!r}"
                )
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{what}: output {i}")


def check_op(model_bytes: bytes, inputs, peer: str = "tflm", rtol: float = 0.0, atol: float = 0.0, isolate: bool = False):
    """Run ours and the peer ("tflm", "litert" = LiteRT reference kernels, or a list of them); assert equal.

    Returns our outputs.
    """
    ours = run_ours(model_bytes, inputs)
    for p in [peer] if isinstance(peer, str) else list(peer):
        theirs = run_peer(model_bytes, inputs, p, isolate=isolate)
        assert_same(ours, theirs, rtol, atol, what=f"ours vs {p}")
    return ours


def check_on(runtime: str, model_bytes: bytes, inputs, peer: str | list[str] = "tflm", rtol: float = 0.0,
             atol: float = 0.0, isolate: bool = False, c_equals_python: bool = False,
             python_tol: tuple[float, float] = (0.0, 0.0)) -> list[np.ndarray]:
    """``check_op`` on the runtime grid: ``runtime``'s outputs ("python" or "c") against each peer's, the peer run
    once per case (``peer_outputs``). With ``c_equals_python`` the C case also equals the Python interpreter's
    outputs, bit for bit unless ``python_tol`` (rtol, atol) says otherwise (what a tolerance against the peer does
    not imply: float kernels that keep Python's order of operations); the Python case leaves its outputs for it.
    Returns the runtime's outputs."""
    ours = run_on(runtime, model_bytes, inputs)
    if runtime == "python" and c_equals_python:
        keep_python_outputs(model_bytes, inputs, ours)
    for p in [peer] if isinstance(peer, str) else list(peer):
        assert_same(ours, peer_outputs(model_bytes, inputs, p, isolate=isolate), rtol, atol, what=f"{runtime} vs {p}")
    if runtime == "c" and c_equals_python:
        assert_same(ours, peer_outputs(model_bytes, inputs, "python"), *python_tol, what="c vs python")
    return ours


def run_invokes(runtime: str, model_bytes: bytes, inputs, invocations: int = 1,
                check_reset: bool = True) -> list[np.ndarray]:
    """``runtime``'s outputs after ``invocations`` invokes with the same inputs (state kept between invokes);
    with ``check_reset``, reset_all_variables then one invoke must give the first invoke's outputs again."""
    from edge_sdk import Interpreter

    if runtime not in ("python", "c"):
        raise ValueError(f"runtime must be 'python' or 'c', not {runtime!r}")
    interp = Interpreter(model_content=bytes(model_bytes), backend=runtime)
    interp.allocate_tensors()

    def invoke():
        for d, x in zip(interp.get_input_details(), inputs):
            interp.set_tensor(d["index"], _fed(x, d))
        interp.invoke()
        return [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]

    first = outputs = invoke()
    for _ in range(invocations - 1):
        outputs = invoke()
    if check_reset:
        interp.reset_all_variables()
        for a, b in zip(first, invoke()):
            assert np.array_equal(a, b), f"{runtime}: reset_all_variables did not restore the first invoke's result"
    return outputs


def refused_on(runtime: str, model_bytes: bytes, inputs, error: type[Exception], match: str | None = None):
    """The runtime refuses the model (at allocate_tensors or invoke) with ``error`` whose message matches."""
    import pytest

    with pytest.raises(error, match=match):
        run_on(runtime, model_bytes, inputs)


def refusal_on(runtime: str, model_bytes: bytes, error: type[Exception] | tuple = ModelError) -> Exception:
    """The error ``runtime`` refuses the model with at allocate_tensors (``error``, or one of a tuple): for a test
    of the refusal's message or kind."""
    import pytest

    from edge_sdk import Interpreter

    if runtime not in ("python", "c"):
        raise ValueError(f"runtime must be 'python' or 'c', not {runtime!r}")
    if runtime == "c":
        from tests.conftest import require_c_runtime

        require_c_runtime()
    with pytest.raises(error) as info:
        Interpreter(model_content=bytes(model_bytes), backend=runtime).allocate_tensors()
    return info.value


def flex_options(options: dict) -> bytes:
    """A custom op's options as a FlexBuffers map (bool, int, else float values), by the flatbuffers package's
    encoder (test-only: independent of our readers)."""
    from flatbuffers import flexbuffers

    b = flexbuffers.Builder()
    with b.Map():
        for key, value in options.items():
            if isinstance(value, bool):
                b.Bool(key, value)
            elif isinstance(value, int):
                b.Int(key, value)
            else:
                b.Float(key, value)
    return bytes(b.Finish())


# ------------------------------------------------------------------------- what firmware_c/tools/image_main.c does

def image_main_inputs(interp, every_round: bool = False) -> list:
    """The inputs tools/image_main.c writes before its second (reported) invoke: bytes from its LCG (seed 12345,
    top byte of each step), two rounds, input by input. ``every_round``: both rounds' inputs, [first, second]
    (image_main_rounds)."""
    rounds = image_main_rounds(interp)
    return rounds if every_round else rounds[-1]


def image_main_rounds(interp) -> list[list[np.ndarray]]:
    """The inputs of both of tools/image_main.c's invokes, round by round: a stateful model's reported (second)
    output depends on the first round too."""
    seed = 12345
    rounds = []
    for _round in range(2):
        feeds = []
        for d in interp.get_input_details():
            n = int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
            out = bytearray(n)
            for k in range(n):
                seed = (seed * 1664525 + 1013904223) & 0xFFFFFFFF
                out[k] = seed >> 24
            feeds.append(np.frombuffer(bytes(out), d["dtype"]).reshape(d["shape"]))
        rounds.append(feeds)
    return rounds


def image_main_hash(data: bytes) -> int:
    """The FNV-1a hash tools/image_main.c prints of the output bytes."""
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


# The ARM build folder the session's M4 images share (tests/conftest.py sets it; under xdist one folder for all
# workers): every image test used to compile the whole Cortex-M4 library in its own tmp folder (~30-60 s each);
# now the library objects (one set per type switch, TYPE_TAG) are compiled once per session and each image only
# compiles image_main.c, its op table and its model, and links. None: each call builds in the caller's folder.
M4_BUILD_DIR: Path | None = None
M4_BOARD = "qemu-mps2-an386"


def m4_image(model, build: Path, *make_vars: str) -> Path:
    """``make image CPU=cortex-m4 BOARD=qemu-mps2-an386 MODELS="model..." [make_vars]`` (what ``make cortex-m4
    BOARD=... MODEL=... ARM_BUILD=build`` makes; ``model``: a path, or a list of paths linked into one image that
    runs them in turn: m4_image_reports), built in the session's shared ARM build folder (M4_BUILD_DIR) under a
    file lock, then the image folder copied to ``build/cortex-m4/qemu-mps2-an386`` (returned: edge-image.elf, its
    .map, edge_ops_generated.c, the objects), as if built there. A failed build fails the calling test."""
    import fcntl
    import shutil
    import subprocess

    models = [Path(m).resolve() for m in (model if isinstance(model, (list, tuple)) else [model])]
    fw = Path(__file__).resolve().parent.parent / "firmware_c"
    shared = M4_BUILD_DIR if M4_BUILD_DIR is not None else build
    shared.mkdir(parents=True, exist_ok=True)
    built = shared / "cortex-m4" / M4_BOARD
    with open(shared / "image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one image at a time in the folder (released when the file closes)
        # model_data.c depends on the models' paths by mtime: another test's model, built after this test wrote its
        # file, would look up to date; the image is always relinked (image_main.o is FORCE'd)
        for stale in ("model_data.c", "model_data.o", "edge-image.elf", "edge-image.map"):
            (built / stale).unlink(missing_ok=True)
        # the models as MODELS (MODEL= empty): one op table of their ops, their type switches, one image running each
        proc = subprocess.run(["make", "-C", str(fw), "--no-print-directory", f"-j{os.cpu_count() or 1}", "image",
                               "CPU=cortex-m4", f"BOARD={M4_BOARD}", "MODEL=", f"MODELS={' '.join(map(str, models))}",
                               f"ARM_BUILD={shared.resolve()}", *make_vars],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"make image {models}:\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
        image_dir = build / "cortex-m4" / M4_BOARD
        if shared.resolve() != Path(build).resolve():
            shutil.copytree(built, image_dir, dirs_exist_ok=True)
    return image_dir


def run_m4_image(elf: Path, timeout: float = 120) -> str:
    """The image run under qemu-system-arm (mps2-an386, semihosting exit): its UART output, CRs removed. A run
    that fails or does not report status 0 fails the calling test (an image of several models: m4_image_reports
    names the model)."""
    import subprocess

    run = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel",
                          str(elf), "-icount", "shift=0", "-serial", "stdio", "-semihosting-config",
                          "enable=on,target=native"], capture_output=True, text=True, timeout=timeout)
    out = run.stdout.replace("\r", "")
    assert run.returncode == 0 and "status 0" in out, f"{elf}: {out[-500:]}{run.stderr[-500:]}"
    return out


def m4_image_reports(elf: Path, names: list[str], timeout: float = 120) -> dict[str, str]:
    """An image of several models (m4_image with a list, in the order of ``names``) booted once under qemu-system-arm:
    each model's report (the lines a one-model image prints: status, arena, op, out), by name. A run that fails,
    or a model whose report is missing, incomplete or not status 0, fails the calling test naming that model.
    ``timeout``: per model (the image runs them one after another)."""
    import re
    import subprocess

    run = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel",
                          str(elf), "-icount", "shift=0", "-serial", "stdio", "-semihosting-config",
                          "enable=on,target=native"], capture_output=True, text=True,
                         timeout=timeout * max(1, len(names)))
    out = run.stdout.replace("\r", "")
    if len(names) == 1:  # a one-model image prints no "model M" line
        sections = [out]
    else:
        sections = re.split(r"^model \d+\n", out, flags=re.M)[1:]
    reports = {}
    for k, name in enumerate(names):
        text = sections[k] if k < len(sections) else ""
        last = k == len(names) - 1
        statuses = re.findall(r"^status (\d+)$", text, re.M)
        assert statuses == ["0"] and re.search(r"^out 0 \d+$", text, re.M), (
            f"{name} (model {k} of the image {elf}): {text[-500:] or 'no report'}"
            f"{run.stderr[-500:] if last or not text else ''}")
        reports[name] = text.replace("done\n", "") if last else text
    assert run.returncode == 0 and out.rstrip().endswith("done"), f"{elf}: {out[-500:]}{run.stderr[-500:]}"
    return reports


def m4_image_mismatches(models: dict, build: Path, init_flags: int = 0) -> list[str]:
    """Each model (name -> bytes) built into firmware_c's image (tools/image_main.c) for the Cortex-M4 board and run
    under qemu-system-arm: the names whose output hash differs from the Python interpreter's on the same inputs
    (a failed build or run fails the calling test). ``init_flags``: the image's edge_init_ex flags (2:
    EDGE_INIT_MEMORY_MIN, the least-RAM request's kernels). All the models go into ONE image booted once (each
    reports as in an image of its own: m4_image_reports), built with the session's library objects (``m4_image``)."""
    import re

    from edge_sdk import Interpreter

    paths = []
    for name, model in models.items():
        path = build.parent / f"{name}.tflite"
        path.write_bytes(model)
        paths.append(path)
    image_dir = m4_image(paths, build, f"IMAGE_DEFS=-DEDGE_IMAGE_INIT_FLAGS={int(init_flags)}u")
    reports = m4_image_reports(image_dir / "edge-image.elf", list(models))
    failures = []
    for name, model in models.items():
        py = Interpreter(model_content=model)
        py.allocate_tensors()
        for d, x in zip(py.get_input_details(), image_main_inputs(py)):
            py.set_tensor(d["index"], x)
        py.invoke()
        want = image_main_hash(py.get_tensor(py.get_output_details()[0]["index"]).tobytes())
        got = re.search(r"^out 0 (\d+)$", reports[name], re.M)
        if not got or got.group(1) != str(want):
            failures.append(name)
    return failures


def run_c(model: bytes, inputs) -> list[np.ndarray]:
    """The model through the C runtime's binding (Interpreter(backend="c")): its outputs, as copies. Inputs keep
    their shapes, 0-d included. Without gcc / make the calling test skips for conftest's one reason (a test that
    checks the C runtime beside other things: tests/test_import_onnx_compare.py)."""
    from edge_sdk import Interpreter
    from edge_sdk.runtime.c_interpreter import CInterpreter
    from tests.conftest import require_c_runtime

    require_c_runtime()
    interp = Interpreter(model_content=model, backend="c")
    assert isinstance(interp, CInterpreter)
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], np.array(x, order="C"))
    interp.invoke()
    return [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]


def run_on(runtime: str, model: bytes, inputs) -> list[np.ndarray]:
    """One invoke of ``model`` on ``runtime`` ("python": run_ours, "c": run_c; the conftest ``runtime`` grid)."""
    if runtime not in ("python", "c"):
        raise ValueError(f"runtime must be 'python' or 'c', not {runtime!r}")
    return run_c(model, inputs) if runtime == "c" else run_ours(model, inputs)


def fails_then_runs_as_litert(runtime: str, case) -> None:
    """An out-of-range case ``(model, inputs, good, bad, op name, entry)``, ``inputs(values)`` giving the model's
    inputs: the ``bad`` values fail the invoke with one DataError line naming node 0, its op and ``entry``; then
    (the C runtime's next invoke runs as before) the ``good`` values give LiteRT's result exactly."""
    from edge_sdk.errors import DataError

    model, inputs, good, bad, name, entry = case
    try:
        run_on(runtime, model, inputs(bad))
    except DataError as err:
        text = str(err)
        assert f"node 0 ({name}" in text and entry in text and "\n" not in text, text
    else:
        raise AssertionError(f"{name}: the out-of-range values ran without a DataError")
    (ours,) = run_on(runtime, model, inputs(good))
    (want,) = run_peer(model, inputs(good), "litert", isolate=True)
    np.testing.assert_array_equal(ours, want)
