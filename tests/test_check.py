"""`edge check`: verdicts, problems, arena/flash budgets and delegate partitions for models with known problems."""

import json

import numpy as np
import pytest

from edge_sdk.targets.check import (
    FAILS,
    PARTIAL,
    RUNS,
    check_model,
    format_check,
    partition_nodes,
    prepare_nodes,
)
from edge_sdk.model import read_model, write_model
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.targets.profiles import load_profile
from tests.conftest import shared_model

S_IN, S_W = 0.05, 0.02


def _conv(g, x, shape, cout, k, *, depthwise=False, per_channel=False, dilation=1, stride=1, name="conv"):
    """An int8 CONV_2D / DEPTHWISE_CONV_2D (SAME padding) after tensor ``x`` of ``shape``; returns (y, y_shape)."""
    rng = np.random.default_rng(k * 31 + cout)
    n, h, w, cin = shape
    wshape = (1, k, k, cout) if depthwise else (cout, k, k, cin)
    scales = np.full(cout, S_W, np.float32) * (np.linspace(1, 2, cout, dtype=np.float32) if per_channel else 1)
    wq = {"scale": scales if per_channel else S_W, "zero_point": 0, "quantized_dimension": 3 if depthwise else 0}
    wt = g.constant(f"{name}_w", rng.integers(-127, 128, wshape).astype(np.int8), **wq)
    b = g.constant(f"{name}_b", np.zeros(cout, np.int32), scale=(scales if per_channel else S_W) * S_IN, zero_point=0)
    yshape = (n, -(-h // stride), -(-w // stride), cout)
    y = g.tensor(f"{name}_out", yshape, "INT8", scale=S_IN, zero_point=0)
    opts = {"padding": "SAME", "stride_w": stride, "stride_h": stride, "dilation_w_factor": dilation,
            "dilation_h_factor": dilation, "fused_activation_function": "NONE"}
    if depthwise:
        g.op("DEPTHWISE_CONV_2D", [x, wt, b], [y], depth_multiplier=cout // cin, version=3 if per_channel else 1,
             **opts)
    else:
        g.op("CONV_2D", [x, wt, b], [y], version=3 if per_channel else 1, **opts)
    return y, yshape


def _depthwise_model(k, dilation=1, per_channel=False, shape=(1, 16, 16, 4)) -> bytes:
    g = GraphBuilder()
    x = g.input("x", shape, "INT8", scale=S_IN, zero_point=0)
    y, _ = _conv(g, x, shape, shape[-1], k, depthwise=True, dilation=dilation, per_channel=per_channel)
    g.output(y)
    return write_model(g.build())


def _problems(result, **match):
    return [p for p in result.problems if all(p.get(k) == v for k, v in match.items())]


# ----------------------------------------------------------------------------------------------- verdicts
def test_small_int8_model_runs_everywhere_it_should():
    model = _depthwise_model(3)
    for target in ("qemu-mps2-an386", "stm32f746-disco", "rp2040-pico", "esp32-s3", "host-linux", "raspberry-pi-4"):
        r = check_model(model, target)
        assert r.verdict == RUNS, (target, r.problems)
        assert r.problems == []
        assert [(p.backend, p.nodes) for p in r.partitions] == [("cpu", (0,))]


def test_op_without_a_kernel_fails_naming_node_op_version_dtype():
    g = GraphBuilder()
    x = g.input("x", (1, 8), "FLOAT32")
    y = g.tensor("y", (1, 8), "FLOAT32")
    z = g.tensor("z", (1, 8), "FLOAT32")
    g.op("RELU", [x], [y])
    g.op("SKIP_GRAM", [y], [z], version=2)  # in the schema, no kernel in either runtime (a string op)
    g.output(z)
    r = check_model(g.build(), "qemu-mps2-an386")
    assert r.verdict == FAILS
    (p,) = r.errors
    assert (p["node"], p["op"], p["version"], p["dtype"], p["backend"], p["constraint"]) == (
        1, "SKIP_GRAM", 2, "FLOAT32", "cpu", "kernel")
    assert "SKIP_GRAM" in p["message"] and "node 1" in p["message"]
    assert r.arena_bytes is not None  # the arena is still planned from the declared shapes


def test_float_compute_op_fails_on_cortex_m0plus_but_runs_on_m4():
    g = GraphBuilder()
    x = g.input("x", (1, 16), "FLOAT32")
    w = g.constant("w", np.ones((4, 16), np.float32))
    y = g.tensor("y", (1, 4), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w, -1], [y])
    g.output(y)
    model = g.build()
    r = check_model(model, "rp2040-pico")
    assert r.verdict == FAILS
    (p,) = r.errors
    assert (p["op"], p["dtype"], p["constraint"]) == ("FULLY_CONNECTED", "FLOAT32", "op")
    assert check_model(model, "nrf52840-dk").verdict == RUNS


def test_rank_above_the_mcu_limit_fails():
    shape = (1, 1, 2, 1, 2, 1, 2)  # rank 7: TFLM's RuntimeShape holds at most 6 dims
    g = GraphBuilder()
    a = g.input("a", shape, "FLOAT32")
    b = g.input("b", shape, "FLOAT32")
    y = g.tensor("y", shape, "FLOAT32")
    g.op("ADD", [a, b], [y])
    g.output(y)
    r = check_model(g.build(), "stm32h743")
    assert r.verdict == FAILS
    ranks = _problems(r, constraint="max_rank")
    assert ranks and ranks[0]["value"] == 7 and ranks[0]["limit"] == 6
    assert not _problems(check_model(g.build(), "host-linux"), constraint="max_rank")  # no rank limit on hosts


def test_kernel_size_constraint_is_checked_against_the_actual_filter(tmp_path):
    """A profile allowing depthwise kernels <= 8: a 9x9 filter fails naming the constraint, 7x7 runs."""
    profile = tmp_path / "small-dw.toml"
    profile.write_text('extends = "qemu-mps2-an386"\n[ops.int8]\nDEPTHWISE_CONV_2D = { max_kernel = 8 }\n')
    r9 = check_model(_depthwise_model(9), str(profile))
    assert r9.verdict == FAILS
    (p,) = r9.errors
    assert (p["node"], p["op"], p["constraint"], p["value"], p["limit"]) == (0, "DEPTHWISE_CONV_2D", "max_kernel",
                                                                             [9, 9], 8)
    assert "9x9" in p["message"]
    assert check_model(_depthwise_model(7), str(profile)).verdict == RUNS
    assert check_model(_depthwise_model(9), "qemu-mps2-an386").verdict == RUNS  # the stock profile has no limit


def test_arena_too_large_for_rp2040():
    g = GraphBuilder()
    shape = (1, 128, 128, 8)  # 128 KiB per int8 tensor: input + output exceed the Pico's 192 KiB arena budget
    x = g.input("x", shape, "INT8", scale=S_IN, zero_point=0)
    c = g.constant("c", np.ones(shape[-1], np.int8), scale=S_IN, zero_point=0)
    y = g.tensor("y", shape, "INT8", scale=S_IN, zero_point=0)
    g.op("ADD", [x, c], [y], fused_activation_function="NONE")
    g.output(y)
    model = g.build()
    r = check_model(model, "rp2040-pico")
    assert r.verdict == FAILS
    (p,) = r.errors
    assert p["kind"] == "arena" and p["value"] == r.arena_bytes and p["limit"] == 192 * 1024
    from edge_sdk import Interpreter

    interp = Interpreter(model_content=write_model(model))
    interp.allocate_tensors()
    assert r.checked_by == "c-runtime"  # the C runtime's own plan: tensors + its persistent part
    assert r.ram["tensor_bytes"] == interp.arena_size == 2 * 128 * 128 * 8
    assert r.arena_bytes == r.ram["high_water"] > interp.arena_size
    assert check_model(model, "rp2040-pico", c_runtime=False).arena_bytes == interp.arena_size  # the estimate
    assert check_model(model, "stm32h743").verdict == RUNS  # 512 KiB AXI SRAM budget


def test_model_too_large_for_flash():
    g = GraphBuilder()
    x = g.input("x", (1, 1024), "INT8", scale=S_IN, zero_point=0)
    w = g.constant("w", np.ones((1024, 1024), np.int8), scale=S_W, zero_point=0)  # 1 MiB of weights
    y = g.tensor("y", (1, 1024), "INT8", scale=S_IN, zero_point=0)
    g.op("FULLY_CONNECTED", [x, w, -1], [y], fused_activation_function="NONE")
    g.output(y)
    model = g.build()
    r = check_model(model, "stm32f746-disco")
    assert r.verdict == FAILS
    (p,) = r.errors
    assert p["kind"] == "flash" and p["value"] == r.model_bytes == len(write_model(model))
    assert p["limit"] == 768 * 1024 and r.model_bytes > 1024 * 1024
    assert check_model(model, "stm32h743").verdict == RUNS


# ----------------------------------------------------------------------------------------------- delegates
def _float_in_the_middle() -> bytes:
    """int8 conv -> DEQUANTIZE -> float LOGISTIC -> QUANTIZE -> int8 conv (per-tensor weights)."""
    g = GraphBuilder()
    shape = (1, 8, 8, 4)
    x = g.input("x", shape, "INT8", scale=S_IN, zero_point=0)
    a, s = _conv(g, x, shape, 4, 3, name="c0")
    f = g.tensor("f", s, "FLOAT32")
    g.op("DEQUANTIZE", [a], [f])
    f2 = g.tensor("f2", s, "FLOAT32")
    g.op("LOGISTIC", [f], [f2])
    q = g.tensor("q", s, "INT8", scale=S_IN, zero_point=0)
    g.op("QUANTIZE", [f2], [q])
    y, _ = _conv(g, q, s, 4, 3, name="c1")
    g.output(y)
    return write_model(g.build())


def test_partial_on_coral_with_a_float_op_in_the_middle():
    model = _float_in_the_middle()
    r = check_model(model, "coral-edgetpu-usb")
    assert r.verdict == PARTIAL and r.errors == []
    # The Edge TPU compiler partitions once: after the first fallback everything stays on the CPU.
    assert [(p.backend, p.nodes) for p in r.partitions] == [("edgetpu", (0,)), ("cpu", (1, 2, 3, 4))]
    names = read_model(model).subgraphs[0].tensors
    tpu, cpu = r.partitions
    assert [names[t].name for t in tpu.outputs] == ["c0_out"]
    assert [names[t].name for t in cpu.inputs] == ["c0_out"]
    assert [names[t].name for t in cpu.outputs] == ["c1_out"]
    why = {p["node"]: p["constraint"] for p in r.problems if p["severity"] == "fallback"}
    assert why == {1: "op", 2: "dtype", 3: "dtype", 4: "max_partitions"}
    d = r.to_dict()
    assert d["fallback_nodes"] == 4 and d["partitions"][1]["input_names"] == ["c0_out"]


def test_partitions_without_a_partition_limit(tmp_path):
    profile = tmp_path / "tpu-many.toml"
    profile.write_text('extends = "coral-edgetpu-usb"\n[delegates.edgetpu]\nmax_partitions = 10\n')
    r = check_model(_float_in_the_middle(), str(profile))
    assert r.verdict == PARTIAL
    assert [(p.backend, p.nodes) for p in r.partitions] == [("edgetpu", (0,)), ("cpu", (1, 2, 3)), ("edgetpu", (4,))]
    assert r.partitions[1].outputs == r.partitions[2].inputs[:1]


def test_edgetpu_constraints_from_node_parameters():
    """Per-channel weights and dilated depthwise kernels fall back to the CPU, naming the constraint."""
    r = check_model(_depthwise_model(3, per_channel=True), "coral-edgetpu-usb")
    assert r.verdict == PARTIAL
    assert [p["constraint"] for p in _problems(r, severity="fallback")] == ["per_channel"]
    r = check_model(_depthwise_model(3, dilation=2), "coral-edgetpu-usb")
    assert r.verdict == PARTIAL
    (p,) = _problems(r, severity="fallback")
    assert (p["constraint"], p["value"], p["limit"]) == ("max_dilation", [2, 2], 1)
    assert check_model(_depthwise_model(3), "coral-edgetpu-usb").verdict == RUNS


def test_profile_supports_for_delegates():
    model = read_model(_float_in_the_middle())
    nodes, failures, _ = prepare_nodes(model)
    assert failures == {}
    coral = load_profile("coral-edgetpu-usb")
    assert coral.supports(nodes[0][0], "edgetpu") == (True, "ok")
    ok, why = coral.supports(nodes[0][2], "edgetpu")
    assert not ok and "FLOAT32" in why
    assert coral.supports(nodes[0][2]) == (True, "ok")  # the Pi's CPU takes everything
    assert set(coral.delegates) == {"edgetpu", "litert"}
    assert "CONV_2D" in coral.delegates["edgetpu"].op_names("int8")


def test_partition_nodes_boundaries():
    model = read_model(_float_in_the_middle())
    parts = partition_nodes(model, ["a", "a", "b", "b", "a"])
    assert [(p.backend, p.nodes) for p in parts] == [("a", (0, 1)), ("b", (2, 3)), ("a", (4,))]
    t = {x.name: i for i, x in enumerate(model.subgraphs[0].tensors)}
    assert parts[0].inputs == (t["x"],) and parts[0].outputs == (t["f"],)
    assert parts[1].inputs == (t["f"],) and parts[1].outputs == (t["q"],)
    assert parts[2].inputs == (t["q"],) and parts[2].outputs == (t["c1_out"],)


# ----------------------------------------------------------------------------------------------- shared models
def test_person_detect_runs_on_stm32f746_with_the_interpreters_arena():
    from edge_sdk import Interpreter

    path = shared_model("tflite-micro/person_detect.tflite")
    r = check_model(path, "stm32f746-disco")
    assert r.verdict == RUNS, r.problems
    interp = Interpreter(model_path=str(path))
    interp.allocate_tensors()
    assert r.ram["tensor_bytes"] == interp.arena_size
    if r.ram["layout"] == "ilp32-arm":  # the board's own high-water mark, read back by `edge profile` on QEMU
        assert r.arena_bytes == 80_904 and not r.to_dict()["arena_estimate"]  # test_check_c: the board's figure
    assert r.model_bytes == path.stat().st_size
    assert check_model(path, "qemu-mps2-an386").verdict == RUNS


@pytest.mark.parametrize("name", ["hello_world_int8", "hello_world_float", "keyword_scrambled",
                                  "micro_speech_quantized", "trained_lstm_int8", "audio_preprocessor_int8"])
def test_shared_models_run_on_qemu_and_host(name):
    path = shared_model(f"tflite-micro/{name}.tflite")
    for target in ("qemu-mps2-an386", "host-linux"):
        r = check_model(path, target)
        assert r.verdict == RUNS, (target, r.problems)


def test_shared_models_that_do_not_fit():
    mobilenet = shared_model("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite")
    # 3.98 MB of model: no STM32H743 holds it; its 2.59 MB layer plan (1.58 MB in place) does not fit its RAM
    # either, so check takes patch-based execution (about 0.44 MB), which does
    r = check_model(mobilenet, "stm32h743")
    assert r.verdict == FAILS and {p["kind"] for p in r.errors} == {"flash"}
    assert r.memory_plan == "patch" and r.plans["patch"] < r.ram_budget < r.plans["inplace"] < r.plans["layer"]
    assert check_model(mobilenet, "qemu-mps2-an386").verdict == RUNS  # model and arena in the board's PSRAM
    r = check_model(shared_model("tflite-micro/person_detect_vela.tflite"), "host-linux")
    assert r.verdict == FAILS and "Ethos-U" in r.errors[0]["message"]


def test_python_target_takes_the_least_ram_plan_when_nothing_else_fits(tmp_path):
    """A Python-runtime target (the interpreter's own plans and patch stage): without --memory, the least-RAM plan
    when neither the layer nor the in-place plan fits the budget, and the report says which plan, its RAM and
    its extra MACs; --memory min asks for it directly."""
    from edge_sdk.runtime.interpreter import Interpreter
    from tests.test_patching import CHAINS, chain_model

    data = chain_model(CHAINS["residual"])
    least = Interpreter(model_content=data, memory="min")
    least.allocate_tensors()
    stage = least.patch_plan()
    assert least.memory_plan == "patch" and stage is not None
    layer = check_model(data, "host-linux")
    assert layer.memory_plan == "layer" and list(layer.plans) == ["layer"] and layer.extra_macs == 0
    profile = tmp_path / "tight.toml"
    profile.write_text(f'extends = "host-linux"\nram_arena_bytes = {(least.arena_size + layer.arena_bytes) // 2}\n')
    auto = check_model(data, profile)
    assert auto.verdict == RUNS and auto.memory_plan == "patch" and auto.arena_bytes == least.arena_size
    assert auto.extra_macs == stage.extra_macs > 0 and auto.patch.startswith("patch plan: stage nodes ")
    assert auto.plans["patch"] == least.arena_size < auto.plans["layer"] == layer.arena_bytes
    assert any("using the least-RAM plan (--memory min" in n for n in auto.notes)
    assert f"(least-RAM patch-based plan, +{stage.extra_macs} MACs)" in format_check(auto)
    asked = check_model(data, "host-linux", memory="min")
    assert (asked.memory_plan, asked.arena_bytes, asked.patch) == ("patch", least.arena_size, auto.patch)


# ----------------------------------------------------------------------------------------------- CLI
def test_cli_check_exit_codes_and_json(tmp_path, capsys):
    from edge_sdk.cli import CHECK_FAILS_EXIT, main

    path = tmp_path / "dw.tflite"
    path.write_bytes(_depthwise_model(3))
    assert main(["check", str(path), "--target", "qemu-mps2-an386", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("verdict", "problems", "arena_bytes", "ram_budget", "model_bytes", "flash_budget", "partitions"):
        assert key in d
    assert d["verdict"] == "runs" and d["ram_budget"] == 7 * 1024 * 1024

    big = tmp_path / "big.tflite"
    g = GraphBuilder()
    x = g.input("x", (1, 128, 128, 8), "INT8", scale=S_IN, zero_point=0)
    y = g.tensor("y", (1, 128, 128, 8), "INT8", scale=S_IN, zero_point=0)
    g.op("RELU", [x], [y])
    g.output(y)
    big.write_bytes(write_model(g.build()))
    assert main(["check", str(big), "--target", "rp2040-pico"]) == CHECK_FAILS_EXIT == 1
    out = capsys.readouterr().out
    assert "FAILS" in out and "arena" in out

    (tmp_path / "p.tflite").write_bytes(_float_in_the_middle())
    assert main(["check", str(tmp_path / "p.tflite"), "--target", "coral-edgetpu-usb"]) == 0
    assert "PARTIAL" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "p.tflite"), "--target", "coral-edgetpu-usb", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verdict"] == "partial" and [p["backend"] for p in d["partitions"]] == ["edgetpu", "cpu"]
    assert {p["constraint"] for p in d["problems"]} == {"op", "dtype", "max_partitions"}

    assert main(["check", str(path), "--target", "no-such-board"]) == 2  # an unknown name is argument misuse (issue 27)
    assert "no-such-board" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------- the interpreter's prepare
def _double_writer_model() -> bytes:
    """Two RELU nodes writing the same tensor: the interpreter refuses it (ModelError)."""
    g = GraphBuilder()
    x = g.input("x", (1, 8), "INT8", scale=S_IN, zero_point=0)
    y = g.tensor("y", (1, 8), "INT8", scale=S_IN, zero_point=0)
    g.op("RELU", [x], [y])
    g.op("RELU", [x], [y])
    g.output(y)
    return write_model(g.build())


def test_double_writer_gets_the_interpreters_model_error():
    from edge_sdk import Interpreter
    from edge_sdk.errors import ModelError

    data = _double_writer_model()
    interp = Interpreter(model_content=data)
    with pytest.raises(ModelError) as exc:
        interp.allocate_tensors()
    for target in ("host-linux", "raspberry-pi-4"):
        r = check_model(data, target)
        assert r.verdict == FAILS
        assert [p.get("runtime_error") for p in r.errors] == [str(exc.value)], r.problems


def test_prepare_nodes_is_the_interpreters_prepare_report():
    from edge_sdk.runtime.interpreter import Interpreter

    data = _double_writer_model()
    nodes, failures, _ = prepare_nodes(read_model(data))
    _, failures2, _ = Interpreter(model_content=data).prepare_report()
    assert list(failures) == list(failures2) == [(0, 1)]
    assert [str(e) for e in failures.values()] == [str(e) for e in failures2.values()]
    assert len(nodes[0]) == 2


def test_stateful_wake_word_model_runs_on_every_profile_the_interpreter_runs_it():
    """VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE / CALL_ONCE carry no data type of their own."""
    from edge_sdk.targets.profiles import list_profiles

    path = shared_model("pymicro-wakeword/hey_jarvis.tflite")
    for target in list_profiles():
        r = check_model(path, target)
        stateful = [p for p in r.problems if p.get("op") in ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE",
                                                            "CALL_ONCE") and p["severity"] == "error"]
        assert not stateful, (target, stateful)
    assert check_model(path, "host-linux").verdict == RUNS
    assert check_model(path, "qemu-mps2-an386").verdict == RUNS


# ----------------------------------------------------------------------------------------------- the report
def test_report_budgets_first_then_one_line_per_op_and_reason_and_json_keeps_every_node():
    import json

    from edge_sdk.targets.check import group_problems

    g = GraphBuilder()
    t = g.input("x", (1, 8), "FLOAT32")
    for k in range(5):
        y = g.tensor(f"y{k}", (1, 8), "FLOAT32")
        g.op("SKIP_GRAM", [t], [y], version=2)  # no kernel in either runtime (a string op)
        t = y
    g.output(t)
    model = g.build()
    for target in ("host-linux", "qemu-mps2-an386"):
        r = check_model(model, target)
        text = format_check(r)
        lines = text.splitlines()
        assert lines[0].endswith(")") and "FAILS" in lines[0]
        assert lines[1].lstrip().startswith("RAM") and any(x.lstrip().startswith("flash") for x in lines[2:6])
        floor = [x for x in lines if "SKIP_GRAM" in x]
        assert len(floor) == 1 and "5 node(s): 0, 1, 2, 3, 4" in floor[0], text
        (group,) = group_problems(r.errors)
        assert group["count"] == 5 and group["nodes"] == [(0, k) for k in range(5)]
        d = json.loads(json.dumps(r.to_dict()))
        assert sorted(p["node"] for p in d["problems"]) == [0, 1, 2, 3, 4]  # --json keeps every node
