"""QUANTIZE, DEQUANTIZE and CAST against TFLM (LiteRT for float16 DEQUANTIZE); seanet goldens: tests/test_models.py.

Both runtimes (the ``runtime`` grid: our Python kernels and firmware_c's), the peer run once per case
(tests.oprunner.check_on)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, check_on, op_model, peer_outputs, run_on

INT8_ALL = np.arange(-128, 128, dtype=np.int8)


def _one(runtime, op, x, in_spec, out_spec, peer="tflm", **tol):
    model = op_model(op, [T(x.shape, *in_spec)], [T(x.shape, *out_spec)])
    return check_on(runtime, model, [x], peer=peer, **tol)


@pytest.mark.parametrize("out", [("INT8", 0.05, -3), ("INT16", 0.001, 0), ("INT8", 0.5, 127)])
def test_quantize_float(runtime, out, rng):
    x = rng.normal(0, 4, (4, 33)).astype(np.float32)
    x[0, :6] = [0.0, 1e9, -1e9, 0.025, -0.025, 0.075]  # saturation and exact halves
    _one(runtime, "QUANTIZE", x, ("FLOAT32",), out)


@pytest.mark.parametrize("src,dst", [("INT8", "INT8"), ("INT8", "INT16"), ("INT8", "INT32"), ("INT16", "INT8"),
                                     ("INT16", "INT16"), ("INT16", "INT32"), ("INT32", "INT8"), ("INT32", "INT16")])
def test_requantize(runtime, src, dst, rng):
    if src == "INT8":
        x = INT8_ALL
    elif src == "INT16":
        x = np.concatenate([rng.integers(-32768, 32768, 300), [-32768, 32767, 0]]).astype(np.int16)
    else:
        x = np.concatenate([rng.integers(-200000, 200000, 300), [-(2**31), 2**31 - 1, 0]]).astype(np.int32)
    for si, zi, so, zo in [(0.05, 3, 0.02, -10), (0.01, 0, 0.3, 5), (0.001, -7, 0.001, 4)]:
        if src == "INT16":
            zi = 0
        if dst in ("INT16", "INT32"):
            zo = 0
        _one(runtime, "QUANTIZE", x, (src, si, zi), (dst, so, zo))


def test_requantize_int8_uint8(runtime):
    _one(runtime, "QUANTIZE", INT8_ALL, ("INT8", 0.1, 0), ("UINT8", 0.1, 128))
    _one(runtime, "QUANTIZE", INT8_ALL, ("INT8", 0.1, 3), ("UINT8", 0.07, 120))
    u = np.arange(256, dtype=np.uint8)
    _one(runtime, "QUANTIZE", u, ("UINT8", 0.1, 128), ("INT8", 0.1, 0))


@pytest.mark.parametrize("src", [("INT8", 0.05, -3), ("INT16", 0.001, 0), ("UINT8", 0.02, 128)])
def test_dequantize(runtime, src, rng):
    t = src[0]
    lo, hi = {"INT8": (-128, 128), "INT16": (-32768, 32768), "UINT8": (0, 256)}[t]
    x = rng.integers(lo, hi, (3, 40)).astype({"INT8": np.int8, "INT16": np.int16, "UINT8": np.uint8}[t])
    _one(runtime, "DEQUANTIZE", x, src, ("FLOAT32",), rtol=0, atol=0)


def test_dequantize_float16_constant_vs_litert(runtime, rng):
    w = rng.normal(0, 1, (4, 5)).astype(np.float16)
    # a float16 constant through DEQUANTIZE, as converted float16 models hold their weights
    model = op_model("DEQUANTIZE", [T((4, 5), "FLOAT16", data=w)], [T((4, 5), "FLOAT32")])
    ours = run_on(runtime, model, [])
    theirs = peer_outputs(model, [], "litert", isolate=True)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[0], w.astype(np.float32))


def test_dequantize_per_channel_vs_litert(runtime, rng):
    x = rng.integers(-128, 128, (3, 4)).astype(np.int8)
    model = op_model("DEQUANTIZE", [T((3, 4), "INT8", [0.1, 0.02, 0.5], [0, 3, -2], quantized_dimension=0, data=x)],
                     [T((3, 4), "FLOAT32")])
    np.testing.assert_allclose(run_on(runtime, model, [])[0], peer_outputs(model, [], "litert", isolate=True)[0],
                               rtol=1e-6)


CAST_TYPES = ["INT8", "INT16", "INT32", "UINT32", "FLOAT32"]
_NP = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "UINT32": np.uint32, "FLOAT32": np.float32,
       "BOOL": np.bool_}


def _cast_input(src, rng):
    if src == "FLOAT32":
        # NaN: tests/test_cast23_nonfinite.py (LiteRT gives the maximum, TFLM 0)
        return np.array([0.0, -0.0, 1.7, -1.7, 2.5, -2.5, 127.9, -128.9, 300.4, -300.4, 40000.6, -40000.6, 1e6, 5e9, -5e9, np.inf, -np.inf],
                        np.float32)
    if src == "BOOL":
        return np.array([True, False, True, True])
    info = np.iinfo(_NP[src])
    v = rng.integers(int(info.min), int(info.max) + 1, 20, dtype=np.int64)
    v[:4] = [info.min, info.max, 0, 1]
    return v.astype(_NP[src])


@pytest.mark.parametrize("src", CAST_TYPES + ["BOOL"])
def test_cast(runtime, src, rng):
    x = _cast_input(src, rng)
    for dst in CAST_TYPES:
        if dst == src:
            continue
        model = op_model("CAST", [T(x.shape, src)], [T(x.shape, dst)])
        check_on(runtime, model, [x])




def test_rounding_is_std_round_at_the_float32_tie_edge(runtime):
    """0.49999997f + 0.5f rounds to 1.0f in float32; std::round(0.49999997f) is 0 (and TFLM's QUANTIZE agrees)."""
    from edge_sdk.runtime.kernels.quant import tflite_round

    x = np.array([np.nextafter(np.float32(0.5), np.float32(0)), 0.5, -0.5, 2.5, -2.5, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(tflite_round(x), np.array([0, 1, -1, 3, -3, np.inf, -np.inf], np.float32))
    m = op_model("QUANTIZE", [T((1,), "FLOAT32")], [T((1,), "INT16", scale=1.0, zero_point=0)])
    check_on(runtime, m, [x[:1]])
