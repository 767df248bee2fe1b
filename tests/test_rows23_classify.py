"""A labelled classifier whose input is [-1, C] (rows of features), given T rows: `edge run` with a .npy of [T, C]
and `edge serve` with a [T, C] request classify each row (one top-k per row, as a LiteRT user gets from the batch);
the scores == softmax of LiteRT's reference outputs resized to [T, C]. Messages name the user's file, never the
shaped copy in the cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edge_sdk import cli
from edge_sdk.errors import ModelError
from edge_sdk.model.builder import GraphBuilder
from edge_sdk.model.manifest import write_manifest
from edge_sdk.model.writer import write_model
from edge_sdk.tools.serve import Server
from tests.test_serve import request


def rows_classifier(channels: int, classes: int, seed: int) -> tuple[bytes, list[str]]:
    """FULLY_CONNECTED [-1, channels] -> [-1, classes] logits, labels in the manifest."""
    g = GraphBuilder()
    x = g.input("feats", (1, channels), "FLOAT32")
    w = np.random.default_rng(seed).standard_normal((classes, channels)).astype(np.float32)
    y = g.tensor("logits", (1, classes), "FLOAT32")
    g.op("FULLY_CONNECTED", [x, g.constant("w", w), -1], [y])
    g.output(y)
    model = g.build()
    sg = model.subgraphs[0]
    sg.tensors[sg.inputs[0]].shape_signature = (-1, channels)
    sg.tensors[sg.outputs[0]].shape_signature = (-1, classes)
    labels = [f"class{i}" for i in range(classes)]
    write_manifest(model, {"task": "classify", "labels": labels})
    return write_model(model), labels


def litert_probabilities(content: bytes, x: np.ndarray) -> np.ndarray:
    """Softmax over each row of LiteRT's reference outputs at x's shape."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=content, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.resize_tensor_input(0, x.shape, strict=True)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    y = it.get_tensor(it.get_output_details()[0]["index"]).astype(np.float64)
    e = np.exp(y - y.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def assert_rows_match(rows: list[list[dict]], want: np.ndarray, labels: list[str], k: int) -> None:
    assert len(rows) == want.shape[0]
    for preds, p in zip(rows, want):
        order = np.argsort(-p, kind="stable")[:k]
        assert [d["label"] for d in preds] == [labels[i] for i in order]
        np.testing.assert_allclose([d["score"] for d in preds], p[order], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("channels, classes, rows", [(4, 3, 3), (6, 5, 7)])
def test_run_classifies_each_row(tmp_path, capsys, channels, classes, rows):
    content, labels = rows_classifier(channels, classes, seed=rows)
    model, x_path = tmp_path / "rows.tflite", tmp_path / "x.npy"
    model.write_bytes(content)
    x = np.random.default_rng(rows).standard_normal((rows, channels)).astype(np.float32)
    np.save(x_path, x)
    assert cli.main(["run", str(model), str(x_path), "--backend", "python", "--top-k", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["row"] for r in doc] == list(range(rows)) and {r["input"] for r in doc} == {str(x_path)}
    assert_rows_match([r["predictions"] for r in doc], litert_probabilities(content, x), labels, 2)
    assert cli.main(["run", str(model), str(x_path), "--backend", "python"]) == 0
    assert f"{x_path} row {rows - 1}:" in capsys.readouterr().out


@pytest.mark.parametrize("backend", ["python", "c"])
def test_run_and_bench_take_a_single_row_as_one_row(tmp_path, capsys, backend):
    """A [C] .npy for a [-1, C] input: one row, as `edge serve` takes a [C] request (edge_sdk.model.input_shapes
    .with_batch_axis, one rule for the three); `edge run`'s scores == LiteRT's resized to [1, C]."""
    if backend == "c":
        from tests.conftest import require_c_runtime

        require_c_runtime()
    content, labels = rows_classifier(5, 4, seed=7)
    model, x_path = tmp_path / "rows.tflite", tmp_path / "x.npy"
    model.write_bytes(content)
    x = np.random.default_rng(7).standard_normal(5).astype(np.float32)
    np.save(x_path, x)
    assert cli.main(["run", str(model), str(x_path), "--backend", backend, "--top-k", "3", "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["runtime"] == backend and "row" not in doc
    assert_rows_match([doc["predictions"]], litert_probabilities(content, x[None]), labels, 3)
    assert cli.main(["bench", str(model), "--inputs", str(x_path), "--backend", backend, "--runs", "2",
                     "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [i["shape"] for i in report["input_shapes"]] == [[1, 5]], report["input_shapes"]


def test_run_names_the_users_file_not_the_shaped_copy(tmp_path, capsys):
    content, _ = rows_classifier(4, 3, seed=1)
    model, x_path, labels = tmp_path / "mine.tflite", tmp_path / "x.npy", tmp_path / "two.txt"
    model.write_bytes(content)
    np.save(x_path, np.ones((5, 4), np.float32))
    labels.write_text("a\nb\n")
    assert cli.main(["run", str(model), str(x_path), "--backend", "python", "--labels", str(labels)]) != 0
    err = capsys.readouterr().err
    assert f"{model}: 2 labels for 3 classes" in err and "shaped" not in err, err


def test_serve_classifies_each_requests_rows():
    content, labels = rows_classifier(6, 5, seed=4)
    rng = np.random.default_rng(5)
    for task in ("classify", None):  # --task classify, or the manifest's task
        with Server(content, port=0, task=task) as srv:
            for rows in (4, 1):
                x = rng.standard_normal((rows, 6)).astype(np.float32)
                status, doc, _ = request(srv, "POST", "/predict", {"inputs": x.tolist(), "top_k": 3})
                assert status == 200, doc
                got = doc["predictions"] if rows > 1 else [doc["predictions"]]
                assert_rows_match(got, litert_probabilities(content, x), labels, 3)


def test_serve_refuses_a_detector_sized_per_request_in_one_line():
    content, _ = rows_classifier(4, 3, seed=2)
    with pytest.raises(ModelError) as info:
        Server(content, port=0, task="detect")
    said = str(info.value)
    assert "<bytes>" in said and "'feats' [-1, 4]" in said and "--input-shape" in said and "\n" not in said, said


@pytest.mark.slow
def test_flash_and_profile_name_the_users_file_not_the_shaped_copy(tmp_path, capsys, monkeypatch):
    """`edge flash` / `edge profile --input-shape` on a [-1, C] model: the JSON and the board list name the user's
    file (they named ~/.cache/edge-sdk/shaped/...)."""
    import shutil

    if not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")):
        pytest.skip("needs qemu-system-arm and arm-none-eabi-gcc")
    from edge_sdk.device import qemu_board as qb

    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))
    model = tmp_path / "rows.tflite"
    model.write_bytes(rows_classifier(4, 3, seed=3)[0])
    target, shape = "qemu-mps2-an386", "feats:3,4"
    try:
        assert cli.main(["flash", str(model), "--target", target, "--input-shape", shape, "--json",
                         "--build-dir", str(tmp_path / "fw")]) == 0
        flashed = json.loads(capsys.readouterr().out)
        assert flashed["model"] == str(model)
        assert [b["model"] for b in qb.list_boards()] == [str(model)]
        assert cli.main(["profile", str(model), "--target", target, "--input-shape", shape, "--runs", "1",
                         "--json"]) == 0
        profiled = json.loads(capsys.readouterr().out)
        assert profiled["model"] == str(model) and profiled["validated"], profiled
    finally:
        qb.stop_board(all=True, scope="process")
