"""The arena the DSP depthwise filter costs (issue 25 point 3): an int8 DEPTHWISE_CONV_2D with a depth multiplier
m % 4 == 0 runs on a DSP core from an int16 copy of its filter pre-paired for SMLAD (micro_speech: the arena 6,736
-> 8,144 B, above TFLM's 6,836). The planner chooses the form (planner.dsp_filter_form): the layer-by-layer plan
keeps the pre-paired copy, the least-RAM requests (--memory inplace / min: EDGE_INIT_MEMORY_MIN) the 8-bit filter
as stored; check says which. The outputs do not depend on the form."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from edge_sdk.model import read_model
from edge_sdk.runtime import planner
from edge_sdk.targets import c_check
from tests.conftest import needs_c_runtime, shared_model
from tests.oprunner import m4_image_mismatches
from tests.test_mcu_kernels import DW_CASES, _dw_model
from tests.test_ops_conv import _run_c  # backend, dsp_runner: tests/conftest.py

TFLM_MICRO_SPEECH_ARENA = 6_836  # TFLM + CMSIS-NN's arena_used_bytes (NOTES.md, 2026-12-02)

needs_ilp32 = pytest.mark.skipif(c_check.ILP32 not in c_check.target_layouts(),
                                 reason="needs arm-linux-gnueabihf-gcc and qemu-user (Debian gcc-arm-linux-gnueabihf "
                                        "qemu-user) for the board's struct layout")


def test_planner_names_the_filters_a_dsp_core_pre_pairs():
    model = read_model(shared_model("tflite-micro/micro_speech_quantized.tflite").read_bytes())
    # node 1: 1 input channel, multiplier 8, a 10x8 filter: 8 outputs x 10 rows x 8 taps x 2 bytes
    assert planner.dsp_paired_filters(model) == [(0, 1, 1280)]
    assert planner.dsp_filter_form(None) == planner.dsp_filter_form("layer") == "pre-paired"
    assert planner.dsp_filter_form("inplace") == planner.dsp_filter_form("min") == "8-bit"
    assert "8-bit" in planner.dsp_filter_words(model, "inplace")
    # its price in instructions, with no patch stage (micro_speech's least-RAM plan: 1.57x the default's on the M4)
    assert f"~{planner.DSP_8BIT_FILTER_COST * 320_000:,.0f} instructions" in planner.dsp_filter_words(model, "min")
    assert "of their 320,000" in planner.dsp_filter_words(model, None)  # 25 x 20 x 8 outputs x 10 x 8 taps
    assert "pre-paired" in planner.dsp_filter_words(model, None)
    m2, _ = _dw_model("dw-m2-c3-portable")  # m % 4 != 0: no pre-paired copy anywhere
    assert planner.dsp_paired_filters(read_model(m2)) == []
    assert planner.dsp_filter_words(read_model(m2), None) is None


@needs_c_runtime
@pytest.mark.parametrize("name", [n for n in DW_CASES if DW_CASES[n][0][4] % 4 == 0])
def test_8bit_filter_under_the_least_ram_request_equals_the_pre_paired_path(backend, dsp_runner, name,  # noqa: F811
                                                                             tmp_path):
    """The emulated-DSP build (the M4's path) with and without EDGE_INIT_MEMORY_MIN: the 8-bit filter's loop and
    the pre-paired SMLAD path give the portable build's bytes."""
    model, feeds = _dw_model(name)
    plain = _run_c(backend, model, feeds)[0]
    (tmp_path / "m.tflite").write_bytes(model)
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(x).tobytes() for x in feeds))
    for extra in ([], ["--memory-min"]):
        proc = subprocess.run([str(dsp_runner), str(tmp_path / "m.tflite"), str(tmp_path / "in.bin"),
                               str(tmp_path / "out.bin"), *extra], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        got = np.frombuffer((tmp_path / "out.bin").read_bytes(), plain.dtype)[:plain.size].reshape(plain.shape)
        np.testing.assert_array_equal(got, plain, err_msg=f"{name} {extra}")
    # the arena: the pre-paired copy (packed weight copies) only without the least-RAM request
    packed = {}
    for extra in ([], ["--memory-min"]):
        out = subprocess.run([str(dsp_runner), str(tmp_path / "m.tflite"), "--plan", *extra],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        packed[bool(extra)] = int(re.search(r"^arena used .* packed (\d+)$", out.stdout, re.M).group(1))
    assert packed[False] > 0 and packed[True] == 0, packed


@needs_ilp32
def test_check_says_which_filter_form_and_the_least_ram_request_fits_below_tflm():
    from edge_sdk.targets.check import check_model

    path = shared_model("tflite-micro/micro_speech_quantized.tflite")
    default = check_model(path, "qemu-mps2-an386", stack=False)
    least = check_model(path, "qemu-mps2-an386", memory="inplace", stack=False)
    assert default.arena_bytes == 8_144 and default.packed_weights_bytes == 1_280  # test_check_c's board figure
    assert any(n.startswith("depthwise filters: pre-paired int16") for n in default.notes), default.notes
    assert any(n.startswith("depthwise filters: 8-bit as stored") for n in least.notes), least.notes
    assert least.packed_weights_bytes == 0
    assert least.arena_bytes < TFLM_MICRO_SPEECH_ARENA < default.arena_bytes


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_8bit_filter_path_on_cortex_m4_under_qemu(tmp_path):
    """The real SXTB16 / SMLABB / SMLATT of the 8-bit filter path (an image initialised with EDGE_INIT_MEMORY_MIN)
    == Python, on every multiplier case of test_mcu_kernels."""
    models = {name: _dw_model(name)[0] for name in DW_CASES if DW_CASES[name][0][4] % 4 == 0}
    failures = m4_image_mismatches(models, tmp_path / "b", init_flags=2)
    assert not failures, f"M4 output (least-RAM request) differs from Python on {failures}"


def test_patch_tradeoff_lists_every_grid_and_the_chosen_one_follows_the_grid_rule():
    """Issue 25 point 2: the stage's grids, RAM against estimated instructions; the chosen grid (patching.choose
    under planner.PATCH_GRID_RULE): person_detect's least-RAM grid is estimated within the aim, so it is kept (the
    least RAM, among grids of that RAM the fewest extra MACs), and its plan says why."""
    from edge_sdk.runtime import patching

    data = shared_model("tflite-micro/person_detect.tflite").read_bytes()
    stage = planner.c_patch_stage(data)
    total = 7_157_888  # person_detect's MACs
    rows = planner.patch_tradeoff(data, total)
    assert len(rows) > 10 and sum(r["chosen"] for r in rows) == 1
    chosen = next(r for r in rows if r["chosen"])
    assert chosen["grid"] == tuple(stage.grid) and chosen["extra_macs"] == stage.extra_macs
    aim, _slack = planner.PATCH_GRID_RULE
    least = min(r["ram"] for r in rows)
    assert chosen["ram"] == least and 1.0 < chosen["instructions"] <= aim
    # the estimate the rule used: 1 + cost x recomputed / the model's conv and FC MACs (person_detect's: all of them)
    macs = patching.model_macs(read_model(data), planner.declared_infos(read_model(data))[0])
    assert macs == total  # the profile counts no pool MACs either
    assert chosen["instructions"] == pytest.approx(1 + planner.PATCH_RECOMPUTE_COST * stage.extra_macs / macs)
    assert chosen["instructions"] == min(r["instructions"] for r in rows if r["ram"] == least)
    assert stage.why.startswith("least RAM") and stage.to_dict()["why"] == stage.why and stage.why in stage.describe()
    # a coarser grid: more RAM, fewer recomputed MACs, fewer estimated instructions; strips recompute nothing
    coarse = next(r for r in rows if r["grid"] == (2, 2))
    assert coarse["ram"] > least and coarse["extra_macs"] < chosen["extra_macs"]
    assert 1.0 < coarse["instructions"] < chosen["instructions"]
    strips = next(r for r in rows if r["grid"] == (12, 1))
    assert strips["extra_macs"] == 0 and strips["instructions"] == 1.0 and strips["ram"] > coarse["ram"] / 2
    lines = planner.tradeoff_lines(rows, total)
    assert lines[0].startswith(f"grid {stage.grid[0]}x{stage.grid[1]}: tensor plan {least} B") and "chosen" in lines[0]


def test_grid_rule_trades_a_little_ram_for_fewer_instructions(monkeypatch):
    """An aim below the least-RAM grid's estimate makes the planner take the least-RAM grid estimated within it
    when it needs at most the slack more RAM (person_detect: 12x6, +12.4% of the MACs recomputed, ~1.16x; under a
    1.1x aim 12x4, +7.4%, at +8.2% RAM), and say so."""
    model = read_model(shared_model("tflite-micro/person_detect.tflite").read_bytes())
    infos = [planner.tensor_infos(model, 0)]
    least = planner.plan_tensors(model, infos, "min").stage
    monkeypatch.setattr(planner, "PATCH_GRID_RULE", (1.1, 0.15))
    traded = planner.plan_tensors(model, infos, "min").stage
    _aim, _slack, cost, macs, _inplace = planner.grid_rule(model, infos)
    assert 1 + cost * traded.extra_macs / macs <= 1.1 < 1 + cost * least.extra_macs / macs
    assert least.ram < traded.ram <= 1.15 * least.ram
    assert traded.why.startswith(f"grid rule: over the least-RAM grid {least.grid[0]}x{least.grid[1]} ({least.ram} B")
    assert "the aim 1.1x" in traded.why
    speech = shared_model("tflite-micro/micro_speech_quantized.tflite").read_bytes()
    assert planner.patch_tradeoff(speech, 336_000) == []  # no patch stage: nothing to trade


@pytest.mark.slow
def test_grid_rule_without_a_grid_within_the_aim(monkeypatch):
    """person_detect again: a zero slack leaves no cheaper grid (the least-RAM one, and why); an aim no grid meets
    within the slack takes the lowest estimate that fits it (12x4: 12x5 recomputes more). ~20 s under load."""
    model = read_model(shared_model("tflite-micro/person_detect.tflite").read_bytes())
    infos = [planner.tensor_infos(model, 0)]
    least = planner.plan_tensors(model, infos, "min").stage
    monkeypatch.setattr(planner, "PATCH_GRID_RULE", (1.1, 0.0))
    kept = planner.plan_tensors(model, infos, "min").stage
    assert kept.grid == least.grid and kept.ram == least.ram and "no grid within 0% more RAM" in kept.why
    monkeypatch.setattr(planner, "PATCH_GRID_RULE", (1.0, 0.15))
    lowest = planner.plan_tensors(model, infos, "min").stage
    assert lowest.grid == (12, 4) and "the lowest estimate" in lowest.why


@pytest.mark.slow
def test_grid_rule_prices_depthwise_run_in_place():
    """mobilenet_v2 224's least-RAM grid (14x4) makes the arena's in-place tier the smallest, which runs its later
    depthwise layers in place; the rule prices their MACs (PATCH_INPLACE_DW_COST). With the in-place loop's DSP form
    (3.4 instructions per MAC more than the same layers outside, QEMU M4: 1.18x the default plan measured; priced 4)
    the grid is estimated within the aim and kept; at the portable loop's price (20) it was not (the rule took 14x2
    then: +28% RAM, 1.05x measured). ~60 s: the model's stages are planned in full."""
    from edge_sdk.runtime import patching

    model = read_model(shared_model("tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite").read_bytes())
    infos = planner.declared_infos(model)
    chosen = planner.plan_tensors(model, infos, "min")
    assert chosen.stage.grid == (14, 4) and chosen.stage.why.startswith("least RAM"), chosen.stage.why
    dw = patching.depthwise_macs(model, infos)
    requests = planner.stage_requests(model, infos, planner.buffer_requests(model, infos, spans=(spans := {})))
    _ap, aliases = planner.least_ram_plan(model, infos, patching.patched_requests(requests, chosen.stage, spans),
                                          spans, set(chosen.stage.nodes))
    inplace = sum(dw.get(k, 0) for k in aliases)
    assert inplace > 0  # in place under the least-RAM grid
    aim, _slack, cost, macs, inplace_cost = planner.grid_rule(model, infos)
    assert patching.estimate(chosen.stage, cost, macs, inplace, inplace_cost) <= aim
    assert patching.estimate(chosen.stage, cost, macs, inplace, 20.0) > aim  # the portable loop's price
    assert chosen.stage.ram == 301_056  # the least-RAM grid's tensor plan (check --memory min lists it)


@needs_ilp32
def test_check_memory_min_prints_the_grids():
    from edge_sdk.targets.check import check_model, format_check

    path = shared_model("tflite-micro/person_detect.tflite")
    r = check_model(path, "qemu-mps2-an386", memory="min", stack=False)
    assert r.memory_plan == "patch" and r.patch_grids and "chosen" in r.patch_grids[0]
    assert r.to_dict()["patch_grids"] == r.patch_grids
    text = format_check(r)
    assert "the stage's grids" in text and r.patch_grids[-1] in text
    assert check_model(path, "qemu-mps2-an386", stack=False).patch_grids == []
