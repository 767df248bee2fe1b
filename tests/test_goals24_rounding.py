"""int8 weights rounded by their layer's output error (converters/quantize/rounding.py, GPTQ): on the Gram matrix of
the layer's inputs the rounding's output error is lower than nearest rounding's, on the same grid (each channel's
scale kept); through convert in int16x8, models built here with onnx.helper (conv nets with a depthwise layer, a
sequence MLP) come out with a higher output SNR against the float model on held-back samples than with nearest
rounding, and an op kept float gets its own float weights back."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from converters import convert  # noqa: E402
from converters.quantize import rounding  # noqa: E402
from edge_sdk.model import read_model  # noqa: E402


def _correlated(n: int, k: int, seed: int) -> np.ndarray:
    """[n, k] inputs whose k features are strongly correlated (a few latent factors, mixed the same way for every
    ``seed``, plus a little noise), as neighbouring pixels and channels of a feature map are."""
    mixing = np.random.default_rng(k).standard_normal((max(2, k // 6), k))
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, len(mixing))) @ mixing + 0.2 * rng.standard_normal((n, k))


@pytest.mark.parametrize("k,o", [(9, 16), (48, 8), (120, 32)])
def test_gptq_lowers_the_output_error_on_the_same_grid(k, o):
    rng = np.random.default_rng(k)
    w = rng.standard_normal((o, k)) * np.exp(rng.uniform(-1, 1, (o, 1)))
    scale = np.abs(w).max(axis=1) / 127
    x_fit, x_new = _correlated(400, k, 1), _correlated(400, k, 2)
    q = rounding.gptq(w, x_fit.T @ x_fit, scale)
    nearest = np.round(w / scale[:, None])
    assert np.all(q == np.round(q)) and np.abs(q).max() <= 127
    assert np.all(np.abs(q).max(axis=1) == 127)  # each row keeps its largest weight at +-127: the same scale

    def error(ints):  # the layer's output error on samples the rounding was not fitted on
        return float(np.sum((x_new @ (ints * scale[:, None] - w).T) ** 2))

    assert error(q) < 0.5 * error(nearest), (error(q), error(nearest))  # measured: 0.05-0.26x


def test_gptq_with_one_gram_per_row_is_the_shared_one_repeated():
    rng = np.random.default_rng(3)
    w, x = rng.standard_normal((6, 9)), _correlated(200, 9, 4)
    h = x.T @ x
    scale = np.abs(w).max(axis=1) / 127
    per_row = rounding.gptq(w, np.repeat(h[None], 6, axis=0), scale)
    nearest = np.round(w / scale[:, None])
    err = lambda ints: float(np.einsum("ok,kl,ol->", ints * scale[:, None] - w, h, ints * scale[:, None] - w))  # noqa
    assert err(per_row) < err(nearest)


def test_the_rounding_runs_on_one_blas_thread_with_the_same_integers():
    """rounding.one_blas_thread: BLAS on one thread inside (threadpoolctl reports it), as many as before after;
    GPTQ's integers and a Gram matrix are the same bits on one thread as on BLAS's default threads (OpenBLAS splits
    a product by output blocks: each sum runs in the same order), so the written model is the same."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    rng = np.random.default_rng(11)
    k, o = 576, 64  # a 3x3x64 convolution's patch, wide enough for OpenBLAS to split
    w = rng.standard_normal((o, k))
    scale = np.abs(w).max(axis=1) / 127
    x = _correlated(1024, k, 5).astype(np.float32)
    gram, ints = x.T @ x, rounding.gptq(w, (x.T @ x).astype(np.float64), scale)
    with rounding.one_blas_thread():
        assert set(blas_threads()) == {1}
        gram1, ints1 = x.T @ x, rounding.gptq(w, (x.T @ x).astype(np.float64), scale)
    assert blas_threads() == before
    assert np.array_equal(gram, gram1) and np.array_equal(ints, ints1)


@pytest.mark.parametrize("k, batch", [(9, (7,)), (64, ()), (65, ()), (300, ()), (20, (3,))])
def test_inverse_cholesky_is_the_cholesky_factor_of_the_inverse(k, batch):
    """U from one Cholesky of the reversed H and a triangular inverse by halves equals the upper Cholesky factor of
    H^-1 (what GPTQ spreads its errors through) to rounding, shared [K, K] and batched [O, K, K] (depthwise), across
    the direct / halved block sizes; the output energy by matrix products equals the three-operand einsum."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal(batch + (2 * k, k))
    h = np.swapaxes(a, -1, -2) @ a + 0.01 * np.eye(k)
    expected = np.swapaxes(np.linalg.cholesky(np.linalg.inv(h)), -1, -2)
    u = rounding.inverse_cholesky(h)
    assert np.array_equal(u, np.triu(u))
    np.testing.assert_allclose(u, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    w = rng.standard_normal((batch[0] if batch else 5, k))
    einsum = np.einsum("ok,okl,ol->", w, h, w) if batch else np.einsum("ok,kl,ol->", w, h, w)
    assert rounding._energy(w, h) == pytest.approx(float(einsum), rel=1e-12)


def _save(tmp_path, name, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return str(path)


def _conv_net(tmp_path, channels: int, seed: int) -> str:
    """x [1, 3, 16, 16] -> Conv 3x3 -> Relu -> depthwise 3x3 -> Relu -> Conv 1x1 -> Relu -> GlobalAveragePool ->
    y [1, 2 x channels, 1, 1]."""
    rng = np.random.default_rng(seed)
    c = channels
    he = lambda *s: (rng.standard_normal(s) * np.sqrt(2.0 / np.prod(s[1:]))).astype(np.float32)  # noqa: E731
    inits = {"w1": he(c, 3, 3, 3), "b1": np.zeros(c, np.float32), "w2": he(c, 1, 3, 3),
             "b2": (rng.standard_normal(c) * 0.1).astype(np.float32), "w3": he(2 * c, c, 1, 1),
             "b3": np.zeros(2 * c, np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=c),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]), helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("GlobalAveragePool", ["r3"], ["y"])]
    vi = helper.make_tensor_value_info
    return _save(tmp_path, f"convnet{channels}", nodes, [vi("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                 [vi("y", TensorProto.FLOAT, [1, 2 * c, 1, 1])], inits)


def _sequence_mlp(tmp_path, width: int, seed: int) -> str:
    """x [1, 32, 12] (32 steps of 12 features) -> MatMul (12 -> width) + bias -> Relu -> MatMul (width -> 8) -> y."""
    rng = np.random.default_rng(seed)
    inits = {"w1": (rng.standard_normal((12, width)) / np.sqrt(12)).astype(np.float32),
             "b1": (rng.standard_normal(width) * 0.1).astype(np.float32),
             "w2": (rng.standard_normal((width, 8)) / np.sqrt(width)).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]), helper.make_node("MatMul", ["r1", "w2"], ["y"])]
    vi = helper.make_tensor_value_info
    return _save(tmp_path, f"mlp{width}", nodes, [vi("x", TensorProto.FLOAT, [1, 32, 12])],
                 [vi("y", TensorProto.FLOAT, [1, 32, 8])], inits)


def _sequences(n: int, seed: int) -> np.ndarray:
    """[n, 1, 32, 12] sequences whose features are correlated (as one layer's outputs are)."""
    return _correlated(n * 32, 12, seed).reshape(n, 1, 32, 12).astype(np.float32)


def _images(n: int, seed: int) -> np.ndarray:
    """Smooth pictures (neighbouring pixels correlated): low-resolution noise upsampled, plus a little noise."""
    rng = np.random.default_rng(seed)
    low = rng.uniform(0, 1, (n, 3, 4, 4))
    return (np.kron(low, np.ones((1, 1, 4, 4))) + 0.05 * rng.standard_normal((n, 3, 16, 16))).astype(np.float32)


def _snr(result) -> float:
    return min(o["worst_snr_db"] for o in result.report["guard"]["outputs"])


@pytest.mark.parametrize("build,data,ops", [
    (lambda d: _conv_net(d, 8, seed=8), lambda n, s: _images(n, s), {"CONV_2D", "DEPTHWISE_CONV_2D"}),
    (lambda d: _conv_net(d, 24, seed=24), lambda n, s: _images(n, s), {"CONV_2D", "DEPTHWISE_CONV_2D"}),
    (lambda d: _sequence_mlp(d, 48, seed=1), lambda n, s: _sequences(n, s), {"FULLY_CONNECTED"}),
], ids=["conv8", "conv24", "mlp48"])
def test_int16x8_rounds_the_weights_by_their_output_error_and_the_model_keeps_more(tmp_path, monkeypatch, build, data,
                                                                                 ops):
    src, x = build(tmp_path), data(60, 5)
    result = convert(src, calibration=x, quantize="int16x8", precision="int8", allow_lossy=True)
    done = result.report["quantization"]["report"]["rounded"]
    assert {d["op"] for d in done} >= ops
    assert all(d["error_db"][1] > d["error_db"][0] for d in done)
    assert any("rounded by their layer's output error (GPTQ)" in n for n in result.report["quantization"]["report"]
               ["notes"])
    monkeypatch.setattr(rounding, "MAX_GRAM_BYTES", 0)  # no Gram matrix fits: nearest rounding everywhere
    nearest = convert(src, calibration=x, quantize="int16x8", precision="int8", allow_lossy=True)
    assert nearest.report["quantization"]["report"]["rounded"] == []
    # measured on the held-back samples, which the rounding never saw
    assert _snr(result) > _snr(nearest) + 1.0, (_snr(result), _snr(nearest))
    # the same grid: every per-channel int8 weight tensor keeps nearest rounding's scales
    scales = lambda r: [tuple(np.round(np.asarray(t.quantization.scale, np.float64), 12))  # noqa: E731
                        for t in read_model(r.tflite).subgraphs[0].tensors if t.type == "INT8" and
                        t.quantization is not None and len(t.quantization.scale) > 1]
    assert scales(result) == scales(nearest)


def test_int8_keeps_nearest_rounding(tmp_path):
    """In int8 the activations' rounding dominates (see rounding's docstring): the weights keep nearest rounding."""
    result = convert(_conv_net(tmp_path, 8, seed=8), calibration=_images(40, 5), precision="int8", allow_lossy=True)
    assert result.report["quantization"]["report"]["rounded"] == []


def test_an_op_widened_to_float_gets_its_own_float_weights_back(tmp_path):
    """The search builds each step from the rounded source; an op it widens to float32 reads the float model's own
    weights and bias again (bias.restore_biases), not the rounded ones."""
    from converters import graph as G
    from converters.import_onnx import import_onnx
    from converters.passes.equalize import editable_copy
    from converters.quantize.bias import restore_biases

    model = import_onnx(onnx.load(_conv_net(tmp_path, 8, seed=3)))
    sg = model.subgraphs[0]
    i = next(k for k, op in enumerate(sg.operators) if model.op_name(op) == "CONV_2D")
    w = np.asarray(model.tensor_data(0, sg.operators[i].inputs[1]))
    source = editable_copy(model)  # as rounding.rounded leaves it: the op reads weights of its own
    source.subgraphs[0].operators[i].inputs[1] = G.add_constant(source, "rounded", (w * 0.5).astype(np.float32),
                                                                "FLOAT32")
    back = restore_biases(source, model, {i})
    assert back.subgraphs[0].operators[i].inputs[1] == sg.operators[i].inputs[1]
    np.testing.assert_array_equal(back.tensor_data(0, back.subgraphs[0].operators[i].inputs[1]), w)
    assert restore_biases(source, model, set()).subgraphs[0].operators[i].inputs[1] != sg.operators[i].inputs[1]
