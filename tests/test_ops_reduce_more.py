"""REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL and ARG_MIN in both runtimes (the conftest ``runtime`` grid),
against LiteRT's reference kernels for every input type LiteRT takes, and bit for bit against TFLM where TFLM has
the op (REDUCE_MIN float32 / int8, ARG_MIN). Every comparison is exact, float32 included: the min and the arg-min
pick an input value, and the float32 product is folded in the reference kernels' order (input row-major order
within each output's block), so the same float32 multiplications round the same way.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import UnsupportedOpError
from tests.oprunner import T, assert_same, op_model, run_on, run_peer

RNG = np.random.default_rng(23)
NP = {"FLOAT32": np.float32, "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "INT32": np.int32,
      "INT64": np.int64, "BOOL": np.bool_}
QUANT = {"INT8": (0.05, -3), "UINT8": (0.05, 120), "INT16": (0.002, 0)}

# (input shape, axes, keep_dims): one axis, several (with a duplicate and a negative), all, keep_dims both ways
SHAPES = [
    ((2, 3, 4), [1], False),
    ((2, 3, 4), [0, 2], True),
    ((2, 3, 4), [-1, 2], False),  # a duplicate given as negative and positive: reduced once
    ((3, 5), [0, 1], False),  # every axis: one output
    ((1, 4, 4, 3), [1, 2], True),  # a global pool shape
]


def values(shape, type_, small=False):
    dt = NP[type_]
    if type_ == "BOOL":
        return RNG.random(shape) < 0.6
    if type_ == "FLOAT32":
        return RNG.standard_normal(shape).astype(np.float32) * (1.5 if small else 10)
    if small:  # products of a few factors stay near the type's range (and wrap there: compared too)
        lo = 0 if type_ == "UINT8" else -4
        return RNG.integers(lo, 5, shape).astype(dt)
    info = np.iinfo(dt)
    return RNG.integers(info.min, info.max, shape, endpoint=True).astype(dt)


def reduce_model(op, shape, axes, keep, type_, quant=None, out_quant=None, version=1):
    q = quant if quant is not None else ((None, None) if type_ not in QUANT else QUANT[type_])
    oq = out_quant if out_quant is not None else q
    x = T(shape, type_, *q)
    a = T((len(axes),), "INT32", data=np.array(axes, np.int32))
    resolved = {d % len(shape) for d in axes}
    out_shape = tuple(1 if d in resolved else n for d, n in enumerate(shape) if keep or d not in resolved)
    return op_model(op, [x, a], [T(out_shape, type_, *oq)], {"keep_dims": keep}, version=version)


def check(runtime, model, feeds, peers):
    ours = run_on(runtime, model, feeds)
    for p in peers:
        assert_same(ours, run_peer(model, feeds, p), what=f"{runtime} vs {p}")
    return ours


MIN_TYPES = ["FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL"]


@pytest.mark.parametrize("shape,axes,keep", SHAPES)
@pytest.mark.parametrize("type_", MIN_TYPES)
def test_reduce_min(runtime, shape, axes, keep, type_):
    version = {"INT8": 2, "INT16": 3}.get(type_, 1)
    model = reduce_model("REDUCE_MIN", shape, axes, keep, type_, version=version)
    x = values(shape, type_)
    peers = ["litert"] + (["tflm"] if type_ in ("FLOAT32", "INT8") else [])
    (ours,) = check(runtime, model, [x], peers)
    ax = tuple(sorted({d % len(shape) for d in axes}))
    np.testing.assert_array_equal(ours, x.min(axis=ax, keepdims=keep))


def test_reduce_min_float_nan_and_inf(runtime):
    # '(in < current) ? in : current' from FLT_MAX: a NaN never wins, an all-NaN or all-+inf block gives FLT_MAX
    x = np.array([[np.nan, 2.0, -1.0], [np.nan, np.nan, np.nan], [np.inf, np.inf, np.inf], [-np.inf, np.nan, 3.0]],
                 np.float32)
    model = reduce_model("REDUCE_MIN", x.shape, [1], False, "FLOAT32")
    (ours,) = check(runtime, model, [x], ["tflm"])
    big = np.finfo(np.float32).max
    np.testing.assert_array_equal(ours, np.array([-1.0, big, big, -np.inf], np.float32))


def test_reduce_min_refuses_requantization(runtime):
    model = reduce_model("REDUCE_MIN", (2, 3), [1], False, "INT8", quant=(0.1, 0), out_quant=(0.2, 0))
    with pytest.raises(UnsupportedOpError if runtime == "python" else Exception, match="quantization differ"):
        run_on(runtime, model, [values((2, 3), "INT8")])


PROD_TYPES = ["FLOAT32", "INT8", "UINT8", "INT16", "INT32", "INT64", "BOOL"]


@pytest.mark.parametrize("shape,axes,keep", SHAPES)
@pytest.mark.parametrize("type_", PROD_TYPES)
def test_reduce_prod_unquantized(runtime, shape, axes, keep, type_):
    model = reduce_model("REDUCE_PROD", shape, axes, keep, type_, quant=(None, None))
    x = values(shape, type_, small=True)
    (ours,) = check(runtime, model, [x], ["litert"])
    if type_ == "BOOL":
        ax = tuple(sorted({d % len(shape) for d in axes}))
        np.testing.assert_array_equal(ours, x.all(axis=ax, keepdims=keep))


# (input scale, zero point, output scale, zero point): LiteRT scales each step by s_in / s_out^(1/n)
PROD_QUANT = {"INT8": [(0.05, -3, 0.05, -3), (0.1, 4, 0.02, -10), (0.02, 0, 0.5, 7)],
              "INT16": [(0.002, 0, 0.002, 0), (0.01, 0, 0.003, 0)]}


@pytest.mark.parametrize("shape,axes,keep", SHAPES[:4])
@pytest.mark.parametrize("type_,case", [(t, k) for t in PROD_QUANT for k in range(len(PROD_QUANT[t]))])
def test_reduce_prod_quantized(runtime, shape, axes, keep, type_, case):
    si, zi, so, zo = PROD_QUANT[type_][case]
    model = reduce_model("REDUCE_PROD", shape, axes, keep, type_, quant=(si, zi), out_quant=(so, zo), version=2)
    x = values(shape, type_)
    if type_ == "INT16":  # moderate values: a product of full-range int16 values saturates at once
        x = (x // 64).astype(np.int16)
    check(runtime, model, [x], ["litert"])


def test_reduce_prod_refuses_quantized_uint8(runtime):
    model = reduce_model("REDUCE_PROD", (2, 3), [1], False, "UINT8", quant=(0.1, 128))
    with pytest.raises(UnsupportedOpError if runtime == "python" else Exception, match="UINT8"):
        run_on(runtime, model, [values((2, 3), "UINT8")])


@pytest.mark.parametrize("op,fold", [("REDUCE_ANY", np.any), ("REDUCE_ALL", np.all)])
@pytest.mark.parametrize("shape,axes,keep", SHAPES)
def test_reduce_any_all(runtime, op, fold, shape, axes, keep):
    model = reduce_model(op, shape, axes, keep, "BOOL")
    x = values(shape, "BOOL")
    (ours,) = check(runtime, model, [x], ["litert"])
    np.testing.assert_array_equal(ours, fold(x, axis=tuple(sorted({d % len(shape) for d in axes})), keepdims=keep))


@pytest.mark.parametrize("op", ["REDUCE_ANY", "REDUCE_ALL"])
def test_reduce_any_all_take_bool_only(runtime, op):
    model = reduce_model(op, (2, 3), [1], False, "FLOAT32")
    with pytest.raises(Exception, match="type"):
        run_on(runtime, model, [values((2, 3), "FLOAT32")])


ARG_TYPES = ["FLOAT32", "INT8", "UINT8", "INT16", "INT32", "BOOL"]


def arg_min_model(shape, axis, type_, out_type="INT32", axis_type="INT32"):
    x = T(shape, type_, *((None, None) if type_ not in QUANT else QUANT[type_]))
    a = T((1,), axis_type, data=np.array([axis], NP[axis_type]))
    out_shape = tuple(n for d, n in enumerate(shape) if d != axis % len(shape))
    return op_model("ARG_MIN", [x, a], [T(out_shape, out_type)], {"output_type": out_type}, version=2)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("type_", ARG_TYPES)
def test_arg_min(runtime, axis, type_):
    shape = (3, 4, 5)
    x = values(shape, type_)
    if type_ in ("INT8", "UINT8", "INT16", "INT32"):
        x = (x // (np.iinfo(NP[type_]).max // 3)).astype(NP[type_])  # many ties: the first index wins
    model = arg_min_model(shape, axis, type_)
    # LiteRT's arg_min_max.cc takes no INT16 (ours does, as ARG_MAX: numpy is the reference there)
    peers = (["litert"] if type_ != "INT16" else []) + (["tflm"] if type_ in ("FLOAT32", "INT8") else [])
    (ours,) = check(runtime, model, [x], peers)
    np.testing.assert_array_equal(ours, np.argmin(x, axis=axis))


def test_arg_min_int64_output_and_axis(runtime):
    model = arg_min_model((2, 6), 1, "FLOAT32", out_type="INT64", axis_type="INT64")
    (ours,) = check(runtime, model, [values((2, 6), "FLOAT32")], ["litert"])
    assert ours.dtype == np.int64


def test_arg_min_nan(runtime):
    x = np.array([[np.nan, 1.0, -3.0, -3.0], [np.nan] * 4, [np.nan, np.inf, np.nan, np.inf], [2.0, np.nan, -5.0, np.nan]],
                 np.float32)
    (ours,) = check(runtime, arg_min_model(x.shape, 1, "FLOAT32"), [x], ["tflm"])
    np.testing.assert_array_equal(ours, [0, 0, 0, 2])  # a plain '<': a NaN never replaces, a leading NaN stays


# ---- L2_NORMALIZATION: a reduction along the last axis (sum of squares), then a rescale of the row
L2_QUANT = {"FLOAT32": ((None, None), (None, None), 1), "INT8": ((0.05, 3), (1 / 128, 0), 2),
            "UINT8": ((0.05, 130), (1 / 128, 128), 2)}


@pytest.mark.parametrize("shape", [(7,), (2, 5), (2, 3, 7), (1, 2, 2, 16)])
@pytest.mark.parametrize("type_", ["FLOAT32", "INT8", "UINT8"])
def test_l2_normalization(runtime, shape, type_):
    q, oq, version = L2_QUANT[type_]
    model = op_model("L2_NORMALIZATION", [T(shape, type_, *q)], [T(shape, type_, *oq)], version=version)
    x = values(shape, type_)
    if type_ == "FLOAT32":
        x[..., 0] = 0.0  # a zero row: the norm's 1e-6 floor
        x.reshape(-1, shape[-1])[0] = 0.0
    # TFLM has float32 and int8 (bit-exact); LiteRT's reference kernels take uint8 too. Float32 is exact: the sum of
    # squares in the reference's order, then one sqrt and one division, each correctly rounded.
    (ours,) = check(runtime, model, [x], ["litert"] + (["tflm"] if type_ != "UINT8" else []))
    if type_ == "FLOAT32":
        norm = np.sqrt((x.astype(np.float64) ** 2).sum(axis=-1, keepdims=True))
        np.testing.assert_allclose(ours, x / np.maximum(norm, 1e-6), rtol=1e-5, atol=1e-6)


def test_l2_normalization_refuses_other_output_scale(runtime):
    model = op_model("L2_NORMALIZATION", [T((1, 4), "INT8", 0.05, 0)], [T((1, 4), "INT8", 0.01, 0)], version=2)
    with pytest.raises(Exception, match="1/128"):
        run_on(runtime, model, [values((1, 4), "INT8")])


def test_l2_normalization_refuses_fused_activation(runtime):
    model = op_model("L2_NORMALIZATION", [T((1, 4), "FLOAT32")], [T((1, 4), "FLOAT32")],
                     {"fused_activation_function": "RELU"})
    with pytest.raises(Exception, match="activation"):
        run_on(runtime, model, [values((1, 4), "FLOAT32")])


# ---- CUMSUM: LiteRT takes FLOAT32, INT32, INT64; TFLM FLOAT32 and INT8 (LiteRT refuses INT8)
CUMSUM_CASES = [((2, 3, 4), 1), ((2, 3, 4), -1), ((5,), 0), ((3, 4), 0)]


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape,axis", CUMSUM_CASES)
@pytest.mark.parametrize("type_", ["FLOAT32", "INT32", "INT64", "INT8"])
def test_cumsum(runtime, shape, axis, reverse, exclusive, type_):
    qi, qo = ((0.05, -3), (0.2, 5)) if type_ == "INT8" else ((None, None), (None, None))
    model = op_model("CUMSUM", [T(shape, type_, *qi), T((), "INT32", data=np.array(axis, np.int32))],
                     [T(shape, type_, *qo)], {"exclusive": exclusive, "reverse": reverse})
    x = values(shape, type_, small=type_ != "INT8")
    # float32 exact: one running float32 sum per line in the reference's order. INT8: TFLM is the only peer (its
    # sum starts from the rescaled -zp_in, an offset we reproduce bit for bit: see kernels/cumsum.py).
    peers = {"FLOAT32": ["litert", "tflm"], "INT8": ["tflm"]}.get(type_, ["litert"])
    (ours,) = check(runtime, model, [x], peers)
    if type_ != "INT8":
        want = np.flip(np.cumsum(np.flip(x, axis) if reverse else x, axis=axis, dtype=x.dtype), axis) if reverse \
            else np.cumsum(x, axis=axis, dtype=x.dtype)
        if exclusive:
            want = want - x
        np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5)


def test_cumsum_int8_zero_point_zero_is_the_plain_sum(runtime):
    x = np.array([[1, 2, 3, -4]], np.int8)
    model = op_model("CUMSUM", [T(x.shape, "INT8", 0.1, 0), T((), "INT32", data=np.array(1, np.int32))],
                     [T(x.shape, "INT8", 0.1, 0)])
    (ours,) = check(runtime, model, [x], ["tflm"])
    np.testing.assert_array_equal(ours, [[1, 3, 6, 2]])


# ---- LOCAL_RESPONSE_NORMALIZATION (float32 only; LiteRT has it, TFLM has not)
@pytest.mark.parametrize("radius,bias,alpha,beta", [(2, 1.0, 0.5, 0.75), (1, 2.0, 1e-4, 0.5), (5, 0.5, 0.1, 1.3),
                                                    (0, 1.0, 1.0, 1.0)])
def test_local_response_normalization(runtime, radius, bias, alpha, beta):
    shape = (2, 4, 3, 9)
    model = op_model("LOCAL_RESPONSE_NORMALIZATION", [T(shape, "FLOAT32")], [T(shape, "FLOAT32")],
                     {"radius": radius, "bias": bias, "alpha": alpha, "beta": beta})
    x = values(shape, "FLOAT32") * 0.3
    ours = run_on(runtime, model, [x])
    # The sums of squares follow the reference's order; the power is not correctly rounded in any of the three
    # (LiteRT's build, glibc's powf in C, numpy's vectorized float32 power in Python): they differ by an ulp on some
    # inputs, so each is held to 4 float32 ulp (relative 5e-7) of LiteRT and of each other.
    assert_same(ours, run_peer(model, [x], "litert"), rtol=5e-7, atol=1e-30, what=f"{runtime} vs litert")
    if runtime == "c":
        assert_same(ours, run_on("python", model, [x]), rtol=5e-7, atol=1e-30, what="c vs python")


# ---- UNSORTED_SEGMENT_SUM / _PROD / _MAX / _MIN (LiteRT only): FLOAT32 and INT32 data, INT32 ids
SEGMENT_OPS = ["UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN"]


@pytest.mark.parametrize("data_shape,ids,num", [((6, 3), [2, 0, 2, -1, 3, 0], 4),  # -1 is skipped
                                                ((2, 3, 2), [[1, 1, 0], [0, 2, 1]], 3),  # 2-D ids
                                                ((5,), [0, 0, 0, 0, 0], 2)])  # segment 1 stays at its start
@pytest.mark.parametrize("type_", ["FLOAT32", "INT32"])
@pytest.mark.parametrize("op", SEGMENT_OPS)
def test_unsorted_segment(runtime, op, type_, data_shape, ids, num):
    ids = np.array(ids, np.int32)
    out = (num,) + data_shape[ids.ndim:]
    model = op_model(op, [T(data_shape, type_), T(ids.shape, "INT32"), T((), "INT32", data=np.array(num, np.int32))],
                     [T(out, type_)])
    x = values(data_shape, type_, small=True)
    check(runtime, model, [x, ids], ["litert"])  # float32 exact: each segment folds its rows in input order


def test_unsorted_segment_id_past_the_end_is_skipped(runtime):
    # LiteRT fails the invoke on an id >= num_segments; our evals cannot fail: the row is skipped
    model = op_model("UNSORTED_SEGMENT_SUM", [T((3,), "INT32"), T((3,), "INT32"), T((), "INT32", data=np.array(2, np.int32))],
                     [T((2,), "INT32")])
    (ours,) = run_on(runtime, model, [np.array([5, 7, 9], np.int32), np.array([1, 2, 1], np.int32)])
    np.testing.assert_array_equal(ours, [0, 14])


# ---- SEGMENT_SUM: FLOAT32 / INT32 with constant sorted ids. LiteRT's reference resolver lacks it: its builtin
# resolver's kernel (segment_sum.cc, the only implementation) is the peer.
@pytest.mark.parametrize("data_shape,ids", [((4, 2), [0, 0, 1, 2]), ((5,), [0, 1, 1, 1, 2]), ((3, 2, 2), [0, 0, 0])])
@pytest.mark.parametrize("type_", ["FLOAT32", "INT32"])
def test_segment_sum(runtime, type_, data_shape, ids):
    ids = np.array(ids, np.int32)
    out = (int(ids[-1]) + 1,) + data_shape[1:]
    model = op_model("SEGMENT_SUM", [T(data_shape, type_), T(ids.shape, "INT32", data=ids)], [T(out, type_)])
    x = values(data_shape, type_, small=True)
    (ours,) = check(runtime, model, [x], ["litert_opt"])
    want = np.zeros(out, x.dtype)
    np.add.at(want, ids, x)
    np.testing.assert_array_equal(ours, want)


def test_segment_sum_refuses_run_time_ids(runtime):
    # the output's size comes from the ids' values: computed at run time they are refused, with that reason
    model = op_model("SEGMENT_SUM", [T((3,), "FLOAT32"), T((3,), "INT32")], [T((2,), "FLOAT32")])
    with pytest.raises(Exception, match="run time"):
        run_on(runtime, model, [values((3,), "FLOAT32"), np.array([0, 0, 1], np.int32)])


@pytest.mark.slow
def test_reduce_min_float_runs_on_the_m4_under_qemu(tmp_path):
    """The pitch detector's op on a microcontroller: a REDUCE_MIN float32 image for the QEMU Cortex-M4 board gives
    our Python interpreter's output bytes (image_main's inputs: random bytes, NaNs and infinities among them)."""
    import re
    import subprocess

    from edge_sdk import Interpreter
    from tests.oprunner import image_main_hash, image_main_inputs, m4_image
    from tests.test_c_builds import _need

    _need("make", "arm-none-eabi-gcc", "qemu-system-arm")
    model = tmp_path / "reduce_min.tflite"
    model.write_bytes(reduce_model("REDUCE_MIN", (4, 8, 6), [1, -1], False, "FLOAT32"))
    elf = m4_image(model, tmp_path / "b") / "edge-image.elf"  # built with the session's library objects
    proc = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none", "-kernel",
                           str(elf), "-icount", "shift=0", "-serial", "stdio", "-semihosting-config",
                           "enable=on,target=native"], capture_output=True, text=True, timeout=60)
    out = proc.stdout.replace("\r", "")
    assert proc.returncode == 0 and "status 0" in out, out + proc.stderr
    py = Interpreter(model_content=model.read_bytes())
    py.allocate_tensors()
    for d, x in zip(py.get_input_details(), image_main_inputs(py)):
        py.set_tensor(d["index"], x)
    py.invoke()
    want = image_main_hash(py.get_tensor(py.get_output_details()[0]["index"]).tobytes())
    assert re.search(r"^out 0 (\d+)$", out, re.M).group(1) == str(want)
