"""`edge check` on a C target: the C runtime's own prepare and planner, built with the board's struct layout.
Its arena figure equals the board's own high-water mark read back by `edge profile` on the QEMU board."""

import shutil

import pytest

from edge_sdk.targets import c_check
from edge_sdk.targets.check import FAILS, RUNS, check_model, format_check
from tests.conftest import SHARED_MODELS, shared_model, shared_models

MODELS = shared_models()


def _board_models(models):
    """The models flashed to the QEMU board: every one outside seanet/, and the first two of each seanet op folder
    (the 142 seanet-inclusive run takes ~30 min on 2 cores; seanet's 127 one-op models repeat eight ops, and the
    32-bit plan they share with the others is checked for every model by test_check_models)."""
    out, seen = [], {}
    for path in models:
        if "mediapipe" in path.parts:  # float convolutions of a 256x256 detector: minutes per invoke emulated
            continue
        if "seanet" in path.parts:
            folder = path.parent.name
            seen[folder] = seen.get(folder, 0) + 1
            if seen[folder] > 2:
                continue
        out.append(path)
    return out


BOARD_MODELS = _board_models(MODELS)

NEEDS = "apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"
needs_qemu = pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                                reason=f"needs QEMU and the Arm GCC toolchain: {NEEDS}")
needs_ilp32 = pytest.mark.skipif(c_check.ILP32 not in c_check.target_layouts(),
                                 reason="needs arm-linux-gnueabihf-gcc and qemu-user (Debian gcc-arm-linux-gnueabihf "
                                        "qemu-user) for the board's struct layout")

# high-water marks the QEMU board itself reported (`edge profile ... --json`: arena_high_water), 2026-12-03, after
# the depthwise multiplier kernel (a depth multiplier of 4k keeps its filter pre-paired as int16 for SMLAD: person
# detect's and micro_speech's first depthwise); hey_jarvis 2026-12-05 (17,592 -> 17,600: session 20's per-node
# parameters, QUANTIZE and STRIDED_SLICE packed to their old sizes; TFLM's arena for it: 17,604)
BOARD_HIGH_WATER = {"pymicro-wakeword/hey_jarvis.tflite": 17_600, "tflite-micro/person_detect.tflite": 80_904,
                    "tflite-micro/micro_speech_quantized.tflite": 8_144}


@needs_ilp32
@pytest.mark.parametrize("name", sorted(BOARD_HIGH_WATER))
def test_c_target_arena_is_the_boards_high_water(name):
    r = check_model(shared_model(name), "qemu-mps2-an386")
    assert r.verdict == RUNS and r.checked_by == "c-runtime"
    assert r.arena_bytes == BOARD_HIGH_WATER[name]
    ram = r.ram
    assert ram["layout"] == c_check.ILP32 and ram["persistent_bytes"] > 0
    assert ram["plan_bytes"] == ram["tensor_bytes"] + ram["scratch_bytes"]
    assert not r.to_dict()["arena_estimate"] and "measured" in r.ram_source


@needs_ilp32
@needs_qemu
@pytest.mark.slow
@pytest.mark.skipif(not MODELS, reason=f"{SHARED_MODELS} is absent in this checkout")
@pytest.mark.parametrize("path", BOARD_MODELS, ids=lambda p: str(p.relative_to(SHARED_MODELS)))
def test_c_target_arena_equals_high_water_read_back_from_the_qemu_board(state, path):
    """The shared models the C runtime runs (BOARD_MODELS): check's arena figure == the board's own high water."""
    from edge_sdk.tools.profile import profile_model

    r = check_model(path, "qemu-mps2-an386", stack=False)
    if r.verdict == FAILS:
        assert any("runtime_error" in p for p in r.errors), r.problems  # only the C runtime's refusal
        return
    report = profile_model(path, "qemu-mps2-an386", runs=1, timeout=3.0, retries=8)  # a loaded machine: slow QEMU
    assert report["arena_high_water"] == r.arena_bytes, (report["arena_high_water"], r.ram)


def test_c_target_without_the_c_runtime_says_estimate():
    r = check_model(shared_model("tflite-micro/micro_speech_quantized.tflite"), "qemu-mps2-an386", c_runtime=False)
    assert r.checked_by == "c-table" and r.to_dict()["arena_estimate"]
    assert r.arena_bytes == r.to_dict()["arena_bytes"] and "estimate" in r.ram_source


def test_c_runtime_refusal_named_for_ops_the_c_runtime_lacks():
    """An op the C runtime has no kernel for (vela's ethos-u NPU command stream): check on a C target names it from
    the C runtime's own refusal. (Every op the Python interpreter runs has a C kernel now: palm_detection_lite,
    which needed RESIZE_BILINEAR, runs on the board.)"""
    path = shared_model("tflite-micro/person_detect_vela.tflite")
    r = check_model(path, "qemu-mps2-an386")
    assert r.verdict == FAILS and r.checked_by == "c-runtime"
    assert {p["op"] for p in r.errors if "runtime_error" in p} == {"ethos-u"}
    assert check_model(shared_model("mediapipe/palm_detection_lite.tflite"), "qemu-mps2-an386").verdict == RUNS


@needs_qemu
@pytest.mark.slow
def test_check_link_reports_the_real_firmware_size(state, capsys):
    import json

    from edge_sdk.cli import main

    path = shared_model("tflite-micro/micro_speech_quantized.tflite")
    assert main(["check", str(path), "--target", "qemu-mps2-an386", "--link", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    link = d["link"]
    assert link["linked"] is True and link["flash_bytes"] == link["text_bytes"] + link["data_bytes"]
    assert link["runtime_flash_bytes"] == link["flash_bytes"] - d["model_bytes"] > 0
    assert link["arena_buffer_bytes"] >= d["arena_bytes"]  # the firmware's arena buffer holds what the board needs
    assert "arena_bytes" not in link  # one key named arena_bytes in the JSON: the runtime's arena (top level)
    assert d["flash_source"] == "linked"
    assert main(["check", str(path), "--target", "host-linux", "--link"]) == 2
    assert "--link" in capsys.readouterr().err


@needs_qemu
def test_c_target_reports_the_runtimes_stack_and_code():
    r = check_model(shared_model("tflite-micro/person_detect.tflite"), "qemu-mps2-an386")
    st, code = r.stack, r.runtime_code
    assert st["bytes"] > 0 and st["entry"] in ("edge_init_ex", "edge_invoke_at", "edge_reset_state")
    assert st["chain"][0] == st["entry"]
    assert set(code["per_file"]) == {"edge", "conv_2d", "depthwise_conv_2d", "pooling", "reshape", "softmax"}
    assert code["bytes"] == sum(code["per_file"].values()) > 0
    d = r.to_dict()
    assert d["stack"]["bytes"] == st["bytes"] and d["runtime_code"]["bytes"] == code["bytes"]
    assert check_model(shared_model("tflite-micro/person_detect.tflite"), "host-linux").stack == {}


def test_every_node_the_c_prepare_refuses_is_named_not_only_the_first():
    """One plan-only run of the C runtime names every node its prepare refuses (edge-run-c --all-refusals), each
    with its own status and message; without the C runtime the kernels' registered dtypes refuse the same nodes."""
    import numpy as np

    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("x", (1, 16), "FLOAT32")
    w1 = g.constant("w1", np.ones((8, 16), np.int16), scale=0.1, zero_point=0)  # float input, int16 weights
    h = g.tensor("h", (1, 8), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w1, -1], [h])
    r1 = g.tensor("r1", (1, 8), "FLOAT32")
    g.op("RELU", [h], [r1])
    w2 = g.constant("w2", np.ones((4, 8), np.int16), scale=0.1, zero_point=0)
    y = g.tensor("y", (1, 4), "FLOAT32")
    g.op("FULLY_CONNECTED", [r1, w2, -1], [y])
    g.output(y)
    r = check_model(g.build(), "qemu-mps2-an386", stack=False)
    assert r.verdict == FAILS and r.checked_by == "c-runtime"
    refused = sorted(p["node"] for p in r.errors if "runtime_error" in p)
    assert refused == [0, 2], r.problems
    for node in (0, 2):
        text = next(p["runtime_error"] for p in r.errors if p["node"] == node)
        assert text.startswith(f"C runtime: node {node} (FULLY_CONNECTED") and "[EDGE_UNSUPPORTED_TYPE]" in text, text
    table = check_model(g.build(), "qemu-mps2-an386", c_runtime=False)
    assert table.checked_by == "c-table" and table.verdict == FAILS
    found = {p["node"]: p["message"] for p in table.errors if "runtime_error" in p}
    assert sorted(found) == [0, 2] and "FLOAT32/INT16" in found[2] and "FULLY_CONNECTED" in found[2], found


def test_the_c_plan_run_reports_every_refusal_in_one_run_and_keeps_loader_refusals_fatal(tmp_path):
    """target_plan: one run, every refused node (status, message), a node without a builtin kernel among them;
    a malformed model is still the loader's one fatal error."""
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("x", (1, 4), "INT8", scale=0.1, zero_point=0)
    t = [g.tensor(f"t{k}", (1, 4), "INT8", scale=0.1, zero_point=0) for k in range(4)]
    g.op("SQRT", [x], [t[0]])           # refused: FLOAT32 only
    g.op("RELU", [t[0]], [t[1]])        # runs
    g.op("SIN", [t[1]], [t[2]])         # refused: FLOAT32 only (EXP takes INT8 since its LiteRT table)
    g.op("HASHTABLE_FIND", [t[2]], [t[3]])  # no C kernel (CONV_3D_TRANSPOSE has one since issue 23)
    g.output(t[3])
    data = write_model(g.build())
    plan = c_check.target_plan(data, c_check.HOST)
    assert not plan.ok and plan.status_name == "EDGE_UNSUPPORTED_TYPE" and plan.error["node"] == 0
    got = [(r["node"], r["status"]) for r in plan.refusals]
    assert got == [(0, "EDGE_UNSUPPORTED_TYPE"), (2, "EDGE_UNSUPPORTED_TYPE"), (3, "EDGE_UNSUPPORTED_OP")], got
    assert "SQRT" in plan.refusals[0]["message"] and "SIN" in plan.refusals[1]["message"]
    r = check_model(data, "qemu-mps2-an386", stack=False)
    assert sorted(p["node"] for p in r.errors if "runtime_error" in p) == [0, 2, 3]
    table = check_model(data, "qemu-mps2-an386", c_runtime=False)  # no C compiler: the registrations say the same
    msgs = {p["node"]: p["message"] for p in table.errors if "runtime_error" in p}
    assert sorted(msgs) == [0, 2, 3] and "node 2 (SIN v1) INT8" in msgs[2] and "does not take INT8" in msgs[2], msgs
    assert "the C runtime's kernels" in format_check(table) or "C kernel table" in format_check(table)
    bad = bytearray(data)
    bad[0:4] = b"\xff\xff\xff\x7f"  # the root table offset past the end: the loader refuses the file
    broken = c_check.target_plan(bytes(bad), c_check.HOST)
    assert not broken.ok and broken.refusals == [] and broken.status_name.startswith("EDGE_MODEL"), \
        broken.to_dict()


def test_board_figure_does_not_depend_on_the_patch_code_switch():
    """edge flash compiles the patch code out when the plan has no stage (-DEDGE_WITH_PATCH=0); edge check's
    runner has it in. The arena must not differ: a model with residual ADDs (ADD / SUB / MUL op data holds the
    patch-window fields) plans the same bytes, persistent part included, either way (the QEMU board's
    MobileNetV2 high water was 160 bytes below check's figure, 16 per ADD, before the fields were unconditional)."""
    from tests.test_patching import chain_model

    data = chain_model([("conv", 3, 1, 1, "SAME", 8), ("conv", 1, 1, 1, "SAME", 8), ("add", 1), ("add", 2),
                        ("conv", 1, 1, 1, "SAME", 4)], shape=(1, 8, 8, 3), seed=3)
    layout = c_check.ILP32 if c_check.ILP32 in c_check.target_layouts() else c_check.HOST
    for memory in ("layer", "inplace"):
        on = c_check.target_plan(data, layout, (), memory=memory)
        off = c_check.target_plan(data, layout, ("-DEDGE_WITH_PATCH=0",), memory=memory)
        assert on.ok and off.ok, (on.message, off.message)
        assert on.figures == off.figures, memory


@pytest.mark.slow
def test_board_figure_does_not_depend_on_the_plan_switches():
    """A firmware is built for its plan (gen_ops.plan_defines): the layer plan's without the plan-only run, the
    least-RAM request and the patch stage (EDGE_WITH_PLAN_ONLY / MEMORY_MIN / PATCH = 0). The layer plan's figures
    must not differ from edge check's runner, which has them all; such a build refuses the least-RAM request in one
    line naming the switch (no silently different plan)."""
    from edge_sdk.runtime.op_table import gen_ops_module
    from tests.test_patching import chain_model

    gen_ops = gen_ops_module()
    layer_defs = tuple(gen_ops.plan_defines(False, False))
    assert layer_defs == ("-DEDGE_WITH_PLAN_ONLY=0", "-DEDGE_WITH_MEMORY_MIN=0", "-DEDGE_WITH_PATCH=0")
    assert gen_ops.plan_defines(True, True) == ["-DEDGE_WITH_PLAN_ONLY=0"]
    data = chain_model([("conv", 3, 2, 1, "SAME", 8), ("dw", 3, 1, 1, "SAME"), ("conv", 1, 1, 1, "SAME", 8),
                        ("add", 1)], shape=(1, 12, 10, 3), seed=5)
    layout = c_check.ILP32 if c_check.ILP32 in c_check.target_layouts() else c_check.HOST
    full = c_check.target_plan(data, layout, (), memory="layer")
    built = c_check.target_plan(data, layout, layer_defs, memory="layer")
    assert full.ok and built.ok, (full.message, built.message)
    assert full.figures == built.figures
    refused = c_check.target_plan(data, layout, layer_defs, memory="inplace")
    assert refused.status_name == "EDGE_BAD_ARGUMENT" and "EDGE_WITH_MEMORY_MIN" in refused.message, refused.to_dict()
