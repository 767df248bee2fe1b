"""Activation kernels against TFLM (bit-exact integers, every int8 input), LiteRT where TFLM has no kernel.

Both runtimes (the ``runtime`` grid: our Python kernels and firmware_c's), the peer run once per case
(tests.oprunner.check_on); inputs from the test's ``rng`` (the same on both runtimes)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, check_on, op_model

INT8_ALL = np.arange(-128, 128, dtype=np.int8)
INT16_SAMPLE = np.concatenate([np.arange(-32768, 32768, 97), [-32768, -1, 0, 1, 32767]]).astype(np.int16)

INT8_QUANT = [(0.05, 3, 0.02, -10), (0.5, -128, 0.1, 127), (0.01, 10, 0.05, 0)]


def _unary(runtime, op, x, in_spec, out_spec, options=None, peer="tflm", **tol):
    model = op_model(op, [T(x.shape, *in_spec)], [T(x.shape, *out_spec)], options)
    return check_on(runtime, model, [x], peer=peer, **tol)


@pytest.mark.parametrize("op", ["RELU", "RELU6", "LEAKY_RELU", "HARD_SWISH"])
def test_int8_every_input(runtime, op):
    opts = {"alpha": 0.2} if op == "LEAKY_RELU" else None
    for si, zi, so, zo in INT8_QUANT:
        _unary(runtime, op, INT8_ALL, ("INT8", si, zi), ("INT8", so, zo), opts)


def test_leaky_relu_negative_and_large_alpha(runtime):
    for alpha in (-0.3, 1.7):
        for si, zi, so, zo in INT8_QUANT:
            _unary(runtime, "LEAKY_RELU", INT8_ALL, ("INT8", si, zi), ("INT8", so, zo), {"alpha": alpha})
        _unary(runtime, "LEAKY_RELU", INT16_SAMPLE, ("INT16", 0.001, 0), ("INT16", 0.0007, 0), {"alpha": alpha})


@pytest.mark.parametrize("op", ["RELU", "RELU6", "LEAKY_RELU"])
def test_int16(runtime, op):
    opts = {"alpha": 0.1} if op == "LEAKY_RELU" else None
    for si, so in [(0.001, 0.0007), (0.0002, 0.0002), (1 / 4096, 1 / 1024)]:
        _unary(runtime, op, INT16_SAMPLE, ("INT16", si, 0), ("INT16", so, 0), opts)


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_sigmoids_int8_every_input(runtime, op):
    zo = -128 if op == "LOGISTIC" else 0
    so = 1 / 256 if op == "LOGISTIC" else 1 / 128
    for si, zi in [(0.05, 3), (0.1, -128), (0.01, 10), (0.3, 0)]:
        _unary(runtime, op, INT8_ALL, ("INT8", si, zi), ("INT8", so, zo))


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_sigmoids_int16(runtime, op):
    x = np.arange(-32768, 32768, dtype=np.int16)
    for si in (1 / 4096, 1 / 8192, 0.0003, 1 / 2048):
        _unary(runtime, op, x, ("INT16", si, 0), ("INT16", 1 / 32768, 0))


@pytest.mark.parametrize("op", ["RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU"])
def test_float(runtime, op, rng):
    x = (rng.normal(0, 6, (3, 50))).astype(np.float32)
    x[0, :4] = [0.0, -20.0, 20.0, 3.0]
    opts = {"alpha": 0.25} if op == "LEAKY_RELU" else None
    peer = "litert" if op == "RELU_N1_TO_1" else "tflm"
    _unary(runtime, op, x, ("FLOAT32",), ("FLOAT32",), opts, peer=peer, rtol=1e-5, atol=1e-6)


def test_relu_n1_to_1_int8_vs_litert(runtime):
    for si, zi, so, zo in INT8_QUANT:
        _unary(runtime, "RELU_N1_TO_1", INT8_ALL, ("INT8", si, zi), ("INT8", so, zo), peer="litert")


@pytest.mark.parametrize("beta", [1.0, 0.5, 3.0])
def test_softmax_int8(runtime, beta, rng):
    x = rng.integers(-128, 128, (4, 3, 10)).astype(np.int8)
    x[0, 0, :] = 127
    x[0, 1, :3] = [-128, 127, 0]
    for si, zi in [(0.1, 0), (0.05, -20), (0.5, 10)]:
        _unary(runtime, "SOFTMAX", x, ("INT8", si, zi), ("INT8", 1 / 256, -128), {"beta": beta})
        _unary(runtime, "SOFTMAX", x, ("INT8", si, zi), ("INT16", 1 / 65536, -32768), {"beta": beta})


def test_softmax_int16(runtime, rng):
    x = rng.integers(-32768, 32768, (5, 16)).astype(np.int16)
    x[0, :3] = [-32768, 32767, 0]
    for si in (0.001, 1 / 4096, 0.0002):
        _unary(runtime, "SOFTMAX", x, ("INT16", si, 0), ("INT16", 1 / 32768, 0), {"beta": 1.0})


def test_softmax_and_log_softmax_float(runtime, rng):
    x = rng.normal(0, 4, (3, 2, 12)).astype(np.float32)
    _unary(runtime, "SOFTMAX", x, ("FLOAT32",), ("FLOAT32",), {"beta": 0.7}, rtol=1e-5, atol=1e-7)
    _unary(runtime, "LOG_SOFTMAX", x, ("FLOAT32",), ("FLOAT32",), None, rtol=1e-5, atol=1e-5)


def test_log_softmax_int8(runtime, rng):
    x = rng.integers(-128, 128, (6, 20)).astype(np.int8)
    x[0, :] = 0
    x[1, :2] = [127, -128]
    for si, zi in [(0.1, 0), (0.05, -20), (0.9, 5)]:
        _unary(runtime, "LOG_SOFTMAX", x, ("INT8", si, zi), ("INT8", 16 / 256, 127))


@pytest.mark.parametrize("shapes", [((2, 3, 4), (4,)), ((2, 3, 4), (2, 3, 4)), ((1, 4, 4, 3), (1, 1, 3))])
def test_prelu(runtime, shapes, rng):
    xs, als = shapes
    x8 = np.resize(INT8_ALL, xs).astype(np.int8)
    a8 = rng.integers(-128, 128, als).astype(np.int8)
    model = op_model("PRELU", [T(xs, "INT8", 0.05, 3), T(als, "INT8", 0.01, -7, data=a8)], [T(xs, "INT8", 0.04, -2)])
    check_on(runtime, model, [x8])
    x16 = rng.integers(-32768, 32768, xs).astype(np.int16)
    model = op_model("PRELU", [T(xs, "INT16", 0.001, 0), T(als, "INT8", 0.01, -7, data=a8)], [T(xs, "INT16", 0.002, 0)])
    check_on(runtime, model, [x16])
    xf = rng.normal(0, 2, xs).astype(np.float32)
    af = rng.normal(0, 1, als).astype(np.float32)
    model = op_model("PRELU", [T(xs, "FLOAT32"), T(als, "FLOAT32", data=af)], [T(xs, "FLOAT32")])
    check_on(runtime, model, [xf], rtol=1e-6, atol=0)


