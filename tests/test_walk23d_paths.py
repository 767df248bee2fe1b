"""Issue 23, dynamic shapes as a user meets them (session 15):

* `edge run MODEL x.npy --input-shape x:D0,...` with an array of another shape: one line naming the file, the
  array, the input and the flag, exit 2 (was: a ModelError from the runtime, exit 3);
* a tensor whose data was folded away (a PAD folded into the conv that reads it): get_tensor / tensor() raise
  LiteRT's "Tensor data is null" with the reason on both backends, get_tensor_details marks it ``no_data``;
* `edge serve` of a model with a -1 beyond the batch axis and no --input-shape: each request runs at its own
  shape (as LiteRT after resize_tensor_input), on either backend; a shape the model cannot run at is a 400
  naming it.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk import Interpreter, cli
from edge_sdk.model import read_model
from edge_sdk.runtime import planner
from edge_sdk.tools.serve import Server
from tests.conftest import needs_c_runtime
from tests.test_input_shapes import BINS, _reference, log_mel_like
from tests.test_pad_fold import CHAINS, _feed
from tests.test_patching import chain_model
from tests.test_serve import predict, request
from tests.sshd import lab, ssh_cache  # noqa: F401  (fixtures)


# --------------------------------------------------------------------------- run: a file against the flag
@pytest.mark.parametrize("flag", ["x:4,8", "4,8"])
def test_run_names_a_file_that_contradicts_input_shape_and_exits_2(tmp_path, capsys, flag):
    model = tmp_path / "lm.tflite"
    model.write_bytes(log_mel_like())
    six = tmp_path / "six.npy"
    np.save(six, np.zeros((6, BINS), np.float32))
    assert cli.main(["run", str(model), str(six), "--input-shape", flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"edge run: error: {six}: array shaped [6, 8] float32 for input 'x' [-1,-1] float32 "
                   "(--input-shape 4,8)"]
    four = tmp_path / "four.npy"
    np.save(four, np.ones((4, BINS), np.float32))
    assert cli.main(["run", str(model), str(four), "--input-shape", flag, "--json"]) == 0


# --------------------------------------------------------------------------- folded tensors hold no data
@pytest.mark.parametrize("backend", ["python", pytest.param("c", marks=needs_c_runtime)])
@pytest.mark.parametrize("dtype", ["INT8", "FLOAT32"])
def test_a_folded_pads_output_is_null_and_marked_on_both_backends(backend, dtype):
    data = chain_model(CHAINS["two_pairs"], dtype=dtype)
    m = read_model(data)
    folded = {f.output for f in planner.folded_pads(m, planner.declared_infos(m))}
    assert len(folded) == 2
    it = Interpreter(model_content=data, backend=backend)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], _feed(data))
    it.invoke()
    marked = {d["index"] for d in it.get_tensor_details() if d.get("no_data")}
    assert marked == folded
    for t in folded:
        for read in (it.get_tensor, lambda t: it.tensor(t)()):
            with pytest.raises(ValueError, match=f"^Tensor data is null for tensor {t}: node \\d+ \\(PAD\\) that "
                                                 "writes it is folded into the convolution"):
                read(t)
    readable = [d["index"] for d in it.get_tensor_details() if not d.get("no_data")]
    assert all(it.get_tensor(t) is not None for t in readable)  # every other tensor still reads


# --------------------------------------------------------------------------- serve: one shape per request
@pytest.mark.parametrize("backend", ["python", pytest.param("c", marks=needs_c_runtime)])
def test_serve_runs_each_request_of_a_dynamic_model_at_its_own_shape(backend):
    """On both backends (`--backend c`: judged by its ops at start, not prepared at the stored placeholder [1, 1]
    where its RESHAPE cannot run; each request's shape is a CInterpreter resized to it)."""
    with Server(log_mel_like(), port=0, max_batch=4, backend=backend) as srv:
        assert srv.runtime.name == backend, srv.runtime
        assert "each request runs alone at its own shape" in srv.batch_note
        for frames in (4, 9, 3, 4):
            x = np.random.default_rng(frames).standard_normal((frames, BINS)).astype(np.float32)
            status, doc, _ = predict(srv, x)
            assert status == 200, doc
            np.testing.assert_allclose(np.asarray(doc["outputs"][0]), _reference(x), rtol=1e-5, atol=1e-5)
        raw = np.ones((5, BINS), np.float32)
        status, data, headers = request(srv, "POST", "/predict", raw.tobytes(), {
            "Content-Type": "application/octet-stream", "X-Shape": f"5,{BINS}", "X-Dtype": "float32",
            "Accept": "application/octet-stream"})
        assert status == 200 and headers["X-Shape"] == "1,36"
        np.testing.assert_allclose(np.frombuffer(data, np.float32).reshape(1, -1), _reference(raw), rtol=1e-5)
        status, doc, _ = predict(srv, np.zeros((4, 5), np.float32))  # 5 bins: the signature's -1 allows it,
        assert status == 400 and "input shapes [[4, 5]]: the model cannot run" in doc["error"]  # the model not
        status, doc, _ = predict(srv, np.zeros((2, 2, 2), np.float32))
        assert status == 400 and "shape signature [-1, -1]" in doc["error"]
        status, doc, _ = predict(srv, np.ones((4, BINS), np.float32))  # the server still serves
        assert status == 200


def test_serve_with_input_shape_keeps_one_shape():
    with Server(log_mel_like(), port=0, input_shapes={"x": (4, BINS)}) as srv:
        assert srv.dynamic == {}
        status, doc, _ = predict(srv, np.ones((6, BINS), np.float32))
        assert status == 400 and "another size needs another server" in doc["error"]
        status, doc, _ = predict(srv, np.ones((4, BINS), np.float32))
        assert status == 200


# --------------------------------------------------------------------------- bench --host --inputs
def test_bench_on_a_device_checks_its_inputs_file_here_first(tmp_path, capsys):
    """A file that cannot feed the model is named before any connection (the host does not exist)."""
    model = tmp_path / "lm.tflite"
    model.write_bytes(log_mel_like())
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((2, 2, 2), np.float32))
    assert cli.main(["bench", str(model), "--host", "nobody@127.0.0.1:1", "--inputs", str(bad)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"edge bench: error: {bad}: array shaped [2, 2, 2] float32 for input 'x' [-1,-1] float32"]


@pytest.mark.slow
def test_bench_on_a_loopback_device_runs_the_real_input_data(lab, tmp_path):
    from edge_sdk.tools.bench import bench
    from edge_sdk.tools.deploy import deploy
    from tests.test_bench import two_op_model

    lab.start("pi1")
    assert deploy(two_op_model(tmp_path / "m.tflite"), "pi1", build_c=False).ok  # the device's runtime
    model = tmp_path / "lm.tflite"
    model.write_bytes(log_mel_like())
    data = tmp_path / "six.npy"
    np.save(data, np.random.default_rng(6).standard_normal((6, BINS)).astype(np.float32))
    r = bench(model, "pi1", runs=3, warmup=1, inputs=data)
    assert r["host"] == "pi1" and "/.edge-sdk/bench/inputs-" in r["inputs"] and r["inputs"].endswith(".npy")
    assert r["input_shapes"] == [{"name": "x", "shape": [6, BINS]}]  # the file's length, on the device
    assert [o["op"] for o in r["ops"]] == ["RESHAPE", "CONV_2D", "RESHAPE"]


def test_serve_does_not_batch_a_model_whose_input_holds_an_output_shape():
    """serve's batching probe (made-up feeds) asks Interpreter.required_input_values: an input read as RESHAPE's
    shape has one legal value, which a batch of 2 would change, so the server serves one request at a time and
    says why (was: a random shape fed, a DataError reported as 'cannot run with a batch axis of 2')."""
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("x", (1,), "FLOAT32")
    shape = g.input("wanted_shape", (1,), "INT32")
    y = g.tensor("y", (1,), "FLOAT32")
    g.op("RESHAPE", [x, shape], [y])
    g.output(y)
    with Server(write_model(g.build()), port=0, max_batch=4, backend="python") as srv:
        assert srv.max_batch == 1
        assert "input 'wanted_shape' holds an output shape" in srv.batch_note, srv.batch_note


@needs_c_runtime
def test_serve_backend_c_runs_a_computed_parameter_at_each_requests_shape():
    """`edge serve --backend c` of a dynamic model whose PAD paddings are computed from SHAPE(x): each request's
    length gets its own C bytes (the paddings a constant there: runtime.c_loaded), outputs as LiteRT's."""
    from tests.oprunner import run_peer
    from tests.test_shape_arithmetic import pad_to_model

    with Server(pad_to_model(5, 3), port=0, backend="c") as srv:
        assert srv.runtime.name == "c", srv.runtime
        for n in (5, 9, 1):
            x = np.random.default_rng(n).standard_normal((1, n, 3)).astype(np.float32)
            status, doc, _ = predict(srv, x)
            assert status == 200, doc
            (want,) = run_peer(pad_to_model(n, 3), [x], "litert")
            np.testing.assert_allclose(np.asarray(doc["outputs"][0], np.float32), want, rtol=1e-6, atol=1e-6)
        status, doc, _ = predict(srv, np.ones((1, 13, 3), np.float32))  # longer than the pad target: a 400
        assert status == 400 and "input shapes [[1, 13, 3]]" in doc["error"], doc
