"""Accuracy, calibration and agreement metrics on hand-computed cases; the reliability diagram; data loading;
`edge evaluate` on a small model built here."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from converters import evaluate as ev
from converters.report import per_layer_table, reliability_diagram
from edge_sdk.errors import ModelError

# Five samples, two classes, true class 0 for all. Confidences 0.9, 0.75, 0.55, 0.55, 0.95 fall in bins
# 13, 11, 8, 8, 14 of 15 (bin = ceil(15 c) - 1); correct: yes, no, yes, no, yes.
PROBS = np.array([[0.9, 0.1], [0.25, 0.75], [0.55, 0.45], [0.45, 0.55], [0.95, 0.05]])
Y = np.zeros(5, np.int64)


def test_ece_hand_computed():
    # |1-0.9| + |0-0.75| + 2*|0.5-0.55| + |1-0.95| = 0.1 + 0.75 + 0.1 + 0.05 = 1.0, over 5 samples
    assert ev.expected_calibration_error(PROBS, Y) == pytest.approx(0.2, abs=1e-12)
    bins = ev.reliability_bins(PROBS, Y)
    assert len(bins) == 15
    assert [b["count"] for b in bins] == [0] * 8 + [2, 0, 0, 1, 0, 1, 1]
    assert bins[8]["accuracy"] == 0.5 and bins[8]["confidence"] == pytest.approx(0.55)
    assert bins[8]["lower"] == pytest.approx(8 / 15) and bins[8]["upper"] == pytest.approx(9 / 15)


def test_ece_bin_edges_and_perfect_calibration():
    # confidence exactly 1 lands in the last bin, a bin's upper edge belongs to that bin
    probs = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert ev.reliability_bins(probs, [0, 1])[14]["count"] == 2
    assert ev.expected_calibration_error(probs, [0, 1]) == 0.0
    # 4 samples at confidence 0.75, 3 right: perfectly calibrated -> ECE 0; all wrong -> ECE 0.75
    p = np.tile([[0.75, 0.25]], (4, 1))
    assert ev.expected_calibration_error(p, [0, 0, 0, 1]) == pytest.approx(0.0, abs=1e-12)
    assert ev.expected_calibration_error(p, [1, 1, 1, 1]) == pytest.approx(0.75)


def test_nll_and_accuracy_hand_computed():
    expected = -np.mean(np.log([0.9, 0.25, 0.55, 0.45, 0.95]))
    assert ev.negative_log_likelihood(PROBS, Y) == pytest.approx(expected, rel=1e-12)
    assert ev.top_k_accuracy(PROBS, Y, 1) == pytest.approx(3 / 5)
    assert ev.top_k_accuracy(PROBS, Y, 2) == 1.0
    # a zero probability is clipped at 1e-12, not inf
    assert ev.negative_log_likelihood(np.array([[1.0, 0.0]]), [1]) == pytest.approx(-math.log(1e-12))


def test_top5_six_classes():
    p = np.array([[0.3, 0.25, 0.2, 0.1, 0.1, 0.05],   # true 5: sixth -> outside top-5
                  [0.3, 0.25, 0.2, 0.1, 0.1, 0.05]])  # true 4: fifth -> inside
    assert ev.top_k_accuracy(p, [5, 4], 5) == 0.5
    assert ev.top_k_accuracy(p, [5, 4], 1) == 0.0


def test_logits_become_probabilities():
    logits = np.log(PROBS) + 3.0  # a softmax of these gives PROBS back
    m = ev.classification_metrics(logits, Y)
    assert m["ece"] == pytest.approx(0.2) and m["top1"] == pytest.approx(0.6)
    assert m["nll"] == pytest.approx(ev.negative_log_likelihood(PROBS, Y))
    assert ev.to_probabilities(PROBS, "auto") == pytest.approx(PROBS)


def test_compare_drop_agreement_logit_error():
    ref = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 3.0]])
    q = np.array([[1.5, 0.0], [1.0, 0.5], [1.0, 0.0], [0.0, 2.0]])
    y = np.array([0, 1, 0, 1])
    r = ev.compare(q, ref, y)
    assert r["reference"]["top1"] == 1.0 and r["model"]["top1"] == 0.75
    assert r["accuracy_drop"] == pytest.approx(0.25)
    assert r["agreement"] == pytest.approx(0.75)
    # |0.5| + |1|+|0.5| + 0 + |1| over 8 values
    assert r["mean_abs_logit_error"] == pytest.approx(3.0 / 8)
    assert r["ece_change"] == pytest.approx(r["model"]["ece"] - r["reference"]["ece"])


def test_bad_labels_are_model_errors():
    with pytest.raises(ModelError, match="outside"):
        ev.top_k_accuracy(PROBS, [0, 0, 0, 0, 2])
    with pytest.raises(ModelError, match="labels"):
        ev.top_k_accuracy(PROBS, [0, 0])


def test_reliability_png(tmp_path):
    from PIL import Image

    path = tmp_path / "rel.png"
    bins = ev.reliability_bins(PROBS, Y)
    assert reliability_diagram(bins, path, reference_bins=bins, size=(320, 240), title="t") == (320, 240)
    with Image.open(path) as img:
        assert img.format == "PNG" and img.size == (320, 240)
        pixels = np.asarray(img.convert("RGB")).reshape(-1, 3)
    # the accuracy bars (blue) and the gap (red) are drawn
    assert np.any(np.all(pixels == (66, 114, 196), axis=1))
    assert np.any(np.all(pixels == (230, 120, 120), axis=1))


def test_per_layer_table_sorts_worst_first():
    rep = {"layers": [{"name": "a", "snr_db": 30.0, "cosine": 0.999}, {"name": "b", "snr_db": 12.5},
                      {"name": "c"}, {"tensor": "d", "snr": 20.0, "cosine_similarity": 0.99}]}
    assert [r["name"] for r in per_layer_table(rep)] == ["b", "d", "a", "c"]
    assert per_layer_table(None) == []


def test_load_dataset_npz_and_image_folder(tmp_path):
    from PIL import Image

    np.savez(tmp_path / "d.npz", x=np.ones((3, 1, 2, 2), np.float32), y=np.array([0, 1, 1]))
    x, y = ev.load_dataset(tmp_path / "d.npz")
    assert x.shape == (3, 1, 2, 2) and list(y) == [0, 1, 1]
    np.savez(tmp_path / "bad.npz", images=np.ones(3))
    with pytest.raises(ModelError, match="x and y"):
        ev.load_dataset(tmp_path / "bad.npz")

    root = tmp_path / "imgs"
    for cls, value in (("cat", 255), ("dog", 0)):
        (root / cls).mkdir(parents=True)
        Image.new("L", (6, 6), value).save(root / cls / "a.png")
    pre = {"size": [4, 4], "channels": "GRAY", "layout": "NCHW", "value_range": [0, 1], "mean": [0.5], "std": [0.5]}
    x, y = ev.load_dataset(root, pre, labels=["dog", "cat"])
    assert x.shape == (2, 1, 4, 4) and list(y) == [1, 0]  # classes follow the labels' order
    assert np.allclose(x[0], 1.0) and np.allclose(x[1], -1.0)
    x, _ = ev.load_dataset(root, None, input_shape=(1, 3, 3, 1))  # from the model input: NHWC gray 3x3
    assert x.shape == (2, 3, 3, 1)


def test_fit_samples_layouts():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    assert ev.fit_samples(x, (1, 4, 5, 3)).shape == (2, 4, 5, 3)
    assert np.array_equal(ev.fit_samples(x, (1, 4, 5, 3))[1, 2, 3], x[1, :, 2, 3])
    with pytest.raises(ModelError, match="do not fit"):
        ev.fit_samples(x, (1, 7, 7, 1))


def _fc_model(tmp_path, quantized=False):
    """A 4 -> 3 FULLY_CONNECTED classifier (float, or int8 with int8 I/O) written to tmp_path."""
    from edge_sdk.model import write_model
    from edge_sdk.model.builder import GraphBuilder

    w = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]], np.float32)
    g = GraphBuilder()
    if not quantized:
        x = g.input("x", (1, 4), "FLOAT32")
        wt = g.constant("w", w)
        y = g.tensor("y", (1, 3), "FLOAT32")
        g.op("FULLY_CONNECTED", [x, wt, -1], [y])
    else:
        x = g.input("x", (1, 4), "INT8", scale=1 / 64, zero_point=0)
        wt = g.constant("w", (w * 127).astype(np.int8), scale=[1 / 127] * 3, zero_point=[0] * 3)
        y = g.tensor("y", (1, 3), "INT8", scale=1 / 32, zero_point=0)
        g.op("FULLY_CONNECTED", [x, wt, -1], [y])
    g.output(y)
    path = tmp_path / ("q.tflite" if quantized else "f.tflite")
    write_model(g.build(), path)
    return path


def _data(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (40, 4)).astype(np.float32)
    y = np.argmax(np.stack([x[:, 0], x[:, 1], x[:, 2] + x[:, 3]], axis=1), axis=1)
    y[:4] = (y[:4] + 1) % 3  # some wrong labels so accuracy < 1
    path = tmp_path / "data.npz"
    np.savez(path, x=x, y=y)
    return path, x, y


def test_evaluate_model_against_numpy(tmp_path):
    fpath = _fc_model(tmp_path)
    qpath = _fc_model(tmp_path, quantized=True)
    data, x, y = _data(tmp_path)
    logits = np.stack([x[:, 0], x[:, 1], x[:, 2] + x[:, 3]], axis=1)
    report = ev.evaluate(fpath, data, reference=None, plot=tmp_path / "p.png")
    assert report["model"]["top1"] == pytest.approx(36 / 40)
    assert report["model"]["ece"] == pytest.approx(ev.expected_calibration_error(ev.softmax(logits), y))
    assert (tmp_path / "p.png").stat().st_size > 0
    cmp = ev.evaluate(qpath, data, reference=fpath)
    assert 0.9 <= cmp["agreement"] <= 1.0
    assert 0 < cmp["mean_abs_logit_error"] < 0.05  # int8 steps of 1/64 in, 1/32 out
    assert cmp["accuracy_drop"] == pytest.approx(cmp["reference"]["top1"] - cmp["model"]["top1"])


def test_cli_evaluate_json_and_exit_codes(tmp_path, capsys):
    from edge_sdk.cli import main

    fpath = _fc_model(tmp_path)
    qpath = _fc_model(tmp_path, quantized=True)
    data, _, _ = _data(tmp_path)
    plot = tmp_path / "rel.png"
    assert main(["evaluate", str(qpath), "--data", str(data), "--reference", str(fpath), "--plot", str(plot),
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"model", "reference", "accuracy_drop", "ece_change", "agreement", "mean_abs_logit_error"} <= set(report)
    assert plot.exists()
    assert main(["evaluate", str(fpath), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "top-1" in out and "ECE" in out
    bad = tmp_path / "bad.npz"
    np.savez(bad, z=np.ones(2))
    assert main(["evaluate", str(fpath), "--data", str(bad)]) == 3
    assert "x and y" in capsys.readouterr().err
    assert main(["evaluate", str(fpath), "--data", str(tmp_path / "absent.npz")]) == 6
