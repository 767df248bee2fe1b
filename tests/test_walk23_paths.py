"""Issue 23's user paths walked again (session 12): what failed from the command line on models nobody tuned for,
each fixed in its tool and pinned here, cheaply (in-process, no board).

- `edge inspect` judged a [-1, -1] input at its placeholder [1, 1] ("CONV_2D ... window ... does not fit an input
  of 1"): now the one line naming the input, its signature and --input-shape, which inspect takes like every
  command that plans the model; the tensor rows show the signature beside the stored shape.
- `edge serve` refused JSON true / false for an IF's bool condition ("cannot feed float32 values to the bool
  input") and any value for an unquantized int32 input: those inputs take their own values.
- `edge bench --backend c` listed the rows of IF branches / WHILE bodies as "(in ?)", without shape or MACs.
- A float model whose outputs matched the board bit for bit did not say the tolerance it was held to.
- `edge run` / `bench` / `serve` did not check weights for NaN (convert does): the same check (one home,
  edge_sdk.tools.run_backend.nan_weights) now warns, naming the constant.
- Each fleet step ran ansible-inventory to find its host's address: the playbook passes it from hostvars.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edge_sdk import cli
from edge_sdk.model import write_model
from edge_sdk.model.builder import GraphBuilder
from tests.conftest import needs_c_runtime
from tests.test_control_flow import counting_while_model, if_model
from tests.test_input_shapes import MESSAGE, log_mel_like


# ------------------------------------------------------------------------------------------------ inspect
def test_inspect_names_the_dynamic_input_and_takes_its_shape(tmp_path, capsys):
    model = tmp_path / "fe.tflite"
    model.write_bytes(log_mel_like())
    assert cli.main(["inspect", str(model)]) == 0  # still inspected: structure, and the one problem
    out = capsys.readouterr().out
    assert f"problem: {MESSAGE} (the run-time figures need it)" in out
    assert "window" not in out  # no kernel error at the placeholder shape
    assert "  0  x " in out and "1x1 (-1x-1)" in out  # the signature beside the stored shape

    assert cli.main(["inspect", str(model), "--json", "--input-shape", "x:4,8"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["problems"] == [] and report["input_shapes"] == {"x": [4, 8]}
    assert report["arena"]["bytes"] > 0 and report["macs"] == 2 * 6 * 2 * 9  # conv 3x3, 2 filters, 2x6 outputs
    x = report["subgraphs"][0]["tensors"][0]
    assert x["shape"] == [4, 8] and x["shape_signature"] == [-1, -1]

    assert cli.main(["inspect", str(model), "--input-shape", "y:4,8"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "edge inspect: error: --input-shape: the model has no input 'y' (inputs: x)"]


# ------------------------------------------------------------------------------------------------ serve
def test_serve_feeds_bool_and_integer_inputs_their_own_values():
    from tests.test_serve import request
    from edge_sdk.tools.serve import Server

    x = [[0.5, -1.25, 2.0, 3.5]]
    then, other = [1.0, -2.5, 4.0, 7.0], [0.25, 1.5625, 4.0, 12.25]
    with Server(if_model("FLOAT32"), port=0, backend="python") as srv:  # IF on a bool cond: x + x, else x * x
        for cond, want in ((True, then), (False, other), (1, then), (0, other)):
            status, body, _ = request(srv, "POST", "/predict", {"inputs": {"cond": [cond], "x": x}})
            assert status == 200, body
            np.testing.assert_allclose(body["outputs"][0], [want], rtol=1e-6)
        status, body, _ = request(srv, "POST", "/predict", {"inputs": {"cond": [2], "x": x}})
        assert status == 400 and "bool input 'cond' must be true / false" in body["error"], body
    # an int32 counter i: while i < 10: i += 1, x += 0.5
    with Server(counting_while_model(), port=0, backend="python") as srv:
        status, body, _ = request(srv, "POST", "/predict", {"inputs": {"i": [7], "x": [[0.0, 1.0, 2.0]]}})
        assert status == 200, body
        assert body["outputs"][0] == [10]
        np.testing.assert_allclose(body["outputs"][1], [[1.5, 2.5, 3.5]])
        status, body, _ = request(srv, "POST", "/predict", {"inputs": {"i": [2.5], "x": [[0.0, 1.0, 2.0]]}})
        assert status == 400 and "values for the int32 input 'i' must be integers" in body["error"], body


# ------------------------------------------------------------------------------------------------ bench
def _fc_loop_model(steps: int = 3) -> bytes:
    """while i < steps: x = x @ W^T (FC 4x4: 16 MACs per call); i += 1."""
    g = GraphBuilder()
    i0, x0 = g.input("i", (1,), "INT32"), g.input("x", (1, 4), "FLOAT32")
    i1, x1 = g.tensor("i_out", (1,), "INT32"), g.tensor("x_out", (1, 4), "FLOAT32")
    cond, body = g.subgraph("cond"), g.subgraph("body")
    ci, _ = cond.input("i", (1,), "INT32"), cond.input("x", (1, 4), "FLOAT32")
    go = cond.tensor("go", (1,), "BOOL")
    cond.op("LESS", [ci, cond.constant("n", np.array([steps], np.int32))], [go])
    cond.output(go)
    bi, bx = body.input("i", (1,), "INT32"), body.input("x", (1, 4), "FLOAT32")
    ni, nx = body.tensor("i_next", (1,), "INT32"), body.tensor("x_next", (1, 4), "FLOAT32")
    w = body.constant("w", (np.eye(4, dtype=np.float32) * 0.5))
    body.op("FULLY_CONNECTED", [bx, w, -1], [nx])
    body.op("ADD", [bi, body.constant("one", np.array([1], np.int32))], [ni], fused_activation_function="NONE")
    body.output(ni, nx)
    g.op("WHILE", [i0, x0], [i1, x1], cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.output(i1, x1)
    return write_model(g.build())


@needs_c_runtime
def test_bench_c_places_subgraph_rows_under_their_caller_with_shapes_and_macs(monkeypatch):
    from edge_sdk.tools import bench

    monkeypatch.setattr(bench, "_random_inputs", lambda details, seed, required=None: [
        np.zeros(d["shape"], d["dtype"]) for d in details])  # i = 0: three iterations every run
    report = bench.run_benchmark(_fc_loop_model(), runs=1, warmup=0, backend="c", profile_runs=2)
    rows = {(o["subgraph"], o["index"]): o for o in report["ops"]}
    assert rows[(0, 0)]["op"] == "WHILE" and rows[(0, 0)]["caller"] is None
    fc = rows[(2, 0)]
    assert fc["op"] == "FULLY_CONNECTED" and fc["caller"] == [0, 0], fc
    assert fc["output_shape"] == [1, 4] and fc["macs"] == 3 * 16, fc  # per run: 3 calls of 16 MACs
    assert rows[(1, 0)]["caller"] == [0, 0] and rows[(1, 0)]["output_shape"] == [1]
    from edge_sdk.tools.bench import format_bench

    assert "(in ?)" not in format_bench(report) and "(in 0)" in format_bench(report)


# ------------------------------------------------------------------------------------------------ profile
def test_a_bit_exact_float_validation_still_says_its_tolerance():
    from edge_sdk.tools.profile import tolerance_note, validation_line

    exact = {"outputs": [{}], "float_outputs": [{"bit_exact": True, "within": True, "max_abs_diff": 0.0,
                                                 "tolerance": 1e-5}], "float_max_abs_diff": 0.0,
             "float_tolerance": 1e-5}
    assert validation_line(exact) == "outputs: identical to the host interpreter (bit for bit)"
    assert tolerance_note(exact) == "  (float outputs are held to a tolerance of 1e-05; these matched exactly)"
    assert tolerance_note({"outputs": [{}], "float_outputs": []}) is None  # integer outputs: bit for bit, no tolerance
    near = {**exact, "float_outputs": [{**exact["float_outputs"][0], "bit_exact": False, "max_abs_diff": 4e-7}]}
    assert tolerance_note(near) is None and "tolerance 1e-05" in validation_line(near)


# ------------------------------------------------------------------------------------------------ NaN weights
def _nan_weight_model(path):
    g = GraphBuilder()
    x = g.input("x", (1, 4), "FLOAT32")
    w = np.ones((3, 4), np.float32)
    w[2, 1] = np.nan
    y = g.tensor("y", (1, 3), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, g.constant("dense/w", w), -1], [y])
    g.output(y)
    write_model(g.build(), path)
    return path


NAN_LINE = ("warning: MODEL {m}: constant tensor 'dense/w' (subgraph 0, tensor 2) holds 1 NaN of 12 values: every "
            "output it reaches is NaN or meaningless; fix the float model")


def test_run_and_bench_name_a_nan_weight_with_converts_check(tmp_path, capsys):
    model = _nan_weight_model(tmp_path / "nanw.tflite")
    sample = tmp_path / "x.npy"
    np.save(sample, np.ones((1, 4), np.float32))
    assert cli.main(["run", str(model), str(sample), "--backend", "python"]) == 0
    assert NAN_LINE.format(m=model) in capsys.readouterr().err.splitlines()
    assert cli.main(["bench", str(model), "--runs", "1", "--warmup", "0", "--backend", "python", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["runs"] == 1 and NAN_LINE.format(m=model) in err.splitlines()
    assert cli.main(["convert", str(model), "-o", str(tmp_path / "o.tflite"), "--quantize", "fp16"]) == 3
    assert "constant tensor 'dense/w' (subgraph 0, tensor 2) holds 1 NaN of 12 values" in capsys.readouterr().err
    clean = tmp_path / "clean.tflite"
    clean.write_bytes(if_model("FLOAT32"))  # no NaN (and no warning) in a model with subgraphs
    from edge_sdk.tools.run_backend import warn_nan_weights

    assert warn_nan_weights(clean.read_bytes(), clean) is None and warn_nan_weights(b"junk", "junk") is None


# ------------------------------------------------------------------------------------------------ fleet
def test_a_fleet_step_takes_its_address_from_hostvars_without_ansible_inventory(tmp_path, monkeypatch):
    from edge_sdk.errors import DeviceError
    from edge_sdk.tools import fleet

    def no_inventory(*_a, **_k):
        raise AssertionError("a step with --ssh-host must not run ansible-inventory")

    seen = []

    def connection_for(target, **_k):
        seen.append(target)
        raise DeviceError("stop here")  # the step records the failure; no ssh is tried

    monkeypatch.setattr(fleet, "inventory_hosts", no_inventory)
    monkeypatch.setattr(fleet.deploy_mod, "connection_for", connection_for)
    model = tmp_path / "m.tflite"
    model.write_bytes(b"x")
    results = tmp_path / "results"
    results.mkdir()
    argv = ["snapshot", "--inventory", str(tmp_path / "none.ini"), "--host", "garage", "--model", str(model),
            "--results", str(results), "--ssh-host", "127.0.0.3", "--ssh-port", "2202", "--ssh-user", "pi"]
    assert fleet.step(argv) == 1
    (t,) = seen
    assert (t.name, t.host, t.port, t.user) == ("garage", "127.0.0.3", 2202, "pi")
    assert json.loads((results / "garage.json").read_text())["error"] == "stop here"
    seen.clear()
    assert fleet.step(argv[:-6] + ["--ssh-host", "pi.local", "--ssh-port", "", "--ssh-user", ""]) == 1
    assert (seen[0].host, seen[0].port, seen[0].user) == ("pi.local", None, None)
    # the shipped playbook hands every step the host's own hostvars
    text = fleet.PLAYBOOK.read_text()
    for var in ("ansible_host", "ansible_port", "ansible_user"):
        assert f"hostvars[inventory_hostname].{var}" in text
    assert fleet.target_from_hostvars("shed", {"ansible_host": "10.0.0.7", "ansible_port": 22}).port == 22


def test_a_fleet_rollout_takes_input_shape_like_deploy(tmp_path, monkeypatch, capsys):
    """`edge deploy --inventory` dropped --input-shape: each host's deploy step then failed on the -1. Now the model
    is shaped once, before any host is read, and that copy is what the playbook rolls out."""
    pytest.importorskip("ansible_runner")
    from edge_sdk.errors import DeviceError
    from edge_sdk.model import read_model
    from edge_sdk.tools import fleet

    model = tmp_path / "fe.tflite"
    model.write_bytes(log_mel_like())
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[pis]\nkitchen ansible_host=127.0.0.9\n")
    monkeypatch.setattr(fleet, "inventory_hosts", lambda inv: [fleet.target_from_hostvars("kitchen", {})])
    assert cli.main(["deploy", str(model), "--inventory", str(inventory)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"edge deploy: error: {MESSAGE}"]

    rolled = []

    class Runner:  # ansible_runner's run(): what the playbook would roll out, then no host reached
        @staticmethod
        def run(extravars, **_k):
            rolled.append(Path(extravars["edge_model"]))
            raise DeviceError("no Ansible here")

    monkeypatch.setattr(fleet, "require_ansible", lambda: Runner)
    with pytest.raises(DeviceError):
        fleet.rollout(model, inventory, wheel=tmp_path / "w.whl", input_shapes={"x": (4, 8)})
    (shipped,) = rolled
    assert shipped.name == "fe.tflite" and shipped != model.resolve()
    x = read_model(shipped.read_bytes()).subgraphs[0]
    assert tuple(x.tensors[x.inputs[0]].shape) == (4, 8)
