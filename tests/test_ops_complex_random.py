"""Issue 23 point 1 in both runtimes (the conftest ``runtime`` grid): RFFT2D, REAL, IMAG, COMPLEX_ABS (COMPLEX64),
the seeded RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL, CONV_3D_TRANSPOSE, the builtin REDUCE_WINDOW,
ONES_LIKE and BUCKETIZE.

Deterministic ops are checked against LiteRT's reference kernels (TFLM's wheel has none of them): within 1e-5 of
the output's range for RFFT2D (both compute in double) and CONV_3D_TRANSPOSE (another summation order), 1e-7 for
COMPLEX_ABS (hypot), exactly where the kernel picks or folds values in the reference's order (REAL, IMAG,
REDUCE_WINDOW, BUCKETIZE); the C runtime's RFFT2D, complex parts and random draws also equal the Python
interpreter's (random draws bit for bit).
LiteRT has no ONES_LIKE kernel (its builtin resolver leaves it unresolved): numpy's ones are the reference.

Random ops: LiteRT's bits are not the reference (it draws TensorFlow's Philox stream in its own order); ours draw
one documented stream (edge_sdk/runtime/kernels/random.py) that both runtimes must reproduce bit for bit. The
tests hold the stream to Philox4x32-10's published known-answer vectors, the draws to their distributions
(mean, variance, a Kolmogorov-Smirnov bound, class frequencies) with fixed seeds, and LiteRT's draws to the same
bounds (same shapes and types, same distribution).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from edge_sdk.runtime.kernels.random import philox_words
from tests.oprunner import T, assert_same, op_model, peer_outputs, run_invokes, run_on

REFUSED = (ModelError, UnsupportedOpError)  # a bad model / an unsupported one, in both runtimes


def refuses(runtime, model, feeds, op, reason):
    """Both runtimes refuse the model with one error naming the node, the op and ``reason`` (a regex)."""
    with pytest.raises(REFUSED, match=rf"node 0 \(({op})\b.*({reason})") as caught:
        run_on(runtime, model, feeds)
    assert "\n" not in str(caught.value)


def near(runtime, model, feeds, tol):
    """``runtime``'s outputs against LiteRT's: same shapes and types, float (or complex) within ``tol`` of the
    output's range (0: exact)."""
    peer = peer_outputs(model, feeds, "litert")
    got = run_on(runtime, model, feeds)
    if tol == 0:
        assert_same(got, peer, what=f"{runtime} vs litert")
        return got
    assert len(got) == len(peer)
    for g, p in zip(got, peer):
        assert g.shape == p.shape and g.dtype == p.dtype, (g.shape, p.shape, g.dtype, p.dtype)
        scale = max(float(np.abs(p).max()) if p.size else 0.0, 1.0)
        np.testing.assert_allclose(g, p, rtol=0, atol=tol * scale, err_msg=f"{runtime} vs litert")
    return got


def same_as_python(runtime, model, feeds, got, tol=0.0, invocations=1):
    """The C case's outputs after ``invocations`` invokes equal the Python interpreter's (bit for bit unless
    ``tol``): one model, the same numbers on the host and on a device."""
    if runtime == "c":
        theirs = run_invokes("python", model, feeds, invocations, check_reset=False)
        assert_same(got, theirs, atol=tol, what="c vs python")


# --------------------------------------------------------------------------------------------------- RFFT2D

@pytest.mark.parametrize("shape,fft", [
    ((4, 8), (4, 8)),
    ((2, 3, 5), (4, 4)),  # zero-padded height, cropped width
    ((1, 2, 6, 3), (2, 8)),  # cropped height, zero-padded width, two leading dims
])
def test_rfft2d(runtime, shape, fft, rng):
    out = (*shape[:-2], fft[0], fft[1] // 2 + 1)
    model = op_model("RFFT2D", [T(shape, "FLOAT32"), T((2,), "INT32", data=np.array(fft, np.int32))],
                     [T(out, "COMPLEX64")])
    x = rng.standard_normal(shape).astype(np.float32)
    got = near(runtime, model, [x], 1e-5)
    same_as_python(runtime, model, [x], got, tol=1e-5)


def test_rfft2d_refuses_a_length_not_a_power_of_two(runtime):
    model = op_model("RFFT2D", [T((4, 6), "FLOAT32"), T((2,), "INT32", data=np.array([4, 6], np.int32))],
                     [T((4, 4), "COMPLEX64")])
    refuses(runtime, model, [np.zeros((4, 6), np.float32)], "RFFT2D", "power")


# ------------------------------------------------------------------------------------- REAL, IMAG, COMPLEX_ABS

@pytest.mark.parametrize("op", ["REAL", "IMAG", "COMPLEX_ABS"])
@pytest.mark.parametrize("ctype,ftype", [("COMPLEX64", "FLOAT32"), ("COMPLEX128", "FLOAT64")])
def test_complex_parts(runtime, op, ctype, ftype, rng):
    shape = (2, 3, 5)
    model = op_model(op, [T(shape, ctype)], [T(shape, ftype)])
    v = rng.standard_normal(shape) * 3 + 1j * rng.standard_normal(shape)
    v.flat[:3] = [0, 3e30 + 4e30j, -1e-30j]  # zero, huge and tiny parts: hypot, not sqrt(re^2 + im^2)
    x = v.astype(np.complex64 if ctype == "COMPLEX64" else np.complex128)
    got = near(runtime, model, [x], 0 if op != "COMPLEX_ABS" else 1e-7)
    same_as_python(runtime, model, [x], got)


@pytest.mark.parametrize("op", ["REAL", "IMAG", "COMPLEX_ABS"])
def test_complex_parts_refuse_a_real_input(runtime, op):
    model = op_model(op, [T((3,), "FLOAT32")], [T((3,), "FLOAT32")])
    refuses(runtime, model, [np.ones(3, np.float32)], op, "COMPLEX64")


# ----------------------------------------------------------------------------------------------- random ops

def test_philox_known_answers():
    """Philox4x32-10's known-answer vectors (Random123's kat_vectors): counter (c0, c1) is our block index, (c2,
    c3) seed2, the key seed."""
    assert philox_words(0, 0, 0, 1).tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = 0xFFFFFFFFFFFFFFFF
    assert philox_words(ones, ones, ones, 1).tolist() == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert philox_words(0x299F31D0A4093822, 0x0370734413198A2E, 0x85A308D3243F6A88, 1).tolist() == [
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def random_model(op, shape, seed, seed2, shape_type="INT32"):
    dims = np.array(shape, np.int32 if shape_type == "INT32" else np.int64)
    return op_model(op, [T((len(shape),), shape_type, data=dims)], [T(shape, "FLOAT32")],
                    {"seed": seed, "seed2": seed2})


def ks_statistic(values, cdf):
    """Kolmogorov-Smirnov distance between the sample and a distribution's cdf."""
    v = np.sort(values.astype(np.float64).ravel())
    n = v.size
    f = cdf(v)
    return max(float(np.max(np.arange(1, n + 1) / n - f)), float(np.max(f - np.arange(n) / n)))


def normal_cdf(v):
    return 0.5 * (1.0 + np.vectorize(math.erf)(v / math.sqrt(2.0)))


DRAWS = {  # op -> (mean, variance, cdf)
    "RANDOM_UNIFORM": (0.5, 1.0 / 12.0, lambda v: np.clip(v, 0.0, 1.0)),
    "RANDOM_STANDARD_NORMAL": (0.0, 1.0, normal_cdf),
}
SHAPE = (40, 50)  # 2000 values: a 2-digit KS bound (1.95 / sqrt(n): p < 0.001) and 4-sigma moment bounds


def check_distribution(values, op):
    mean, var, cdf = DRAWS[op]
    n = values.size
    assert values.dtype == np.float32 and np.isfinite(values).all()
    assert abs(float(values.mean()) - mean) < 4 * math.sqrt(var / n), (op, float(values.mean()))
    # variance of the sample variance: (mu4 - var^2) / n; mu4 = 9/5 var^2 (uniform), 3 var^2 (normal)
    mu4 = (1.8 if op == "RANDOM_UNIFORM" else 3.0) * var * var
    assert abs(float(values.var()) - var) < 4 * math.sqrt((mu4 - var * var) / n), (op, float(values.var()))
    assert ks_statistic(values, cdf) < 1.95 / math.sqrt(n), op
    if op == "RANDOM_UNIFORM":
        assert values.min() >= 0.0 and values.max() < 1.0


@pytest.mark.parametrize("op", list(DRAWS))
@pytest.mark.parametrize("seed,seed2", [(7, 9), (0, 0), (-5, 1 << 40)])
def test_random_draws_their_distribution_the_same_in_both_runtimes(runtime, op, seed, seed2):
    model = random_model(op, SHAPE, seed, seed2)
    (first,) = run_on(runtime, model, [])
    (second,) = run_invokes(runtime, model, [], invocations=2)  # and reset_all_variables starts the stream again
    check_distribution(first, op)
    check_distribution(second, op)
    assert not np.array_equal(first, second), "the second invoke drew the first invoke's numbers again"
    if op == "RANDOM_UNIFORM":  # the stream's words, as documented: 23 low bits of each as the mantissa
        words = philox_words(seed, seed2, 0, first.size // 4)
        np.testing.assert_array_equal(first.ravel(), ((words & 0x7FFFFF) | 0x3F800000).view(np.float32) - 1)
    same_as_python(runtime, model, [], [first])
    same_as_python(runtime, model, [], [second], invocations=2)


@pytest.mark.parametrize("op", list(DRAWS))
def test_random_litert_draws_the_same_distribution(op):
    (theirs,) = peer_outputs(random_model(op, SHAPE, 7, 9), [], "litert")
    assert theirs.shape == SHAPE
    check_distribution(theirs, op)


def test_random_other_seeds_other_numbers_int64_shape(runtime):
    a = run_on(runtime, random_model("RANDOM_UNIFORM", (3, 5), 1, 2, "INT64"), [])[0]
    b = run_on(runtime, random_model("RANDOM_UNIFORM", (3, 5), 1, 3, "INT64"), [])[0]
    c = run_on(runtime, random_model("RANDOM_UNIFORM", (3, 5), 2, 2, "INT64"), [])[0]
    assert a.shape == (3, 5) and not np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize("op", list(DRAWS))
def test_random_refuses_an_integer_output(runtime, op):
    model = op_model(op, [T((1,), "INT32", data=np.array([4], np.int32))], [T((4,), "INT32")],
                     {"seed": 1, "seed2": 1})
    refuses(runtime, model, [], op, "FLOAT32")


PROBS = np.array([[0.1, 0.2, 0.7, 0.0], [0.25, 0.25, 0.25, 0.25]], np.float64)
SAMPLES = 1500


def multinomial_model(out_type="INT64", samples=SAMPLES, seed=3, seed2=4):
    return op_model("MULTINOMIAL", [T(PROBS.shape, "FLOAT32"), T((), "INT32", data=np.array(samples, np.int32))],
                    [T((PROBS.shape[0], samples), out_type)], {"seed": seed, "seed2": seed2})


def check_frequencies(picks):
    assert picks.shape == (PROBS.shape[0], SAMPLES)
    assert picks.min() >= 0 and picks.max() < PROBS.shape[1]
    for row, p in zip(picks, PROBS):
        counts = np.bincount(row, minlength=p.size)
        assert counts[p == 0].sum() == 0, "a class of probability 0 was drawn"
        sigma = np.sqrt(SAMPLES * p * (1 - p))
        assert (np.abs(counts - SAMPLES * p) <= 4 * sigma + 1e-9).all(), (counts, SAMPLES * p)


@pytest.mark.parametrize("out_type", ["INT64", "INT32"])
def test_multinomial(runtime, out_type):
    model = multinomial_model(out_type)
    with np.errstate(divide="ignore"):
        logits = (np.log(PROBS) + 2.0).astype(np.float32)  # log 0 = -inf: that class is never drawn
    (first,) = run_on(runtime, model, [logits])
    (second,) = run_invokes(runtime, model, [logits], invocations=2)
    assert first.dtype == np.dtype(out_type.lower())
    check_frequencies(first)
    check_frequencies(second)
    assert not np.array_equal(first, second)
    same_as_python(runtime, model, [logits], [first])
    same_as_python(runtime, model, [logits], [second], invocations=2)


def test_multinomial_litert_draws_the_same_frequencies():
    with np.errstate(divide="ignore"):
        logits = np.log(PROBS).astype(np.float32)
    (theirs,) = peer_outputs(multinomial_model(), [logits], "litert")
    check_frequencies(theirs)


def test_multinomial_refuses_1d_logits(runtime):
    model = op_model("MULTINOMIAL", [T((4,), "FLOAT32"), T((), "INT32", data=np.array(3, np.int32))],
                     [T((1, 3), "INT64")], {"seed": 1, "seed2": 1})
    refuses(runtime, model, [np.zeros(4, np.float32)], "MULTINOMIAL", "2-D")


# ---------------------------------------------------------------------------------------- CONV_3D_TRANSPOSE

def _in_size(padding, out, k, stride, dil):
    eff = (k - 1) * dil + 1
    return -(-out // stride) if padding == "SAME" else (out - eff) // stride + 1


@pytest.mark.parametrize("padding,strides,dilations,act,bias", [
    ("SAME", (2, 2, 2), (1, 1, 1), "NONE", False),
    ("VALID", (1, 2, 1), (1, 1, 2), "RELU", True),
    ("SAME", (1, 1, 3), (2, 1, 1), "RELU6", True),
])
def test_conv_3d_transpose(runtime, padding, strides, dilations, act, bias, rng):
    n, out, c, o, k = 2, (5, 6, 7), 3, 4, (2, 3, 2)
    d_in = tuple(_in_size(padding, s, kk, st, dl) for s, kk, st, dl in zip(out, k, strides, dilations))
    wv = rng.standard_normal(k + (o, c)).astype(np.float32)
    inputs = [T((5,), "INT32", data=np.array((n, *out, o), np.int32)), T(wv.shape, "FLOAT32", data=wv),
              T((n, *d_in, c), "FLOAT32")]
    if bias:
        inputs.append(T((o,), "FLOAT32", data=rng.standard_normal(o).astype(np.float32)))
    opts = {"padding": padding, "stride_d": strides[0], "stride_h": strides[1], "stride_w": strides[2],
            "dilation_d_factor": dilations[0], "dilation_h_factor": dilations[1],
            "dilation_w_factor": dilations[2], "fused_activation_function": act}
    model = op_model("CONV_3D_TRANSPOSE", inputs, [T((n, *out, o), "FLOAT32")], opts)
    near(runtime, model, [rng.standard_normal((n, *d_in, c)).astype(np.float32)], 1e-5)


def test_conv_3d_transpose_refuses_an_output_shape_the_input_cannot_give(runtime):
    wv = np.ones((2, 2, 2, 4, 3), np.float32)
    model = op_model("CONV_3D_TRANSPOSE", [T((5,), "INT32", data=np.array([1, 4, 4, 4, 4], np.int32)),
                                           T(wv.shape, "FLOAT32", data=wv), T((1, 3, 2, 2, 3), "FLOAT32")],
                     [T((1, 4, 4, 4, 4), "FLOAT32")], {"padding": "SAME", "stride_d": 2, "stride_h": 2, "stride_w": 2})
    refuses(runtime, model, [np.ones((1, 3, 2, 2, 3), np.float32)], "CONV_3D_TRANSPOSE", "input")


# -------------------------------------------------------------------------------------------- REDUCE_WINDOW

NP = {"FLOAT32": np.float32, "FLOAT64": np.float64, "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16,
      "INT32": np.int32, "INT64": np.int64, "BOOL": np.bool_}


# the schema's deprecated table (BuiltinOptions2 member 20): the writer does not pick it for the op by itself
RW_OPTIONS = "ReduceWindowOptions"


def window_values(shape, type_, rng):
    if type_ == "BOOL":
        return rng.random(shape) < 0.7
    if type_.startswith("FLOAT"):
        return rng.standard_normal(shape).astype(NP[type_]) * 4
    info = np.iinfo(NP[type_])
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(NP[type_])


def reduce_window_model(shape, window, strides, dilations, type_, function):
    spans = [(k - 1) * d + 1 for k, d in zip(window, dilations)]
    out = tuple((n - sp) // st + 1 if n >= sp else 0 for n, sp, st in zip(shape, spans, strides))
    vec = [T((len(shape),), "INT64", data=np.array(v, np.int64)) for v in (window, strides, dilations)]
    return op_model("REDUCE_WINDOW", [T(shape, type_), T((), type_), *vec], [T(out, type_)],
                    {"reduce_function": function}, options_type=RW_OPTIONS)


def window_init(function, type_):
    """The fold's neutral start (any value works: LiteRT and ours start every window from it)."""
    dt = NP[type_]
    if function in ("MUL", "ALL"):
        return np.array(1, dt)
    if function in ("MAXIMUM", "MINIMUM"):
        big = 1e30 if type_.startswith("FLOAT") else (np.iinfo(dt).max if function == "MINIMUM" else np.iinfo(dt).min)
        return np.array(big if function == "MINIMUM" or not type_.startswith("FLOAT") else -big, dt)
    return np.array(0, dt)


RW_CASES = [  # (shape, window, strides, dilations)
    ((1, 6, 7, 2), (1, 3, 2, 1), (1, 2, 1, 1), (1, 1, 2, 1)),
    ((5, 4), (2, 4), (3, 1), (2, 1)),
]


@pytest.mark.parametrize("case", range(len(RW_CASES)))
@pytest.mark.parametrize("type_,function", [
    ("FLOAT32", "ADD"), ("FLOAT32", "MAXIMUM"), ("FLOAT64", "MUL"), ("INT8", "MINIMUM"), ("INT8", "ADD"),
    ("UINT8", "MAXIMUM"), ("INT16", "MUL"), ("INT32", "ADD"), ("INT64", "MINIMUM"), ("BOOL", "ALL"),
    ("BOOL", "ANY"), ("FLOAT32", "ANY"),
])
def test_reduce_window(runtime, case, type_, function, rng):
    shape, window, strides, dilations = RW_CASES[case]
    model = reduce_window_model(shape, window, strides, dilations, type_, function)
    x = window_values(shape, type_, rng)
    near(runtime, model, [x, window_init(function, type_)], 0)


def test_reduce_window_window_larger_than_the_input_gives_an_empty_output(runtime):
    model = reduce_window_model((3, 4), (4, 2), (1, 1), (1, 1), "FLOAT32", "ADD")
    (got,) = run_on(runtime, model, [np.ones((3, 4), np.float32), np.array(0, np.float32)])
    assert got.shape == (0, 3)


def test_reduce_window_refuses_a_wrong_init_type(runtime):
    vec = [T((2,), "INT64", data=np.array([1, 1], np.int64)) for _ in range(3)]
    model = op_model("REDUCE_WINDOW", [T((3, 4), "FLOAT32"), T((), "INT32"), *vec], [T((3, 4), "FLOAT32")],
                     {"reduce_function": "ADD"}, options_type=RW_OPTIONS)
    refuses(runtime, model, [np.ones((3, 4), np.float32), np.array(0, np.int32)], "REDUCE_WINDOW", "init_value")


# -------------------------------------------------------------------------------------- ONES_LIKE, BUCKETIZE

@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64"])
def test_ones_like(runtime, type_, rng):
    model = op_model("ONES_LIKE", [T((2, 3, 4), type_)], [T((2, 3, 4), type_)])
    (got,) = run_on(runtime, model, [window_values((2, 3, 4), type_, rng)])
    assert_same([got], [np.ones((2, 3, 4), NP[type_])], what=f"{runtime} vs numpy")


def test_ones_like_refuses_a_quantized_input(runtime):
    model = op_model("ONES_LIKE", [T((2, 3), "INT8", 0.1, 0)], [T((2, 3), "INT8", 0.1, 0)])
    # the C runtime's error names a custom op "CUSTOM" (with the code's index), not by its custom_code
    refuses(runtime, model, [np.zeros((2, 3), np.int8)], "ONES_LIKE|CUSTOM", "INT8|FLOAT32, INT32, INT64")


BOUNDARIES = [-3.5, -1.0, 0.0, 0.0, 2.0, 1e10]  # a repeated boundary; one past float32 integers


@pytest.mark.parametrize("type_", ["FLOAT32", "FLOAT64", "INT32", "INT64"])
def test_bucketize(runtime, type_, rng):
    model = op_model("BUCKETIZE", [T((3, 8), type_)], [T((3, 8), "INT32")], {"boundaries": BOUNDARIES})
    if type_.startswith("FLOAT"):
        x = (rng.standard_normal((3, 8)) * 3).astype(NP[type_])
        x.flat[:5] = [-1.0, 0.0, 2.0, np.nan, 1e11]  # on a boundary (counted), NaN, past the last
    else:
        x = rng.integers(-5, 4, (3, 8)).astype(NP[type_])
        x.flat[:2] = [9999999999 if type_ == "INT64" else 2**31 - 1, -(2**31)]
    near(runtime, model, [x], 0)


def test_bucketize_refuses_unsorted_boundaries(runtime):
    model = op_model("BUCKETIZE", [T((3,), "FLOAT32")], [T((3,), "INT32")], {"boundaries": [1.0, 0.0]})
    refuses(runtime, model, [np.zeros(3, np.float32)], "BUCKETIZE", "sorted")
