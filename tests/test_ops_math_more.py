"""LiteRT builtins added by issue 23 point 1, in both runtimes (the conftest ``runtime`` grid), against LiteRT's
reference kernels (its builtin kernels without the XNNPACK delegate where the reference resolver lacks the op:
CEIL, ROUND, ELU) for every tensor type LiteRT takes, and against TFLM where TFLM has the op.

Exactness, op by op: SQUARE, FLOOR, CEIL, ROUND, SIGN are bit-exact everywhere (one rounding or none). SIN and COS
call the C library's sinf / cosf in LiteRT, TFLM and our C runtime, and round the double result in the Python
kernel: held to one ulp of float32 (bit-exact where the peers' libm is the host's)."""

import numpy as np
import pytest

from tests.oprunner import T, assert_same, op_model, run_on, run_peer

RNG = np.random.default_rng(23)

# special values every float case carries besides random ones: signed zeros, halves (ROUND's ties), infinities,
# NaN, integers beyond 2^23 and 2^31
FLOAT_SPECIALS = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, -3.49999976, 0.49999997, np.inf, -np.inf, np.nan,
                  8388609.0, -8388609.5, 3.0e9, -1.0e30, 1.0e-40]

# op -> peers that have its builtin kernel ("litert": LiteRT's reference resolver; "litert_builtin": its builtin
# resolver without default delegates: XNNPACK flushes subnormals)
FLOAT_UNARY_PEERS = {
    "SQUARE": ("litert", "tflm"),
    "FLOOR": ("litert", "tflm"),
    "CEIL": ("litert_builtin", "tflm"),
    "ROUND": ("litert_builtin", "tflm"),
    "SIN": ("litert", "tflm"),
    "COS": ("litert", "tflm"),
    "SIGN": ("litert",),
}


def float_values(shape, dtype=np.float32, scale=4.0) -> np.ndarray:
    """Random normals times ``scale`` with FLOAT_SPECIALS in front (as many as fit)."""
    n = int(np.prod(shape))
    x = (RNG.standard_normal(n) * scale).astype(dtype)
    with np.errstate(over="ignore"):  # float16: 3e9 and 1e30 become infinities
        specials = np.array(FLOAT_SPECIALS, dtype)[:n]
    x[: specials.size] = specials
    return x.reshape(shape)


def assert_within_ulp(ours: np.ndarray, theirs: np.ndarray, ulps: int, what: str) -> None:
    """Same shape and dtype; NaN where the peer has NaN; elsewhere at most ``ulps`` float steps apart."""
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, what
    nan = np.isnan(theirs)
    assert np.array_equal(np.isnan(ours), nan), f"{what}: NaN at other places"
    bits = {np.dtype(np.float32): np.int32, np.dtype(np.float16): np.int16}[ours.dtype]
    a = ours[~nan].view(bits).astype(np.int64)
    b = theirs[~nan].view(bits).astype(np.int64)
    a = np.where(a < 0, np.iinfo(bits).min - a, a)  # sign-magnitude to a monotone integer line
    b = np.where(b < 0, np.iinfo(bits).min - b, b)
    worst = int(np.max(np.abs(a - b))) if a.size else 0
    assert worst <= ulps, f"{what}: {worst} ulps apart (at most {ulps})"


def run_litert_builtin(model: bytes, inputs) -> list[np.ndarray]:
    """LiteRT's builtin (optimized) kernels, no delegate: the peer of ops its reference resolver lacks."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_content=bytes(model), num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], np.asarray(x, order="C"))
    interp.invoke()
    return [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]


def compare(runtime, model, inputs, peers, ulps=0):
    ours = run_on(runtime, model, inputs)
    for peer in peers:
        theirs = run_litert_builtin(model, inputs) if peer == "litert_builtin" else run_peer(model, inputs, peer)
        if ulps:
            assert len(ours) == len(theirs)
            for a, b in zip(ours, theirs):
                assert_within_ulp(a, b, ulps, f"{runtime} vs {peer}")
        else:
            assert_same(ours, theirs, what=f"{runtime} vs {peer}")
    return ours


# ------------------------------------------------------------------------------------- SQUARE ... SIGN

@pytest.mark.parametrize("op", sorted(FLOAT_UNARY_PEERS))
def test_float_unary_float32(runtime, op):
    x = float_values((3, 4, 5))
    model = op_model(op, [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")])
    ours = compare(runtime, model, [x], FLOAT_UNARY_PEERS[op], ulps=1 if op in ("SIN", "COS") else 0)
    with np.errstate(invalid="ignore", over="ignore"):
        want = {"SQUARE": np.square(x), "FLOOR": np.floor(x), "CEIL": np.ceil(x), "ROUND": np.rint(x),
                "SIN": np.sin(x.astype(np.float64)).astype(np.float32),
                "COS": np.cos(x.astype(np.float64)).astype(np.float32),
                "SIGN": np.where(np.isnan(x), x, np.sign(x) + np.float32(0.0))}[op]
    if op == "ROUND":  # TFLite's ties-to-even gives +0.0 for -0.5 (floor -1 plus 1), numpy's rint -0.0
        want = want + np.float32(0.0)
        ours = [ours[0] + np.float32(0.0)]
    if op in ("SIN", "COS"):
        assert_within_ulp(ours[0], want, 1, "vs float64 math")
    else:
        np.testing.assert_array_equal(ours[0], want)


@pytest.mark.parametrize("op", ["FLOOR", "ROUND", "SIN", "COS"])
def test_float_unary_float16(runtime, op):
    """LiteRT's FLOOR, ROUND, SIN, COS take FLOAT16 (its CEIL does not)."""
    x = float_values((2, 9), np.float16, scale=3.0)
    x[np.abs(x) > 60000] = 1.25  # finite halves
    model = op_model(op, [T(x.shape, "FLOAT16")], [T(x.shape, "FLOAT16")])  # the reference resolver: version 1
    peer = "litert_builtin" if op == "ROUND" else "litert"
    compare(runtime, model, [x], [peer], ulps=1 if op in ("SIN", "COS") else 0)


def test_sign_types(runtime):
    """SIGN on LiteRT's other types, FLOAT64 and INT32 (version 2)."""
    i = RNG.integers(-5, 6, (4, 6)).astype(np.int32)
    i[0, :3] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, 0]
    compare(runtime, op_model("SIGN", [T(i.shape, "INT32")], [T(i.shape, "INT32")], version=2), [i], ["litert"])
    d = float_values((4, 6), np.float64)
    out = compare(runtime, op_model("SIGN", [T(d.shape, "FLOAT64")], [T(d.shape, "FLOAT64")], version=2), [d],
                  ["litert"])
    np.testing.assert_array_equal(out[0], np.where(np.isnan(d), d, np.sign(d) + 0.0))


def test_float_unary_refuses_quantized_and_other_types():
    from edge_sdk.errors import UnsupportedOpError
    from tests.oprunner import run_ours

    x = np.zeros((2, 3), np.int8)
    q = {"scale": 0.1, "zero_point": 0}
    with pytest.raises(UnsupportedOpError, match="SQUARE"):
        run_ours(op_model("SQUARE", [T(x.shape, "INT8", **q)], [T(x.shape, "INT8", **q)]), [x])
    with pytest.raises(UnsupportedOpError, match="FLOAT32"):
        run_ours(op_model("FLOOR", [T(x.shape, "INT32")], [T(x.shape, "INT32")]), [x.astype(np.int32)])


# every op this file adds, with LiteRT's highest version and one tensor type its kernel takes
NEW_OPS = {"SQUARE": (1, "FLOAT32"), "FLOOR": (1, "FLOAT16"), "CEIL": (1, "FLOAT32"), "ROUND": (1, "FLOAT16"),
           "SIN": (2, "FLOAT16"), "COS": (2, "FLOAT32"), "SIGN": (2, "INT32"), "ELU": (1, "INT8"),
           "RELU_0_TO_1": (1, "UINT8"), "ZEROS_LIKE": (1, "INT64"), "FLOOR_DIV": (3, "INT16"),
           "FLOOR_MOD": (2, "INT64"), "ADD_N": (1, "INT8"), "FILL": (5, "BOOL"), "RANGE": (2, "INT64"),
           "RANK": (1, "UINT8"), "ATAN2": (1, "FLOAT64"), "BITWISE_XOR": (1, "UINT16"), "RIGHT_SHIFT": (1, "INT8"),
           "BITCAST": (1, "UINT64"), "FAKE_QUANT": (2, "FLOAT32"), "DILATE": (1, "BOOL")}


def test_op_table_rows_of_the_new_ops():
    """The rows run in both runtimes, with LiteRT's versions and the types the kernels take; the newer version is
    refused by both."""
    from edge_sdk.runtime import op_table

    for op, (version, dtype) in NEW_OPS.items():
        r = op_table.ROWS[op]
        assert r.runs and r.in_c and r.max_version == r.c_max_version == version, op
        for runtime in ("python", "c"):
            assert op_table.runtime_refusal(runtime, op, version, dtype) is None, (op, runtime)
            assert op_table.runtime_refusal(runtime, op, version + 1, dtype) is not None, (op, runtime)
    for op in FLOAT_UNARY_PEERS:
        r = op_table.ROWS[op]
        assert r.runs and r.in_c and r.family == "unary", op
        assert op_table.runtime_refusal("c", op, 1, "FLOAT32") is None, op
        assert op_table.runtime_refusal("python", op, 1, "FLOAT32") is None, op
        assert op_table.runtime_refusal("python", op, 1, "INT8") is not None, op
    for runtime in ("python", "c"):
        assert op_table.runtime_refusal(runtime, "SIN", 2, "FLOAT16") is None
        assert op_table.runtime_refusal(runtime, "CEIL", 1, "FLOAT16") is not None
    assert op_table.runtime_refusal("c", "SIGN", 2, "INT32") is None


# ------------------------------------------------------------------------------------- ELU, RELU_0_TO_1

def test_elu_float32(runtime):
    """ELU float32: TFLM and LiteRT's builtin kernel; within an ulp (expm1 of the C library / in double)."""
    x = float_values((4, 25), scale=3.0)
    x[0, :4] = [-1e-8, -20.0, -88.0, 1e-40]
    model = op_model("ELU", [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")])
    ours = compare(runtime, model, [x], ["tflm", "litert_builtin"], ulps=1)
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.where(x < 0, np.expm1(x.astype(np.float64)), x).astype(np.float32)
    assert_within_ulp(ours[0], want, 1, "vs float64 math")


@pytest.mark.parametrize("in_q,out_q", [((0.05, 3), (0.04, -20)), ((0.1, -128), (0.02, 60)), ((0.2, 100), (1e-4, 0))])
def test_elu_int8(runtime, in_q, out_q):
    """ELU int8: every input value, bit-exact with TFLM (LiteRT's builtin within one quantum)."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)
    model = op_model("ELU", [T(x.shape, "INT8", scale=in_q[0], zero_point=in_q[1])],
                     [T(x.shape, "INT8", scale=out_q[0], zero_point=out_q[1])])
    ours = compare(runtime, model, [x], ["tflm"])
    theirs = run_litert_builtin(model, [x])[0]
    assert np.max(np.abs(ours[0].astype(np.int32) - theirs.astype(np.int32))) <= 1


def test_relu_0_to_1_float32(runtime):
    x = float_values((3, 20), scale=1.0)
    x = x[:, :]
    x[np.isnan(x)] = 0.75  # NaN: LiteRT's std::min/max order decides, not a case any model has
    model = op_model("RELU_0_TO_1", [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")])
    ours = compare(runtime, model, [x], ["litert"])
    np.testing.assert_array_equal(ours[0], np.clip(x, 0, 1))


@pytest.mark.parametrize("type_", ["INT8", "UINT8"])
@pytest.mark.parametrize("in_q,out_q", [((0.02, 0), (0.02, 0)), ((0.01, -5), (1 / 255, -128)), ((0.03, 10), (0.005, 3))])
def test_relu_0_to_1_quantized(runtime, type_, in_q, out_q):
    """RELU_0_TO_1 int8 / uint8 (LiteRT's types; TFLM has no RELU_0_TO_1): every input value, as LiteRT's
    reference kernel (its single-rounding requantization may differ by one quantum: see NOTES)."""
    lo = -128 if type_ == "INT8" else 0
    dtype = np.int8 if type_ == "INT8" else np.uint8
    shift = 0 if type_ == "INT8" else 128  # uint8 zero points sit 128 higher
    x = np.arange(lo, lo + 256).astype(dtype).reshape(4, 64)
    model = op_model("RELU_0_TO_1", [T(x.shape, type_, scale=in_q[0], zero_point=in_q[1] + shift)],
                     [T(x.shape, type_, scale=out_q[0], zero_point=out_q[1] + shift)])
    ours = run_on(runtime, model, [x])[0]
    theirs = run_peer(model, [x], "litert")[0]
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert np.max(np.abs(ours.astype(np.int32) - theirs.astype(np.int32))) <= 1
    # the clamp itself is exact: 0 and 1.0 land where the output quantization puts them
    deq = (ours.astype(np.float64) - (out_q[1] + shift)) * out_q[0]
    assert deq.min() >= -out_q[0] / 2 and deq.max() <= 1.0 + out_q[0] / 2


# ------------------------------------------------------------------------------------- ZEROS_LIKE, FILL, RANGE, RANK

NUMPY_OF = {"FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64, "INT8": np.int8, "UINT8": np.uint8,
            "INT16": np.int16, "UINT16": np.uint16, "INT32": np.int32, "UINT32": np.uint32, "INT64": np.int64,
            "BOOL": np.bool_}


@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64", "INT8"])
def test_zeros_like(runtime, type_):
    """LiteRT's types FLOAT32, INT32, INT64 (TFLM's INT8 too, quantized: stored zeros)."""
    x = (RNG.standard_normal((2, 3, 4)) * 50).astype(NUMPY_OF[type_])
    q = {"scale": 0.5, "zero_point": 7} if type_ == "INT8" else {}
    model = op_model("ZEROS_LIKE", [T(x.shape, type_, **q)], [T(x.shape, type_, **q)])
    ours = compare(runtime, model, [x], ["tflm"] + ([] if type_ == "INT8" else ["litert"]))
    assert not ours[0].any() and ours[0].shape == x.shape


@pytest.mark.parametrize("type_", sorted(NUMPY_OF))
def test_fill(runtime, type_):
    """Every value type LiteRT's FILL takes (TFLM's FLOAT32, INT32, INT8 too); dims INT32 and INT64."""
    value = np.array(RNG.standard_normal() * 40).astype(NUMPY_OF[type_])
    q = {"scale": 0.25, "zero_point": -3 if type_ == "INT8" else 0} if type_ in ("INT8", "INT16") else {}
    dims_type = "INT64" if type_ in ("INT64", "FLOAT64", "UINT16") else "INT32"
    dims = np.array([2, 3, 1, 4], NUMPY_OF[dims_type])
    model = op_model("FILL", [T((4,), dims_type, data=dims), T((), type_, **q)], [T((2, 3, 1, 4), type_, **q)],
                     version=4)
    peers = ["litert"] + (["tflm"] if type_ in ("FLOAT32", "INT32", "INT8") and dims_type == "INT32" else [])
    ours = compare(runtime, model, [value], peers)
    np.testing.assert_array_equal(ours[0], np.full((2, 3, 1, 4), value))


@pytest.mark.parametrize("start,limit,delta,type_", [
    (0, 10, 3, "INT32"), (7, -5, -2, "INT32"), (-3, 4, 1, "INT64"), (2 ** 40, 2 ** 40 + 9, 4, "INT64"),
    (0.1, 1.7, 0.1, "FLOAT32"), (3.0, -2.5, -0.7, "FLOAT32"), (0.0, 1.0, 1e-3, "FLOAT32")])
def test_range(runtime, start, limit, delta, type_):
    """LiteRT's RANGE (TFLM has none): its count, its accumulated values (float32 drifts from start + i * delta)."""
    dtype = NUMPY_OF[type_]
    ins = [T((), type_, data=np.array(v, dtype)) for v in (start, limit, delta)]
    n = len(np.arange(dtype(start), dtype(limit), dtype(delta)))
    model = op_model("RANGE", ins, [T((n,), type_)])  # LiteRT's reference resolver: version 1 (INT64 too)
    ours = compare(runtime, model, [], ["litert"])
    assert ours[0].shape[0] >= 1


@pytest.mark.parametrize("shape,type_", [((2, 3, 4), "FLOAT32"), ((5,), "INT8"), ((), "BOOL"), ((1, 1, 1, 1, 2), "INT64")])
def test_rank(runtime, shape, type_):
    x = np.zeros(shape, NUMPY_OF[type_])
    model = op_model("RANK", [T(shape, type_)], [T((), "INT32")])
    ours = compare(runtime, model, [x], ["litert"])
    assert int(ours[0]) == len(shape)


def test_fill_and_range_need_constants():
    from edge_sdk.errors import UnsupportedOpError
    from tests.oprunner import run_ours

    model = op_model("FILL", [T((2,), "INT32"), T((), "FLOAT32")], [T((2, 3), "FLOAT32")])
    with pytest.raises(UnsupportedOpError, match="dims"):
        run_ours(model, [np.array([2, 3], np.int32), np.array(1.0, np.float32)])
    model = op_model("RANGE", [T((), "INT32"), T((), "INT32", data=np.array(5, np.int32)),
                               T((), "INT32", data=np.array(1, np.int32))], [T((5,), "INT32")])
    with pytest.raises(UnsupportedOpError, match="start"):
        run_ours(model, [np.array(0, np.int32)])


# ------------------------------------------------------------------------------------- FLOOR_DIV ... RIGHT_SHIFT, ADD_N

BINARY_TYPES = {
    "FLOOR_DIV": ["FLOAT32", "INT8", "INT16", "INT32"],
    "FLOOR_MOD": ["FLOAT32", "INT8", "INT16", "INT32", "INT64"],
    "ATAN2": ["FLOAT32", "FLOAT16", "FLOAT64"],
    "BITWISE_XOR": ["INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"],
    "RIGHT_SHIFT": ["INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"],
}
BINARY_CASES = [(op, t) for op, types in BINARY_TYPES.items() for t in types]


def binary_operands(op, type_):
    """(a of shape (2, 3, 4), b of shape (3, 1)): broadcast, with the type's extremes, signs both ways; no zero
    divisor (LiteRT stops there)."""
    dtype = NUMPY_OF[type_]
    if dtype(0).dtype.kind == "f":
        a = float_values((2, 3, 4), dtype, scale=20.0)
        b = float_values((3, 1), dtype, scale=5.0)
        if op in ("FLOOR_DIV", "FLOOR_MOD"):
            a[np.isnan(a) | np.isinf(a)] = 7.5
            b[(b == 0) | np.isnan(b) | np.isinf(b)] = -2.25
        return a, b
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, int(info.max) + 1, (2, 3, 4), dtype=np.int64)
    a[0, 0, :4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
    if op == "RIGHT_SHIFT":
        b = np.array([[0], [3], [200 if info.bits == 8 else 40]])
        if info.min < 0:
            b[0, 0] = -2  # negative amounts shift by 0
    elif op == "BITWISE_XOR":
        b = RNG.integers(info.min, int(info.max) + 1, (3, 1), dtype=np.int64)
    else:
        b = np.array([[7], [-3 if info.min < 0 else 3], [-1 if info.min < 0 else 1]])
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("op,type_", BINARY_CASES)
def test_binary_math(runtime, op, type_):
    """LiteRT's reference kernels on every type they take (TFLM's FLOAT32 FLOOR_DIV / FLOOR_MOD too):
    bit-exact, ATAN2's float32 / float16 within an ulp (atan2f of the C library vs double rounded once)."""
    a, b = binary_operands(op, type_)
    if op == "ATAN2":  # LiteRT's atan2.cc takes equal shapes only (ours broadcast: test_atan2_broadcasts)
        b = np.ascontiguousarray(np.broadcast_to(b, a.shape))
    model = op_model(op, [T(a.shape, type_), T(b.shape, type_)], [T((2, 3, 4), type_)])
    peers = ["litert"] + (["tflm"] if op in ("FLOOR_DIV", "FLOOR_MOD") and type_ == "FLOAT32" else [])
    ulps = 1 if op == "ATAN2" and type_ != "FLOAT64" else 0
    ours = compare(runtime, model, [a, b], peers, ulps=ulps)
    if a.dtype.kind in "iu" and op in ("FLOOR_DIV", "FLOOR_MOD"):  # the numpy meaning, exactly
        x, y = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
        want = (x // y) if op == "FLOOR_DIV" else (x % y)
        np.testing.assert_array_equal(ours[0], want.astype(a.dtype))


def test_integer_division_by_zero_gives_zero(runtime):
    """Where LiteRT stops ("Division by 0") both runtimes give 0: their eval cannot fail."""
    a = np.array([5, -7, np.iinfo(np.int32).min, 9], np.int32)
    b = np.array([0, 2, -1, 0], np.int32)
    for op, want in (("FLOOR_DIV", [0, -4, np.iinfo(np.int32).min, 0]), ("FLOOR_MOD", [0, 1, 0, 0])):
        model = op_model(op, [T((4,), "INT32"), T((4,), "INT32")], [T((4,), "INT32")])
        np.testing.assert_array_equal(run_on(runtime, model, [a, b])[0], np.array(want, np.int32))


@pytest.mark.parametrize("n,in_q,out_q", [(2, (0.05, -3), (0.1, 5)), (3, (0.02, 100), (0.07, -128)),
                                          (5, (0.5, 0), (0.3, 0)), (2, (1e-3, -128), (2e-3, 127))])
def test_add_n_int8(runtime, n, in_q, out_q):
    """ADD_N int8: TFLM's kernel (LiteRT has none), bit-exact over the whole int8 range. TFLM's sum starts from
    the input offset's own term (-zp * scale; its comment says "x = 0"): the real values carry it too."""
    xs = [RNG.integers(-128, 128, (4, 64)).astype(np.int8) for _ in range(n)]
    xs[0] = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)
    specs = [T(x.shape, "INT8", scale=in_q[0], zero_point=in_q[1]) for x in xs]
    model = op_model("ADD_N", specs, [T(xs[0].shape, "INT8", scale=out_q[0], zero_point=out_q[1])])
    ours = compare(runtime, model, xs, ["tflm"])
    real = sum((x.astype(np.float64) - in_q[1]) * in_q[0] for x in xs) - in_q[1] * in_q[0]
    want = np.clip(np.round(real / out_q[0]) + out_q[1], -128, 127)
    assert np.max(np.abs(ours[0].astype(np.int32) - want)) <= 1


def test_atan2_broadcasts(runtime):
    a = float_values((2, 3, 4), scale=3.0)
    b = float_values((3, 1), scale=3.0)
    model = op_model("ATAN2", [T(a.shape, "FLOAT32"), T(b.shape, "FLOAT32")], [T(a.shape, "FLOAT32")])
    ours = run_on(runtime, model, [a, b])[0]
    x, y = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    assert_within_ulp(ours, np.arctan2(x, y).astype(np.float32), 1, "vs float64 math")


@pytest.mark.parametrize("type_,n", [("FLOAT32", 2), ("FLOAT32", 3), ("INT32", 4)])
def test_add_n(runtime, type_, n):
    """LiteRT's types (TFLM's FLOAT32 too): the sum from 0 in input order, bit-exact with TFLM (int32 wraps) and
    with LiteRT but where a float sum is infinite: TFLM keeps it, LiteRT clamps it to +-FLT_MAX."""
    dtype = NUMPY_OF[type_]
    if type_ == "FLOAT32":
        xs = [float_values((2, 5, 3), scale=1000.0) for _ in range(n)]
        xs[0][0, 0, 0] = -0.0  # 0 + -0.0 is +0.0: the reference's sum starts from 0
    else:
        xs = [RNG.integers(-2 ** 31, 2 ** 31, (2, 5, 3)).astype(dtype) for _ in range(n)]
    model = op_model("ADD_N", [T(x.shape, type_) for x in xs], [T(xs[0].shape, type_)])
    ours = compare(runtime, model, xs, ["tflm"] if type_ == "FLOAT32" else ["litert"])[0]
    if type_ == "FLOAT32":
        litert = run_peer(model, xs, "litert")[0]
        big = np.float32(np.finfo(np.float32).max)
        assert np.isinf(ours).any()  # the specials reach the clamp
        clamped = np.where(np.isinf(ours), np.sign(ours) * big, ours).astype(np.float32)
        assert_same([clamped], [litert], what="ours (infinities as FLT_MAX) vs litert")


# ------------------------------------------------------------------------------------- BITCAST, FAKE_QUANT

@pytest.mark.parametrize("src,dst,shape", [
    ("FLOAT32", "INT32", (2, 3)), ("FLOAT32", "UINT8", (2, 3)), ("UINT8", "FLOAT32", (2, 3, 4)),
    ("INT16", "FLOAT16", (5,)), ("FLOAT64", "INT16", (3,)), ("INT8", "BOOL", (4,)), ("INT64", "UINT64", (2, 2))])
def test_bitcast(runtime, src, dst, shape):
    """LiteRT's shape rule and bytes (TFLM has no BITCAST)."""
    dtype = NUMPY_OF.get(src, np.uint64)
    raw = RNG.integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    if dst == "BOOL":
        raw = raw % 2  # BOOL bytes are 0 / 1
    x = raw.view(dtype).reshape(shape)
    size_in, size_out = np.dtype(dtype).itemsize, np.dtype(NUMPY_OF.get(dst, np.uint64)).itemsize
    out_shape = shape + (size_in // size_out,) if size_in > size_out else (shape[:-1] if size_in < size_out else shape)
    model = op_model("BITCAST", [T(shape, src)], [T(out_shape, dst)])
    ours = compare(runtime, model, [x], ["litert"])
    assert ours[0].tobytes() == x.tobytes()


@pytest.mark.parametrize("rmin,rmax,bits", [(-6.0, 6.0, 8), (-0.3, 1.7, 8), (0.0, 1.0, 4), (-2.5, 0.0, 16), (0.5, 3.0, 8),
                                            (-1.0, -0.25, 8), (-10.0, 3.0, 2)])
def test_fake_quant(runtime, rmin, rmax, bits):
    """LiteRT's reference FakeQuant (TFLM has none), bit-exact: nudged ranges with 0 inside and outside [min, max]."""
    x = float_values((4, 30), scale=4.0)
    model = op_model("FAKE_QUANT", [T(x.shape, "FLOAT32")], [T(x.shape, "FLOAT32")], version=2,
                     options={"min": rmin, "max": rmax, "num_bits": bits, "narrow_range": False})
    ours = compare(runtime, model, [x], ["litert"])
    assert len(np.unique(ours[0])) <= 2 ** bits


def test_fake_quant_refuses_narrow_range():
    from edge_sdk.errors import UnsupportedOpError
    from tests.oprunner import run_ours

    model = op_model("FAKE_QUANT", [T((2,), "FLOAT32")], [T((2,), "FLOAT32")],
                     options={"min": -1.0, "max": 1.0, "num_bits": 8, "narrow_range": True})
    with pytest.raises(UnsupportedOpError, match="narrow_range"):
        run_ours(model, [np.zeros(2, np.float32)])


# ------------------------------------------------------------------------------------- DILATE

@pytest.mark.parametrize("type_,shape,dilations", [
    ("FLOAT32", (2, 3), (2, 3)), ("INT8", (3, 1, 4), (1, 5, 2)), ("INT64", (2, 2, 2), (1, 1, 3)),
    ("BOOL", (4,), (3,)), ("FLOAT16", (2, 3, 2, 2), (2, 1, 1, 1)), ("UINT16", (1, 2), (1, 1)),
    ("FLOAT64", (2, 2), (4, 2)), ("UINT32", (3, 2), (2, 2))])
def test_dilate(runtime, type_, shape, dilations):
    """LiteRT's DILATE (TFLM has none) on its types, the padding value a run-time input: bit-exact."""
    dtype = NUMPY_OF[type_]
    x = (RNG.integers(0, 100, shape) % (2 if type_ == "BOOL" else 100)).astype(dtype)
    pad = np.array(1 if type_ == "BOOL" else 77, dtype)
    out_shape = tuple((d - 1) * k + 1 for d, k in zip(shape, dilations))
    model = op_model("DILATE", [T(shape, type_), T((len(shape),), "INT32", data=np.array(dilations, np.int32)),
                                T((), type_)], [T(out_shape, type_)])
    ours = compare(runtime, model, [x, pad], ["litert"])
    spread = tuple(slice(None, None, k) for k in dilations)
    np.testing.assert_array_equal(ours[0][spread], x)


# ------------------------------------------------------------------------------------- on a Cortex-M4 (QEMU)

def _mcu_model() -> bytes:
    """One graph through the new ops whose results are exact in IEEE arithmetic (no libm approximations), so a
    Cortex-M4 image must give the Python interpreter's bytes: float rounding ops, SIGN, SQUARE, ADD_N,
    FAKE_QUANT, RANGE on the float input; shifts, XOR, floor division / modulo, DILATE, FILL, RANK, BITCAST on the
    int32 one."""
    from edge_sdk.model.builder import GraphBuilder
    from edge_sdk.model.writer import write_model

    g = GraphBuilder()
    x = g.input("x", (4, 6), "FLOAT32")
    i = g.input("i", (4, 6), "INT32")

    def t(name, shape, type_="FLOAT32"):
        return g.tensor(name, shape, type_)

    r, c, f, s, q, total, fq = (t(n, (4, 6)) for n in ("round", "ceil", "floor", "sign", "square", "sum", "fq"))
    for op, out in (("ROUND", r), ("CEIL", c), ("FLOOR", f), ("SIGN", s), ("SQUARE", q)):
        g.op(op, [x], [out])
    g.op("ADD_N", [r, c, f], [total])
    g.op("FAKE_QUANT", [x], [fq], version=2, min=-3.0, max=5.0, num_bits=8, narrow_range=False)
    rng_out = t("range", (23,))
    g.op("RANGE", [g.constant("start", np.array(-1.5, np.float32)), g.constant("limit", np.array(2.0, np.float32)),
                   g.constant("delta", np.array(0.15, np.float32))], [rng_out])
    sh, xo, fm, fd, bc = (t(n, (4, 6), "INT32") for n in ("shift", "xor", "mod", "div", "bitcast"))
    g.op("RIGHT_SHIFT", [i, g.constant("amounts", np.array([[0, 3, 31, 40, -2, 7]], np.int32))], [sh])
    g.op("BITWISE_XOR", [sh, g.constant("mask", np.array([[0x5A5A5A5A]], np.int32))], [xo])
    g.op("FLOOR_MOD", [xo, g.constant("m", np.array([97], np.int32))], [fm], version=2)
    g.op("FLOOR_DIV", [i, g.constant("d", np.array([-13], np.int32))], [fd], version=2)
    dl = t("dilated", (7, 6), "INT32")
    g.op("DILATE", [fm, g.constant("dilations", np.array([2, 1], np.int32)), g.constant("pad", np.array(-7, np.int32))],
         [dl])
    g.op("BITCAST", [x], [bc])
    filled, rank = t("filled", (2, 3), "INT32"), t("rank", (), "INT32")
    g.op("FILL", [g.constant("dims", np.array([2, 3], np.int32)), g.constant("value", np.array(11, np.int32))], [filled])
    g.op("RANK", [dl], [rank])
    g.output(total, s, q, fq, rng_out, fd, dl, bc, filled, rank)
    return write_model(g.build())


def test_edge_check_finds_every_kernel_on_the_qemu_board():
    """edge check (the C runtime's own prepare, as check runs it): the graph of _mcu_model RUNS on the board."""
    from edge_sdk.model import read_model
    from edge_sdk.targets.check import RUNS, check_model, format_check

    r = check_model(read_model(_mcu_model()), "qemu-mps2-an386")
    assert r.verdict == RUNS and not r.errors, format_check(r)
    assert {c.name for c in read_model(_mcu_model()).operator_codes} <= set(NEW_OPS)


@pytest.mark.slow
def test_new_ops_run_on_a_cortex_m4_under_qemu(tmp_path):
    """The C kernels built for the QEMU board (arm-none-eabi-gcc, newlib) give the Python interpreter's bytes."""
    import re
    import shutil
    import subprocess

    from edge_sdk import Interpreter
    from tests.oprunner import image_main_hash, image_main_inputs, m4_image

    missing = [x for x in ("make", "arm-none-eabi-gcc", "qemu-system-arm") if shutil.which(x) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    model = tmp_path / "ops.tflite"
    model.write_bytes(_mcu_model())
    elf = m4_image(model, tmp_path / "b") / "edge-image.elf"  # built with the session's library objects
    proc = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel",
                           str(elf), "-icount", "shift=0", "-serial", "stdio", "-semihosting-config",
                           "enable=on,target=native"], capture_output=True, text=True, timeout=120)
    out = proc.stdout.replace("\r", "")
    assert proc.returncode == 0 and "status 0" in out, out + proc.stderr
    py = Interpreter(model_content=model.read_bytes())
    py.allocate_tensors()
    for d, x in zip(py.get_input_details(), image_main_inputs(py)):
        py.set_tensor(d["index"], x)
    py.invoke()
    got = dict(re.findall(r"^out (\d+) (\d+)$", out, re.M))
    names = [d["name"] for d in py.get_output_details()]
    wrong = [names[k] for k, d in enumerate(py.get_output_details())
             if got.get(str(k)) != str(image_main_hash(py.get_tensor(d["index"]).tobytes()))]
    assert len(got) == len(names) and not wrong, f"outputs differing on the M4: {wrong}"
