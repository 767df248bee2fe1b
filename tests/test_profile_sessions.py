"""`edge profile` (issue review, point 4): the % column adds up to 100 over the top-level rows, a called subgraph's
rows shown as a breakdown of their caller (WHILE, IF, CALL_ONCE); and a second profile session on a board that
already ran a stateful model (CALL_ONCE + resource variables) validates, because the board restarts its runtime
(RESET_STATE with the restart byte, capability RESTART) as the host starts a fresh interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.device import serial_link as sl
from edge_sdk.tools.op_report import OpProfile, OpTiming, format_op_table


def _while_profile() -> OpProfile:
    # WHILE (node 0) 30 ticks, inside it cond (subgraph 1) 10 and body (subgraph 2) 11, whose IF (2:1) ran
    # subgraph 3 (4 ticks); then an ADD (node 1) 10 ticks: the run is 40
    return OpProfile(ops=[OpTiming(0, "WHILE", [30]), OpTiming(1, "ADD", [10]),
                          OpTiming(0, "LESS", [10], subgraph=1, caller=(0, 0)),
                          OpTiming(0, "LESS", [5], subgraph=2, caller=(0, 0)),
                          OpTiming(1, "IF", [6], subgraph=2, caller=(0, 0)),
                          OpTiming(0, "MUL", [4], subgraph=3, caller=(2, 1))], unit="ticks", run_totals=[41])



def _reset_then_restart(url: str):
    """(HELLO's capabilities, the output after RESET_STATE, the output after RESET_STATE restart=True) of one invoke
    on ones each, over a fresh serial link to ``url``."""
    link = sl.SerialLink(url)
    try:
        capabilities = link.hello().capabilities
        link.set_input(0, np.ones(2, np.float32))
        link.reset_state()
        link.invoke(1)
        after_reset = link.get_output(0)
        link.reset_state(restart=True)
        link.invoke(1)
        return capabilities, after_reset, link.get_output(0)
    finally:
        link.close()

def test_percentages_add_up_over_the_top_level_rows():
    rows = OpProfile.rows(_while_profile())
    top = [r for r in rows if r["caller"] is None]
    assert [(r["subgraph"], r["index"]) for r in top] == [(0, 0), (0, 1)]
    assert sum(r["pct"] for r in top) == pytest.approx(100.0)
    assert [r["pct"] for r in top] == pytest.approx([75.0, 25.0]) and top[-1]["cum_pct"] == pytest.approx(100.0)
    # each breakdown row right after its caller (nested in turn), its share of the run, no cumulative share
    assert [(r["subgraph"], r["index"], r["caller"]) for r in rows] == [
        (0, 0, None), (1, 0, [0, 0]), (2, 0, [0, 0]), (2, 1, [0, 0]), (3, 0, [2, 1]), (0, 1, None)]
    inner = rows[1:5]
    assert [r["pct"] for r in inner] == pytest.approx([25.0, 12.5, 15.0, 10.0])
    assert all(r["cum_pct"] is None for r in inner)
    text = "\n".join(format_op_table(rows))
    assert "  LESS (in 0)" in text and "  MUL (in 2:1)" in text
    # the JSON round trip keeps the callers
    again = OpProfile.from_dict(_while_profile().to_dict()).rows()
    assert again == rows


def test_a_model_without_subgraphs_keeps_its_rows():
    p = OpProfile(ops=[OpTiming(0, "CONV_2D", [30, 32]), OpTiming(1, "SOFTMAX", [10, 8])], unit="us")
    rows = p.rows()
    assert [r["pct"] for r in rows] == pytest.approx([77.5, 22.5]) and rows[-1]["cum_pct"] == pytest.approx(100.0)
    assert all(r["caller"] is None for r in rows)


def test_profile_marks_subgraph_rows_as_breakdowns_of_their_caller(tmp_path):
    """Over the device emulator: the WHILE model's rows; the top-level % sum to 100."""
    from edge_sdk.device.emulator import DeviceEmulator
    from edge_sdk.tools.profile import profile_model
    from tests.test_control_flow import X_INT8, nested_model

    path, data = tmp_path / "nested.tflite", tmp_path / "in.npz"
    path.write_bytes(nested_model("INT8"))
    np.savez(data, i=np.array([0], np.int32), x=X_INT8 // 8)
    with DeviceEmulator(path.read_bytes()) as emu:
        r = profile_model(path, "qemu-mps2-an386", port=emu.url, runs=2, inputs=data)
    assert r["validated"], r["mismatches"]
    top = [o for o in r["ops"] if o["caller"] is None]
    assert all(o["subgraph"] == 0 for o in top)
    assert sum(o["pct"] for o in top) == pytest.approx(100.0)
    for o in r["ops"]:
        if o["subgraph"]:
            assert o["caller"] is not None and o["cum_pct"] is None


def _accumulator(tmp_path):
    from tests.test_ops_stateful import accumulator_model

    path = tmp_path / "acc.tflite"
    path.write_bytes(accumulator_model())  # CALL_ONCE sets the variable to (10, 20); each run adds the input
    return path


def test_a_second_session_on_a_stateful_board_validates(tmp_path):
    """Two profile sessions on one emulated board: the second starts from the board's state after boot (CALL_ONCE
    runs again), as the host's fresh interpreter does, so it validates; the runtime's plain reset would not."""
    from edge_sdk.device.emulator import DeviceEmulator
    from edge_sdk.tools.profile import profile_model

    path = _accumulator(tmp_path)
    with DeviceEmulator(path.read_bytes()) as emu:
        first = profile_model(path, "qemu-mps2-an386", port=emu.url, runs=3)
        second = profile_model(path, "qemu-mps2-an386", port=emu.url, runs=3)
        assert first["validated"] and second["validated"], second["mismatches"]
        # the plain reset keeps CALL_ONCE done: the board's variable then starts empty, the host's at (10, 20)
        _, after_reset, after_restart = _reset_then_restart(emu.url)
    np.testing.assert_array_equal(after_reset, [1, 1])
    np.testing.assert_array_equal(after_restart, [11, 21])


def test_restart_payload_is_checked(tmp_path):
    from edge_sdk.device.emulator import DeviceEmulator
    from edge_sdk.errors import DeviceError

    path = _accumulator(tmp_path)
    with DeviceEmulator(path.read_bytes()) as emu:
        link = sl.SerialLink(emu.url)
        try:
            assert link.hello().capabilities & sl.CAP_RESTART
            with pytest.raises(DeviceError, match="BAD_PAYLOAD"):
                link._transact(sl.RESET_STATE, b"\x02")
        finally:
            link.close()


@pytest.mark.slow
def test_a_second_session_on_the_qemu_board_validates(tmp_path, monkeypatch):
    """The firmware's restart (firmware_c/app/main.c): two `edge profile` sessions on one QEMU board running the
    CALL_ONCE accumulator both validate; the plain reset and the restart differ as on the emulator."""
    import shutil

    if not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")):
        pytest.skip("needs qemu-system-arm and arm-none-eabi-gcc")
    from edge_sdk.device import qemu_board as qb
    from edge_sdk.tools import flash as fl
    from edge_sdk.tools.profile import profile_model

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    path = _accumulator(tmp_path)
    try:
        board = fl.flash(path, "qemu-mps2-an386", build_dir=tmp_path / "fw")
        first = profile_model(path, "qemu-mps2-an386", port=board.port, runs=3)
        second = profile_model(path, "qemu-mps2-an386", port=board.port, runs=3)
        assert first["validated"] and second["validated"], second["mismatches"]
        capabilities, after_reset, after_restart = _reset_then_restart(board.port)
        assert capabilities & sl.CAP_RESTART
    finally:
        qb.stop_board(all=True, scope="process")
    np.testing.assert_array_equal(after_reset, [1, 1])
    np.testing.assert_array_equal(after_restart, [11, 21])
