"""The C runtime on the Raspberry Pi's CPUs: firmware_c cross-built for aarch64 and armhf (make aarch64 / armhf,
firmware_c/cross.mk) and its runner edge-run-c run under qemu-user give the same output bytes as the x86-64
host build (float32 within a few ulps, since libm differs between the CPUs), and the same values as our Python
interpreter (integers exactly, float32 within 1e-5).

Models: the ../shared models the C runtime runs whole (c_interpreter.missing_ops picks them; every operator's
output is made a model output too, so each intermediate tensor is compared, not only a saturated softmax) and
one-operator models from our writer (int8/int16/float CONV_2D, DEPTHWISE_CONV_2D, pooling, FULLY_CONNECTED,
SOFTMAX, LOGISTIC/TANH, LSTM over several invokes). Inputs are seeded."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.model import read_model, write_model
from tests.conftest import C_RUNTIME_CANNOT_RUN, needs_c_runtime, shared_models
from tests.oprunner import T, op_model

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"

pytestmark = [
    pytest.mark.slow,
    needs_c_runtime,
]

# arch: (compiler, qemu, sysroot (-L), dynamic loader in it, Debian packages, ELF e_machine, emulated CPU: the
# oldest Pi core of that userland, so an instruction it lacks would fault: Pi 3's Cortex-A53, Pi 2's Cortex-A7)
ARCHES = {
    "aarch64": ("aarch64-linux-gnu-gcc", "qemu-aarch64", "/usr/aarch64-linux-gnu", "lib/ld-linux-aarch64.so.1",
                "gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user", 183, "cortex-a53"),
    "armhf": ("arm-linux-gnueabihf-gcc", "qemu-arm", "/usr/arm-linux-gnueabihf", "lib/ld-linux-armhf.so.3",
              "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-user", 40, "cortex-a7"),
}
HOST_RUNNER = FW / "build" / "host" / "edge-run-c"


def _missing_tools(arch: str) -> str | None:
    cc, qemu, sysroot, loader, pkgs, _, _ = ARCHES[arch]
    absent = [t for t in (cc, qemu) if shutil.which(t) is None]
    if not (Path(sysroot) / loader).exists():
        absent.append(f"{sysroot}/{loader}")
    if absent:
        return f"{', '.join(absent)} not found: apt-get install {pkgs}"
    return None


@pytest.fixture(scope="module")
def builds():
    """Builds the host runner and every cross runner whose tools are present (once; a lock keeps parallel
    workers from compiling into the same directory). {arch: runner path, or the skip reason as a str}."""
    from edge_sdk.runtime import c_build

    (FW / "build").mkdir(exist_ok=True)
    out: dict[str, Path | str] = {}
    with open(FW / "build" / ".cross.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        c_build.build()
        for arch in ARCHES:
            reason = _missing_tools(arch)
            if reason:
                out[arch] = reason
                continue
            proc = subprocess.run(["make", "-C", str(FW), "-j2", arch], capture_output=True, text=True, timeout=600,
                                  check=False)
            assert proc.returncode == 0, f"make {arch} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
            out[arch] = FW / "build" / arch / "edge-run-c"
    return out


@pytest.fixture(params=list(ARCHES))
def arch(request, builds):
    got = builds[request.param]
    if isinstance(got, str):
        pytest.skip(f"cannot cross-build/run for {request.param}: {got}")
    return request.param


def _run(runner_cmd: list[str], model: Path, feeds: list[np.ndarray], tmp: Path, invocations: int) -> bytes:
    inp, outp = tmp / "in.bin", tmp / "out.bin"
    inp.write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
    outp.unlink(missing_ok=True)
    proc = subprocess.run([*runner_cmd, str(model), str(inp), str(outp), "--invocations", str(invocations)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"{' '.join(runner_cmd)} {model.name}: exit {proc.returncode}\n{proc.stderr}"
    return outp.read_bytes()


def _qemu_cmd(arch: str, runner: Path) -> list[str]:
    _, qemu, sysroot, _, _, _, cpu = ARCHES[arch]
    return [qemu, "-cpu", cpu, "-L", sysroot, str(runner)]


def _feeds(model: bytes, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    feeds = []
    for d, required in zip(interp.get_input_details(), interp.required_input_values()):
        dt, shape = np.dtype(d["dtype"]), tuple(d["shape"])
        if required is not None:  # an output shape an op reads (seanet's TRANSPOSE_CONV output_shape input)
            feeds.append(required.astype(dt).reshape(shape))
        elif dt.kind == "f":
            feeds.append(rng.uniform(-1, 1, shape).astype(dt))
        else:
            info = np.iinfo(dt)
            feeds.append(rng.integers(info.min, info.max, shape, endpoint=True).astype(dt))
    return feeds


def _python(model: bytes, feeds, invocations: int) -> list[np.ndarray]:
    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    for _ in range(invocations):
        for d, x in zip(interp.get_input_details(), feeds):
            interp.set_tensor(d["index"], x)
        interp.invoke()
    return [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]


def _split(raw: bytes, like: list[np.ndarray]) -> list[np.ndarray]:
    out, pos = [], 0
    for ref in like:
        n = ref.nbytes
        out.append(np.frombuffer(raw[pos:pos + n], ref.dtype).reshape(ref.shape))
        pos += n
    assert pos == len(raw), f"the runner wrote {len(raw)} bytes, the outputs take {pos}"
    return out


def _check(arch: str, runner: Path, model: bytes, tmp: Path, seed: int, invocations: int = 1) -> bytes:
    """Cross output bytes == host output bytes, and == the Python interpreter's values. Returns the bytes."""
    path = tmp / "model.tflite"
    path.write_bytes(model)
    feeds = _feeds(model, seed)
    # the host build's float SIMD paths (FMA) give aarch64's NEON bits; armhf has no fast paths: compare it with
    # the host's portable kernels (EDGE_SIMD_LEVEL=0), the same arithmetic
    host = _run(([] if arch == "aarch64" else ["env", "EDGE_SIMD_LEVEL=0"]) + [str(HOST_RUNNER)], path, feeds, tmp,
                invocations)
    cross = _run(_qemu_cmd(arch, runner), path, feeds, tmp, invocations)
    want = _python(model, feeds, invocations)
    got = _split(cross, want)
    if cross != host:
        # integers: the same bytes. float32: the runtime's own arithmetic is the same on every CPU, but libm is
        # not (glibc's tanhf differs by an ulp between x86-64 and aarch64), so a float may differ in its last bits
        bad = [i for i, (a, b) in enumerate(zip(got, _split(host, want))) if a.tobytes() != b.tobytes()
               and (a.dtype.kind != "f" or not np.allclose(a, b, rtol=1e-6, atol=1e-7))]
        if bad:
            raise AssertionError(f"{arch} outputs differ from x86-64's in outputs {bad[:10]} (of {len(want)})")
    for i, (a, b) in enumerate(zip(got, want)):
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"output {i} vs Python")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"output {i} vs Python")
    return cross


# ------------------------------------------------------------------------------------------------ the builds

def test_cross_binaries_are_for_the_target_cpu(arch, builds):
    """ELF class/machine of the library and the runner; armhf: the hard-float ABI (the Pi's 32-bit userland)."""
    for f in (builds[arch], builds[arch].with_name("libedge.so")):
        head = f.read_bytes()[:64]
        assert head[:4] == b"\x7fELF", f
        assert head[4] == (2 if arch == "aarch64" else 1), f"{f}: ELF class"
        assert int.from_bytes(head[18:20], "little") == ARCHES[arch][5], f"{f}: e_machine"
        if arch == "armhf":
            flags = int.from_bytes(head[36:40], "little")
            assert flags & 0x400, f"{f}: not EF_ARM_ABI_FLOAT_HARD (e_flags {flags:#x})"


def test_cross_runner_refuses_an_unsupported_op_like_the_host(arch, builds, tmp_path):
    """Init errors behave the same on the target: exit status 3 naming the op."""
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    y = g.tensor("y", (1, 4), "FLOAT32")
    g.op("SKIP_GRAM", [x], [y])  # a string op: no C kernel
    g.output(y)
    path = tmp_path / "skip_gram.tflite"
    write_model(g.build(), path)
    proc = subprocess.run([*_qemu_cmd(arch, builds[arch]), str(path), "/dev/null", str(tmp_path / "o.bin")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 3 and "SKIP_GRAM" in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------------------------ shared models

def _whole_models() -> list[Path]:
    """The ../shared models to run whole: the top-level tflite-micro ones and the first two of each seanet
    layer folder, less those the C runtime cannot run (tests/conftest.py C_RUNTIME_CANNOT_RUN)."""
    picked = [p for p in shared_models("tflite-micro/*.tflite") if p.name not in C_RUNTIME_CANNOT_RUN]
    folders: dict[Path, list[Path]] = {}
    for p in shared_models("tflite-micro/seanet/**/*.tflite"):
        folders.setdefault(p.parent, []).append(p)
    for paths in folders.values():
        picked += sorted(paths, key=lambda p: (len(p.stem), p.stem))[:2]
    return picked


def _expose_all(model) -> bytes:
    """Every operator output of subgraph 0 made a model output as well."""
    sg = model.subgraphs[0]
    for op in sg.operators:
        for t in op.outputs:
            if t >= 0 and t not in sg.outputs:
                sg.outputs.append(t)
    return write_model(model)


def _invocations(model) -> int:
    """3 for models that keep state between invokes (variable tensors or resource variables), else 1."""
    stateful = any(t.is_variable for sg in model.subgraphs for t in sg.tensors) or any(
        model.operator_codes[op.opcode_index].name == "VAR_HANDLE" for sg in model.subgraphs for op in sg.operators)
    return 3 if stateful else 1


def _model_id(p: Path) -> str:
    return f"{p.parent.name}/{p.name}" if "seanet" in p.parts else p.name


@pytest.mark.parametrize("path", _whole_models(), ids=_model_id)
def test_shared_model_same_bytes_as_x86_64(arch, builds, path, tmp_path):
    from edge_sdk.runtime import c_interpreter

    model = read_model(path.read_bytes())
    assert c_interpreter.missing_ops(model) == []
    _check(arch, builds[arch], _expose_all(model), tmp_path, zlib.crc32(path.name.encode()), _invocations(model))


# ------------------------------------------------------------------------------------------------ one-op models

def _q(kind, shape, scale, zp):
    if kind == "float":
        return T(shape, "FLOAT32")
    if kind == "int16":
        return T(shape, "INT16", scale / 50, 0)
    return T(shape, "INT8", scale, zp)


def _w(rng, kind, shape, o, qdim=0):
    if kind == "float":
        return T(shape, "FLOAT32", data=rng.standard_normal(shape).astype(np.float32))
    return T(shape, "INT8", list(rng.uniform(0.002, 0.02, o)), 0, quantized_dimension=qdim,
             data=rng.integers(-127, 128, shape, dtype=np.int8))


def _b(rng, kind, o):
    if kind == "float":
        return T((o,), "FLOAT32", data=rng.standard_normal(o).astype(np.float32))
    if kind == "int16":
        return T((o,), "INT64", 1.0, 0, data=rng.integers(-20000, 20000, o).astype(np.int64))
    return T((o,), "INT32", 1.0, 0, data=rng.integers(-2000, 2000, o).astype(np.int32))


def _conv(kind, rng):
    opts = {"padding": "SAME", "stride_h": 2, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 2,
            "fused_activation_function": "RELU6"}
    return op_model("CONV_2D", [_q(kind, (1, 9, 8, 6), 0.05, 3), _w(rng, kind, (5, 3, 3, 6), 5), _b(rng, kind, 5)],
                    [_q(kind, (1, 5, 8, 5), 0.1, -5)], options=opts, version=3)


def _depthwise(kind, rng):
    opts = {"padding": "VALID", "stride_h": 1, "stride_w": 2, "dilation_h_factor": 1, "dilation_w_factor": 1,
            "fused_activation_function": "RELU", "depth_multiplier": 2}
    return op_model("DEPTHWISE_CONV_2D", [_q(kind, (2, 7, 6, 4), 0.05, -7), _w(rng, kind, (1, 3, 3, 8), 8, qdim=3),
                                          _b(rng, kind, 8)],
                    [_q(kind, (2, 5, 2, 8), 0.08, 4)], options=opts, version=3)


def _pool(op, kind):
    opts = {"padding": "SAME", "stride_h": 2, "stride_w": 2, "filter_height": 3, "filter_width": 2,
            "fused_activation_function": "NONE"}
    return op_model(op, [_q(kind, (2, 7, 5, 8), 0.05, -3)], [_q(kind, (2, 4, 3, 8), 0.05, -3)], options=opts,
                    version=2)


def _fc(kind, rng):
    x = _q(kind, (3, 20), 0.05, 4)
    return op_model("FULLY_CONNECTED", [x, _w(rng, kind, (7, 20), 7), _b(rng, kind, 7)], [_q(kind, (3, 7), 0.3, -2)],
                    options={"fused_activation_function": "NONE"}, version=5 if kind == "int8" else 1)


def _softmax(kind):
    if kind == "float":
        return op_model("SOFTMAX", [T((3, 17), "FLOAT32")], [T((3, 17), "FLOAT32")], options={"beta": 0.7})
    return op_model("SOFTMAX", [T((3, 17), "INT8", 0.1, -10)], [T((3, 17), "INT8", 1 / 256, -128)],
                    options={"beta": 1.0})


def _unary(op, kind):
    if kind == "float":
        return op_model(op, [T((4, 33), "FLOAT32")], [T((4, 33), "FLOAT32")])
    out = (1 / 256, -128) if op == "LOGISTIC" else (1 / 128, 0)
    return op_model(op, [T((4, 33), "INT8", 0.06, 5)], [T((4, 33), "INT8", *out)])


def _lstm(kind, rng):
    from tests.test_ops_sequence import _lstm_specs

    ins, outs = _lstm_specs(rng, {"int8": "INT8", "int16": "INT16", "float": "FLOAT32"}[kind])
    return op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, outs,
                    options={"fused_activation_function": "TANH", "cell_clip": 0.0, "time_major": False})


OP_CASES = {
    "conv-int8": lambda rng: _conv("int8", rng),
    "conv-int16": lambda rng: _conv("int16", rng),
    "conv-float": lambda rng: _conv("float", rng),
    "depthwise-int8": lambda rng: _depthwise("int8", rng),
    "depthwise-float": lambda rng: _depthwise("float", rng),
    "avgpool-int8": lambda rng: _pool("AVERAGE_POOL_2D", "int8"),
    "maxpool-int8": lambda rng: _pool("MAX_POOL_2D", "int8"),
    "avgpool-float": lambda rng: _pool("AVERAGE_POOL_2D", "float"),
    "fc-int8": lambda rng: _fc("int8", rng),
    "fc-float": lambda rng: _fc("float", rng),
    "softmax-int8": lambda rng: _softmax("int8"),
    "softmax-float": lambda rng: _softmax("float"),
    "logistic-int8": lambda rng: _unary("LOGISTIC", "int8"),
    "logistic-float": lambda rng: _unary("LOGISTIC", "float"),
    "tanh-float": lambda rng: _unary("TANH", "float"),
    "lstm-int8": lambda rng: _lstm("int8", rng),
    "lstm-int16": lambda rng: _lstm("int16", rng),
    "lstm-float": lambda rng: _lstm("float", rng),
}


@pytest.mark.parametrize("name", list(OP_CASES))
def test_op_model_same_bytes_as_x86_64(arch, builds, name, tmp_path):
    seed = zlib.crc32(name.encode())
    model = OP_CASES[name](np.random.default_rng(seed))
    invocations = 3 if name.startswith("lstm") else 1
    raw = _check(arch, builds[arch], model, tmp_path, seed, invocations)
    assert len(set(raw)) > 4, "degenerate case: (nearly) constant output bytes"
