"""firmware_c builds per CPU (warning-clean libedge.a for cortex-m0plus / m4 / m7), a linked test image that runs
under QEMU and gives our Python interpreter's outputs, and `make size` (per-model op tables, numbers)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk import Interpreter
from edge_sdk.model import read_model

from tests.conftest import shared_model
from tests.oprunner import T, image_main_hash, image_main_inputs, m4_image, op_model

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"
CPUS = ["cortex-m0plus", "cortex-m4", "cortex-m7"]


def _need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (Debian: apt-get install make gcc-arm-none-eabi "
                    f"libnewlib-arm-none-eabi qemu-system-arm)")


def _make(*args, timeout=300, check=True):
    # -j: one object per source (the Makefile), compiled on every CPU
    proc = subprocess.run(["make", "-C", str(FW), "--no-print-directory", f"-j{os.cpu_count() or 1}", *args],
                          capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert proc.returncode == 0, f"make {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("cpu", CPUS)
def test_cpu_library_builds_warning_clean(cpu, tmp_path):
    _need("make", "arm-none-eabi-gcc")
    proc = _make(cpu, f"ARM_BUILD={tmp_path}", "MODELS=")
    assert "warning:" not in proc.stderr, proc.stderr[-3000:]
    lib = tmp_path / cpu / "libedge.a"
    assert lib.is_file()
    # every object is for this CPU (M4/M7: hard-float, DSP; M0+: ARMv6-M soft-float)
    attrs = subprocess.run(["arm-none-eabi-readelf", "-A", str(lib)], capture_output=True, text=True).stdout
    arch = {"cortex-m0plus": "v6S-M", "cortex-m4": "v7E-M", "cortex-m7": "v7E-M"}[cpu]
    tags = set(re.findall(r"Tag_CPU_arch: (\S+)", attrs))
    assert tags == {arch}, tags
    assert ("Tag_ABI_VFP_args: VFP registers" in attrs) == (cpu != "cortex-m0plus")
    syms = subprocess.run(["arm-none-eabi-nm", str(lib)], capture_output=True, text=True).stdout
    assert " T edge_init" in syms and " T edge_invoke" in syms and "edge_kernels" in syms


def _fc_model() -> bytes:
    rng = np.random.default_rng(21)
    x = T((2, 12), "INT8", scale=0.05, zero_point=-3)
    w = T((5, 12), "INT8", scale=[0.01, 0.02, 0.015, 0.03, 0.005], zero_point=0,
          data=rng.integers(-127, 128, (5, 12)).astype(np.int8))
    b = T((5,), "INT32", scale=5e-4, zero_point=0, data=rng.integers(-900, 900, 5).astype(np.int32))
    y = T((2, 5), "INT8", scale=0.07, zero_point=4)
    return op_model("FULLY_CONNECTED", [x, w, b], [y], options=dict(fused_activation_function="RELU"), version=5)


@pytest.mark.slow
def test_linked_m4_image_runs_under_qemu_and_matches_python(tmp_path):
    """make cortex-m4 BOARD=qemu-mps2-an386 MODEL=...: the image runs the model under QEMU; its output hash
    equals our Python interpreter's on the same inputs, and per-op SysTick ticks are reported."""
    _need("make", "arm-none-eabi-gcc", "qemu-system-arm")
    model = tmp_path / "fc.tflite"
    model.write_bytes(_fc_model())
    elf = m4_image(model, tmp_path / "b") / "edge-image.elf"  # built with the session's library objects
    table = (tmp_path / "b" / "cortex-m4" / "qemu-mps2-an386" / "edge_ops_generated.c").read_text()
    assert re.findall(r"/\* (\w+) \*/", table) == ["FULLY_CONNECTED"]
    proc = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel",
                           str(elf), "-icount", "shift=0", "-serial", "stdio", "-semihosting-config",
                           "enable=on,target=native"], capture_output=True, text=True, timeout=60)
    out = proc.stdout.replace("\r", "")
    assert proc.returncode == 0 and "done" in out, out + proc.stderr
    assert "status 0" in out
    ops = re.findall(r"^op (\d+) (\d+) (\d+)$", out, re.M)
    assert [(n, c) for n, c, _ in ops] == [("0", "9")] and int(ops[0][2]) > 0
    py = Interpreter(model_content=model.read_bytes())
    py.allocate_tensors()
    for d, x in zip(py.get_input_details(), image_main_inputs(py)):
        py.set_tensor(d["index"], x)
    py.invoke()
    want = image_main_hash(py.get_tensor(py.get_output_details()[0]["index"]).tobytes())
    assert re.search(r"^out 0 (\d+)$", out, re.M).group(1) == str(want)


def _add_model(scale_out: float = 0.1) -> bytes:
    x = T((1, 6), "INT8", scale=0.05, zero_point=2)
    y = T((1, 6), "INT8", scale=0.03, zero_point=-1)
    z = T((1, 6), "INT8", scale=scale_out, zero_point=0)
    return op_model("ADD", [x, y], [z], options=dict(fused_activation_function="NONE"))


def _report_lines(text: str) -> list[str]:
    """A model's report without the per-op tick figures (the board timer's phase is the boot's, not the model's)."""
    return [re.sub(r"^(op \d+ \d+) \d+$", r"\1", line) for line in text.splitlines() if line and line != "done"]


@pytest.mark.slow
def test_image_of_several_models_reports_each_as_its_own_image(tmp_path):
    """make image MODELS="a b c" links the models into one image booted once (tools/image_main.c runs each in turn,
    after a "model M" line): each model's report is the one its own image prints (status, arena, ops, outputs;
    the arena zeroed between models), the op table holds every model's ops, and a model that fails (its tensors
    do not fit the image's arena) reports its status and lets the next run; the image then exits with that
    status, and m4_image_reports names the model."""
    from tests.oprunner import m4_image_reports

    _need("make", "arm-none-eabi-gcc", "qemu-system-arm")
    big = T((1, 300_000), "INT8", scale=0.05, zero_point=0)  # one 300 KB tensor: over the 256 KB arena
    models = {"fc": _fc_model(), "too_big": op_model("RELU", [big], [T((1, 300_000), "INT8", scale=0.05,
                                                                        zero_point=0)]), "add": _add_model()}
    paths = []
    for name, data in models.items():
        paths.append(tmp_path / f"{name}.tflite")
        paths[-1].write_bytes(data)
    image = m4_image(paths, tmp_path / "b")
    table = (image / "edge_ops_generated.c").read_text()
    assert sorted(re.findall(r"/\* (\w+) \*/", table)) == ["ADD", "FULLY_CONNECTED", "RELU"]
    run = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel",
                          str(image / "edge-image.elf"), "-icount", "shift=0", "-serial", "stdio",
                          "-semihosting-config", "enable=on,target=native"], capture_output=True, text=True,
                         timeout=60)
    out = run.stdout.replace("\r", "")
    sections = re.split(r"^model (\d+)\n", out, flags=re.M)
    assert sections[0] == "" and sections[1::2] == ["0", "1", "2"] and out.endswith("done\n"), out
    fc, too_big, add = sections[2::2]
    (status,) = re.findall(r"^status (\d+)$", too_big, re.M)
    assert status != "0" and "out " not in too_big and run.returncode == int(status), (run.returncode, too_big)
    for name, text in (("fc", fc), ("add", add)):
        py = Interpreter(model_content=models[name])
        py.allocate_tensors()
        for d, v in zip(py.get_input_details(), image_main_inputs(py)):
            py.set_tensor(d["index"], v)
        py.invoke()
        want = image_main_hash(py.get_tensor(py.get_output_details()[0]["index"]).tobytes())
        assert re.findall(r"^out 0 (\d+)$", text, re.M) == [str(want)], (name, text)
    with pytest.raises(AssertionError, match=r"^too_big \(model 1 of the image"):
        m4_image_reports(image / "edge-image.elf", list(models))
    # the one-model image of "add" (no "model" line): the same report as its part of the three-model image
    alone = m4_image(paths[2], tmp_path / "alone") / "edge-image.elf"
    reports = m4_image_reports(alone, ["add"])
    assert "model " not in reports["add"] and _report_lines(reports["add"]) == _report_lines(add), (reports, add)


def _local_functions(elf: Path) -> set[str]:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1].split(".")[0] for line in out.splitlines() if line.split()[-2:-1] in (["t"], ["T"])}


@pytest.mark.slow
def test_patch_execution_links_only_into_firmware_that_calls_edge_init_patch(tmp_path):
    """Patch-based execution (~4 KB on the M4) is reached only through edge_init_patch: an image that calls
    edge_init_ex (every firmware without a patch plan; tools/image_main.c) links none of it; the same objects linked with
    edge_init_patch kept have it."""
    _need("make", "arm-none-eabi-gcc")
    model = tmp_path / "fc.tflite"
    model.write_bytes(_fc_model())
    build = tmp_path / "b"
    _make("cortex-m4", "BOARD=qemu-mps2-an386", f"MODEL={model}", f"ARM_BUILD={build}", "MODELS=")
    image = build / "cortex-m4" / "qemu-mps2-an386"
    patch_code = {"run_patch_stage", "patch_setup", "patch_setup_linked"}
    plain = _local_functions(image / "edge-image.elf")
    assert "edge_init_ex" in plain and not plain & patch_code, sorted(plain & patch_code)

    def var(name):
        return _make("-s", f"print-{name}", "CPU=cortex-m4", "BOARD=qemu-mps2-an386").stdout.split("=", 1)[1].split()
    objs = [image / "image_main.o", image / "edge_ops_generated.o", image / "model_data.o",
            *sorted((image / "board").glob("*.o")),
            *sorted(build.glob("cortex-m4/libedge*.a"))]
    elf = tmp_path / "with-patch.elf"
    link = subprocess.run(["arm-none-eabi-gcc", *var("CPU_CFLAGS"), "-Wl,-u,edge_init_patch", "-o", str(elf),
                           *map(str, objs), *var("BOARD_LDFLAGS")], capture_output=True, text=True, cwd=FW)
    assert link.returncode == 0, link.stderr[-3000:]
    with_patch = _local_functions(elf)
    assert {"edge_init_patch", "run_patch_stage"} <= with_patch, sorted(with_patch & (patch_code | {"edge_init_patch"}))


@pytest.mark.slow
def test_make_size_reports_person_detect_on_m4(tmp_path):
    _need("make", "arm-none-eabi-gcc")
    path = shared_model("tflite-micro/person_detect.tflite")
    proc = _make("size", "SIZE_CPUS=cortex-m4", f"SIZE_MODELS={path}", f"SIZE_BUILD={tmp_path}", check=False)
    out = proc.stdout
    # the size aim decides the exit status (size_report.py: 1 when NOT met, which make reports as its own 2)
    goal = re.search(r"^goal: person_detect .* -> (met|NOT met)$", out, re.M)
    assert goal and (proc.returncode == 0) == (goal.group(1) == "met"), (proc.returncode, out[-3000:], proc.stderr)
    row = re.search(r"^person_detect\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S.*)$",
                    out, re.M)
    assert row, out
    n_ops, rt_text, total, nostr = int(row.group(1)), int(row.group(2)), int(row.group(7)), int(row.group(8))
    assert rt_text > 1000 and total >= rt_text and 0 < nostr < total  # numbers, not a threshold
    assert re.search(r"^goal: person_detect .* runtime \.text \d+ bytes", out, re.M), out
    # the size build's op table holds exactly the model's ops
    tables = list(tmp_path.glob("cortex-m4/qemu-mps2-an386/size/*/ops_table.c"))
    assert len(tables) == 1
    listed = re.findall(r"/\* (\w+) \*/", tables[0].read_text())
    model = read_model(path.read_bytes())
    used = {model.operator_codes[op.opcode_index].name for sg in model.subgraphs for op in sg.operators}
    assert sorted(listed) == sorted(used) and n_ops == len(used), (listed, used)


# ------------------------------------------------------------------------------------- type switches
def _softmax(in_type, out_type) -> bytes:
    q = {"FLOAT32": (None, None), "INT8": (0.1, 3), "INT16": (0.001, 0)}
    out_q = {("INT8", "INT8"): (1 / 256, -128), ("INT8", "INT16"): (1 / 65536, -32768),
             ("INT16", "INT16"): (1 / 32768, 0), ("FLOAT32", "FLOAT32"): (None, None)}[(in_type, out_type)]
    x = T((2, 10), in_type, scale=q[in_type][0], zero_point=q[in_type][1])
    y = T((2, 10), out_type, scale=out_q[0], zero_point=out_q[1])
    return op_model("SOFTMAX", [x], [y], options=dict(beta=1.0), version=2 if "INT16" in (in_type, out_type) else 1)


def _avg_pool(dtype) -> bytes:
    x = T((1, 4, 4, 3), dtype, scale=0.05 if dtype != "FLOAT32" else None, zero_point=0 if dtype != "FLOAT32" else None)
    y = T((1, 2, 2, 3), dtype, scale=0.05 if dtype != "FLOAT32" else None, zero_point=0 if dtype != "FLOAT32" else None)
    return op_model("AVERAGE_POOL_2D", [x], [y], options=dict(padding="VALID", stride_w=2, stride_h=2,
                                                             filter_width=2, filter_height=2))


def _type_defs(*paths) -> str:
    sys.path.insert(0, str(FW / "tools"))
    try:
        import gen_ops
    finally:
        sys.path.pop(0)
    return " ".join(gen_ops.type_defines([str(p) for p in paths]))


def test_type_switches_follow_the_models_tensor_types(tmp_path):
    """gen_ops.py --type-defs (and the Makefile's TYPE_DEFS/TYPE_TAG) from a model's tensor types."""
    _need("make")
    paths = {}
    for name, data in {"i8": _softmax("INT8", "INT8"), "i8to16": _softmax("INT8", "INT16"),
                       "f32": _softmax("FLOAT32", "FLOAT32"), "i16pool": _avg_pool("INT16")}.items():
        paths[name] = tmp_path / f"{name}.tflite"
        paths[name].write_bytes(data)
    assert _type_defs(paths["i8"]) == "-DEDGE_WITH_FLOAT32=0 -DEDGE_WITH_INT16=0"
    assert _type_defs(paths["i8to16"]) == "-DEDGE_WITH_FLOAT32=0"  # the int16 output needs the int16 path
    assert _type_defs(paths["f32"]) == "-DEDGE_WITH_INT16=0"
    assert _type_defs(paths["i8"], paths["f32"], paths["i16pool"]) == ""  # several models: their union
    assert _type_defs() == ""  # no model: every type
    tag = _make("print-TYPE_TAG", f"MODEL={paths['i8']}").stdout.strip()
    assert tag == "TYPE_TAG=-noFLOAT32-noINT16"
    assert _make("print-TYPE_TAG", f"MODELS={paths['f32']}").stdout.strip() == "TYPE_TAG=-noINT16"
    assert _make("print-TYPE_TAG", "MODELS=", "MODEL=").stdout.strip() == "TYPE_TAG="


def test_host_build_without_float32_int16_refuses_those_nodes(tmp_path):
    """A host runner built with EDGE_WITH_FLOAT32=0 EDGE_WITH_INT16=0 runs int8 nodes (outputs as our Python
    interpreter's) and refuses float32 / int16 nodes at load with EDGE_UNSUPPORTED_TYPE naming op and type."""
    _need("make", "gcc")
    build = tmp_path / "host"
    _make(str(build / "edge-run-c"), f"HOST_BUILD={build}", "HOST_OPT=-O0",
          "HOST_DEFS=-DEDGE_WITH_FLOAT32=0 -DEDGE_WITH_INT16=0")
    runner = build / "edge-run-c"

    def run(data: bytes, name: str):
        model = tmp_path / f"{name}.tflite"
        model.write_bytes(data)
        py = Interpreter(model_content=data)
        py.allocate_tensors()
        rng = np.random.default_rng(5)
        feeds = []
        for d in py.get_input_details():
            info = np.iinfo(d["dtype"]) if np.issubdtype(d["dtype"], np.integer) else None
            x = (rng.integers(info.min, info.max + 1, d["shape"]) if info else rng.normal(size=d["shape"]))
            feeds.append(x.astype(d["dtype"]))
            py.set_tensor(d["index"], feeds[-1])
        (tmp_path / f"{name}.in").write_bytes(b"".join(x.tobytes() for x in feeds))
        proc = subprocess.run([str(runner), str(model), str(tmp_path / f"{name}.in"), str(tmp_path / f"{name}.out")],
                              capture_output=True, text=True, timeout=60)
        return py, proc

    for name, data in {"softmax_i8": _softmax("INT8", "INT8"), "pool_i8": _avg_pool("INT8")}.items():
        py, proc = run(data, name)
        assert proc.returncode == 0, proc.stderr
        py.invoke()
        want = py.get_tensor(py.get_output_details()[0]["index"])
        assert (tmp_path / f"{name}.out").read_bytes() == want.tobytes(), name
    refused = {"softmax_f32": (_softmax("FLOAT32", "FLOAT32"), "SOFTMAX", "FLOAT32"),
               "softmax_i16": (_softmax("INT16", "INT16"), "SOFTMAX", "INT16"),
               "softmax_i8_to_i16": (_softmax("INT8", "INT16"), "SOFTMAX", "INT16"),
               "pool_f32": (_avg_pool("FLOAT32"), "AVERAGE_POOL_2D", "FLOAT32"),
               "pool_i16": (_avg_pool("INT16"), "AVERAGE_POOL_2D", "INT16"),
               "logistic_f32": (op_model("LOGISTIC", [T((4,), "FLOAT32")], [T((4,), "FLOAT32")]), "LOGISTIC",
                                "FLOAT32"),
               "relu_i16": (op_model("RELU", [T((4,), "INT16", 0.01, 0)], [T((4,), "INT16", 0.01, 0)]), "RELU",
                            "INT16"),
               "add_f32": (op_model("ADD", [T((4,), "FLOAT32"), T((4,), "FLOAT32")], [T((4,), "FLOAT32")]), "ADD",
                           "FLOAT32"),
               "mul_i16": (op_model("MUL", [T((4,), "INT16", 0.01, 0), T((4,), "INT16", 0.02, 0)],
                                    [T((4,), "INT16", 0.05, 0)]), "MUL", "INT16"),
               "fc_f32": (op_model("FULLY_CONNECTED", [T((1, 4), "FLOAT32"), T((3, 4), "FLOAT32",
                                                                                data=np.ones((3, 4), np.float32))],
                                   [T((1, 3), "FLOAT32")]), "FULLY_CONNECTED", "FLOAT32"),
               "quantize_f32": (op_model("QUANTIZE", [T((4,), "FLOAT32")], [T((4,), "INT8", 0.1, 0)]), "QUANTIZE",
                                "FLOAT32"),
               "dequantize_f32": (op_model("DEQUANTIZE", [T((4,), "INT8", 0.1, 0)], [T((4,), "FLOAT32")]),
                                  "DEQUANTIZE", "FLOAT32")}
    for name, (data, op, dtype) in refused.items():
        _py, proc = run(data, name)
        assert proc.returncode == 3, (name, proc.returncode, proc.stderr)
        msg = proc.stderr
        codes = re.findall(r"^EDGE_STATUS\((\w+),", (FW / "include" / "edge_status.def").read_text(), re.M)
        assert f"status {codes.index('EDGE_UNSUPPORTED_TYPE')}:" in msg, (name, msg)
        assert f"({op} " in msg and f"{dtype} compiled out" in msg and f"EDGE_WITH_{dtype}=0" in msg, \
            (name, msg)


# ------------------------------------------------------------------------------------- path switches (s20)
def _conv(x_shape, w_shape, y_shape) -> bytes:
    """An int8 CONV_2D (VALID, stride 1) of these shapes; weights and bias from a fixed seed."""
    rng = np.random.default_rng(sum(w_shape))
    o = w_shape[0]
    w = T(w_shape, "INT8", 0.02, 0, data=rng.integers(-127, 128, w_shape).astype(np.int8))
    b = T((o,), "INT32", 0.05 * 0.02, 0, data=rng.integers(-3000, 3000, o).astype(np.int32))
    return op_model("CONV_2D", [T(x_shape, "INT8", 0.05, 3), w, b], [T(y_shape, "INT8", 0.1, -5)],
                    options={"padding": "VALID", "stride_h": 1, "stride_w": 1}, version=3)


def _softmax_rows(shape) -> bytes:
    return op_model("SOFTMAX", [T(shape, "INT8", 0.1, 3)], [T(shape, "INT8", 1 / 256, -128)], options=dict(beta=1.0))


@pytest.mark.slow
def test_lone_pixel_and_softmax_dsp_rows_compiled_only_for_models_that_take_them(tmp_path):
    """gen_ops.path_defines' EDGE_WITH_CONV_LONE (conv_2d.c's lone-pixel GEMV: a CONV_2D of one output pixel with at
    least CONV_LONE_MIN_MACS filter values, a streaming step; not person_detect's 2 x 256 head, nor an odd map's
    last pixel) and EDGE_WITH_SOFTMAX_DSP (softmax.c's DSP rows: int8 rows of at least SOFTMAX_DSP_MIN_ROW, not
    person_detect's 2 classes): -D...=0 without such a layer, nothing with one; and `make size` (the per-model build
    edge flash makes too) links the path's code exactly then (M4 symbols conv_lone_pixel, softmax_int8_row_exps)."""
    _need("make", "arm-none-eabi-gcc", "arm-none-eabi-nm")
    sys.path.insert(0, str(FW / "tools"))
    try:
        import gen_ops
    finally:
        sys.path.pop(0)
    models = {"stream": _conv((1, 5, 1, 40), (30, 5, 1, 40), (1, 1, 1, 30)),  # 6000 MACs, one pixel: kept
              "head": _conv((1, 1, 1, 256), (2, 1, 1, 256), (1, 1, 1, 2)),  # 512 MACs: out
              "odd_map": _conv((1, 3, 3, 64), (64, 1, 1, 64), (1, 3, 3, 64)),  # 9 pixels: out
              "long_rows": _softmax_rows((2, 10)), "short_rows": _softmax_rows((1, 2))}
    paths = {}
    for name, data in models.items():
        paths[name] = tmp_path / f"{name}.tflite"
        paths[name].write_bytes(data)
    lone, rows = "-DEDGE_WITH_CONV_LONE=0", "-DEDGE_WITH_SOFTMAX_DSP=0"

    def switched(*names):
        return [d for d in gen_ops.path_defines([str(paths[n]) for n in names]) if d in (lone, rows)]

    assert gen_ops.CONV_LONE_MIN_MACS > 512 and gen_ops.SOFTMAX_DSP_MIN_ROW > 2  # person_detect's head and softmax
    assert switched("stream") == [rows]
    assert switched("head") == [lone, rows]
    assert switched("odd_map") == [rows]  # its lone pixel: 1 in 9 of the model's MACs (_lone_pixels_share)
    # an odd map's last pixel in a bigger model: kept at 2^17 values in one layer or at CONV_LONE_MIN_SHARE
    conv = (3, [[1, 3, 3, 256], [256, 1, 1, 256]], [[1, 3, 3, 256]])  # 65,536 values, 1/9 of its 589,824 MACs
    big = (3, [[1, 48, 48, 64], [64, 3, 3, 64]], [[1, 48, 48, 64]])  # 84,934,656 MACs, an even map
    assert gen_ops._lone_pixels_share([conv]) and not gen_ops._lone_pixels_share([conv, big])
    assert not gen_ops._lone_conv_pixel(conv[1], conv[2])
    assert gen_ops._lone_conv_pixel([[1, 7, 7, 960], [320, 1, 1, 960]], [[1, 7, 7, 320]])  # mobilenet_v2's 7x7
    pd = shared_model("tflite-micro/person_detect.tflite")  # its 3x3 maps and head: 1.4% of its MACs
    assert [d for d in gen_ops.path_defines([str(pd)]) if d in (lone, rows)] == [lone, rows]
    assert switched("long_rows") == [lone]
    assert switched("short_rows") == [lone, rows]
    assert switched("head", "stream", "short_rows", "long_rows") == []  # several models: their union
    assert gen_ops.path_defines([]) == []

    # the linked per-model M4 runtimes: the path's code present exactly with the layer that takes it
    names = ["stream", "head", "long_rows", "short_rows"]
    proc = subprocess.run([sys.executable, str(FW / "tools" / "size_report.py"), "--cpus", "cortex-m4", "--no-strip",
                           "--build-dir", str(tmp_path / "size"), "--json", str(tmp_path / "size.json"),
                           "--models", " ".join(str(paths[n]) for n in names)], capture_output=True, text=True,
                          timeout=600)
    elfs = list((tmp_path / "size" / "cortex-m4" / "qemu-mps2-an386" / "size").glob("*/edge-image.elf"))
    assert len(elfs) == len(names), (proc.stdout[-3000:], proc.stderr[-3000:])
    linked = {}
    for elf in elfs:
        table = (elf.parent / "ops_table.c").read_text()
        syms = set(re.findall(r"\s(\w+)$", subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True,
                                                          text=True, check=True).stdout, re.M))
        key = ("CONV_2D" in table, "SOFTMAX" in table, "conv_lone_pixel" in syms, "softmax_int8_row_exps" in syms)
        linked[key] = elf
    # (has CONV_2D, has SOFTMAX, lone GEMV linked, DSP rows linked): the two conv and two softmax models apart
    assert sorted(linked) == [(False, True, False, False), (False, True, False, True), (True, False, False, False),
                              (True, False, True, False)], sorted(linked)


def _pool(op, x_shape, y_shape, k) -> bytes:
    return op_model(op, [T(x_shape, "INT8", 0.1, 3)], [T(y_shape, "INT8", 0.1, 3)],
                    options=dict(padding="VALID", stride_w=k, stride_h=k, filter_width=k, filter_height=k))


def test_dsp_pools_compiled_only_for_models_with_a_large_int8_pool(tmp_path):
    """gen_ops.path_defines' EDGE_WITH_POOL_DSP (pooling.c's pool_int8_dsp, ~560 B on the M4): -D...=0 for a model
    whose AVERAGE_POOL_2D / MAX_POOL_2D inputs hold fewer than POOL_DSP_MIN_VALUES values and fewer than
    POOL_DSP_MIN_SHARE per MAC of the model (person_detect's 3 x 3 x 256 head), nothing otherwise."""
    sys.path.insert(0, str(FW / "tools"))
    try:
        import gen_ops
    finally:
        sys.path.pop(0)
    off = "-DEDGE_WITH_POOL_DSP=0"
    models = {"head": _pool("AVERAGE_POOL_2D", (1, 3, 3, 256), (1, 1, 1, 256), 3),
              "large_max": _pool("MAX_POOL_2D", (1, 32, 32, 8), (1, 16, 16, 8), 2),
              "large_avg": _pool("AVERAGE_POOL_2D", (1, 16, 16, 16), (1, 8, 8, 16), 2)}
    paths = {}
    for name, data in models.items():
        paths[name] = tmp_path / f"{name}.tflite"
        paths[name].write_bytes(data)

    def switched(*names):
        return off in gen_ops.path_defines([str(paths[n]) for n in names])

    assert 2304 < gen_ops.POOL_DSP_MIN_VALUES <= 4096
    assert not switched("large_max") and not switched("large_avg")
    assert not switched("head")  # pools and nothing else: _pool_share keeps them
    # a model whose small pools read >= POOL_DSP_MIN_SHARE values per MAC keeps them (a pool-heavy KWS net)
    head = (1, [[1, 3, 3, 256]], [[1, 1, 1, 256]])
    conv = (3, [[1, 3, 3, 256], [256, 1, 1, 256]], [[1, 3, 3, 256]])  # 589,824 MACs
    assert gen_ops._pool_share([head]) and gen_ops._pool_share([head, (3, [[1, 1, 1, 256], [2, 1, 1, 256]],
                                                                       [[1, 1, 1, 2]])])
    assert not gen_ops._pool_share([head, conv])  # 2,304 values, 0.4% of its MACs
    assert not gen_ops._pool_share([conv])
    pd = shared_model("tflite-micro/person_detect.tflite")
    assert off in gen_ops.path_defines([str(pd)])


@pytest.mark.slow
def test_dsp_build_without_lone_pixel_and_softmax_dsp_rows_gives_tflm_bytes(tmp_path):
    """The M4 arithmetic (edge-run-c with the DSP paths emulated, as the dsp_runner fixture) built as person_detect's
    firmware is, -DEDGE_WITH_CONV_LONE=0 -DEDGE_WITH_SOFTMAX_DSP=0: a one-pixel conv and an odd map's last pixel as
    pairs with themselves, int8 softmax rows by softmax_int8_row (its SMMLAR reciprocal, exp(0) skipped, a short row's
    exps kept, a long one's computed twice, a big input's per-invoke table): TFLM's bytes."""
    from tests.peers import run_tflm
    from tests.test_ops_conv import _run_exe

    _need("gcc")
    fw = FW
    table = tmp_path / "edge_ops_generated.c"
    subprocess.run([sys.executable, str(fw / "tools" / "gen_ops.py"), str(table)], check=True, capture_output=True)
    sources = [fw / "src" / "edge.c", *sorted((fw / "src" / "kernels").glob("*.c")), fw / "host" / "edge_host.c",
               fw / "host" / "edge_run.c", table]
    flags = ["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-DEDGE_EMULATE_DSP", "-DEDGE_WITH_CONV_LONE=0",
             "-DEDGE_WITH_SOFTMAX_DSP=0", f"-I{fw / 'include'}", f"-I{fw / 'src'}", f"-I{fw / 'host'}"]
    objs = []
    for k, src in enumerate(sources):
        objs.append(tmp_path / f"{k:03d}-{src.stem}.o")
        proc = subprocess.run(["gcc", *flags, "-c", str(src), "-o", str(objs[-1])], capture_output=True, text=True)
        assert proc.returncode == 0, f"{src.name}:\n{proc.stderr[-3000:]}"
    exe = tmp_path / "edge-run-c"
    proc = subprocess.run(["gcc", "-o", str(exe), *map(str, objs), "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]

    rng = np.random.default_rng(25)
    ramp = np.arange(-128, 128, dtype=np.int16).astype(np.int8)
    cases = [(_conv((1, 5, 1, 40), (30, 5, 1, 40), (1, 1, 1, 30)), (1, 5, 1, 40)),  # one pixel
             (_conv((1, 1, 1, 256), (2, 1, 1, 256), (1, 1, 1, 2)), (1, 1, 1, 256)),  # person_detect's head
             (_conv((1, 3, 3, 64), (64, 1, 1, 64), (1, 3, 3, 64)), (1, 3, 3, 64))]  # an odd map
    for shape in ((1, 2), (1, 3), (4, 10), (2, 40), (3, 300)):  # short rows, long rows, a table of 256
        cases.append((_softmax_rows(shape), shape))
    for model, shape in cases:
        x = rng.integers(-128, 128, shape).astype(np.int8)
        want = run_tflm(model, [x], isolate=True)[0]
        got = _run_exe(exe, model, [x], want, tmp_path)
        assert np.array_equal(got, want), f"{shape}: {np.abs(got.astype(int) - want).max()} off"
    model = _softmax_rows((2, 256))  # every difference 0..255, both ways
    x = np.stack([ramp, ramp[::-1]])
    want = run_tflm(model, [x], isolate=True)[0]
    assert np.array_equal(_run_exe(exe, model, [x], want, tmp_path), want)
