"""The C runtime's shape/data-movement and reduction kernels (firmware_c/src/kernels/: concatenation, pad,
mean (MEAN, SUM), strided_slice, split (SPLIT, SPLIT_V), transpose): single-op models through the C backend,
bit-exact with our Python interpreter and TFLM (float32 within 1e-5), plus the seanet PAD / STRIDED_SLICE
integration models against TFLM's golden outputs."""

from __future__ import annotations

import csv
import shutil
import zlib

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from tests.conftest import shared_models
from tests.oprunner import T, op_model, run_ours
from tests.peers import run_tflm

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="the C runtime needs gcc and make")

_DT = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "FLOAT32": np.float32, "INT64": np.int64,
       "UINT8": np.uint8, "BOOL": np.bool_}


@pytest.fixture(scope="module")
def backend():
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    return c_interpreter


def _q(type_, scale=0.05, zp=0):
    """Quantization kwargs for T: int8 with a zero point, int16 symmetric, none for the rest."""
    if type_ == "INT8":
        return dict(scale=scale, zero_point=zp)
    if type_ == "INT16":
        return dict(scale=scale, zero_point=0)
    return {}


def _rand(rng, shape, type_):
    if type_ == "FLOAT32":
        return rng.uniform(-2, 2, shape).astype(np.float32)
    if type_ == "BOOL":
        return rng.integers(0, 2, shape).astype(np.bool_)
    info = np.iinfo(_DT[type_])
    lo, hi = max(info.min, -30000), min(info.max, 30000)
    return rng.integers(lo, hi, shape, endpoint=True).astype(_DT[type_])


def run_c(backend, model: bytes, feeds, invocations=1):
    c = backend.CInterpreter(model_content=model)
    c.allocate_tensors()
    for d, x in zip(c.get_input_details(), feeds):
        c.set_tensor(d["index"], x)
    for _ in range(invocations):
        c.invoke()
    return [c.get_tensor(d["index"]) for d in c.get_output_details()]


def check(backend, model: bytes, feeds, tflm=True, float_tol=False):
    """C == our Python interpreter (== TFLM when it runs the case); returns the C outputs."""
    got = run_c(backend, model, feeds)
    refs = [("python", run_ours(model, feeds))]
    if tflm:
        refs.append(("tflm", run_tflm(model, feeds)))
    for name, ref in refs:
        assert len(got) == len(ref)
        for i, (a, b) in enumerate(zip(got, ref)):
            assert a.shape == b.shape and a.dtype == b.dtype, f"output {i} vs {name}: {a.shape} {a.dtype} / {b.shape} {b.dtype}"
            if float_tol:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"output {i} vs {name}")
            else:
                np.testing.assert_array_equal(a, b, err_msg=f"output {i} vs {name}")
    return got


def _seed(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# ------------------------------------------------------------------------------------------------ CONCATENATION

@pytest.mark.parametrize("type_,shapes,axis", [
    ("INT8", [(1, 2, 3), (1, 4, 3), (1, 1, 3)], 1),
    ("INT16", [(2, 3), (2, 5)], -1),
    ("INT32", [(1, 40), (1, 9)], 1),        # the audio preprocessor's INT32 case
    ("FLOAT32", [(2, 2, 2), (1, 2, 2)], 0),
    ("INT8", [(3, 4)], 1),                   # a single input: a copy
])
def test_concatenation(backend, type_, shapes, axis):
    rng = _seed("concat", type_, shapes, axis)
    xs = [T(s, type_, **_q(type_)) for s in shapes]
    out_shape = list(shapes[0])
    a = axis % len(out_shape)
    out_shape[a] = sum(s[a] for s in shapes)
    model = op_model("CONCATENATION", xs, [T(out_shape, type_, **_q(type_))], options={"axis": axis})
    feeds = [_rand(rng, s, type_) for s in shapes]
    got = check(backend, model, feeds, float_tol=type_ == "FLOAT32")
    np.testing.assert_array_equal(got[0], np.concatenate(feeds, axis=axis))


def test_concatenation_with_a_constant_input(backend):
    rng = _seed("concat-const")
    c = rng.integers(-100, 100, (1, 3)).astype(np.int32)
    model = op_model("CONCATENATION", [T((1, 5), "INT32"), T((1, 3), "INT32", data=c)], [T((1, 8), "INT32")],
                     options={"axis": 1})
    x = rng.integers(-100, 100, (1, 5)).astype(np.int32)
    np.testing.assert_array_equal(check(backend, model, [x])[0], np.concatenate([x, c], axis=1))


def test_concatenation_refuses_mixed_int8_quantization(backend):
    model = op_model("CONCATENATION", [T((1, 2), "INT8", scale=0.1, zero_point=0), T((1, 2), "INT8", scale=0.2, zero_point=0)],
                     [T((1, 4), "INT8", scale=0.1, zero_point=0)], options={"axis": 1})
    with pytest.raises(UnsupportedOpError, match="quantized differently"):
        backend.CInterpreter(model_content=model).allocate_tensors()


# ------------------------------------------------------------------------------------------------ PAD / PADV2

@pytest.mark.parametrize("op,type_,value", [
    ("PAD", "INT8", None), ("PAD", "INT16", None), ("PAD", "FLOAT32", None), ("PAD", "INT32", None),
    ("PADV2", "INT8", "const"), ("PADV2", "FLOAT32", "const"), ("PADV2", "INT8", "input"),
])
def test_pad(backend, op, type_, value):
    rng = _seed("pad", op, type_, value)
    shape, pads = (1, 3, 4, 2), np.array([[0, 1], [2, 0], [1, 3], [0, 2]], np.int32)
    out = tuple(s + int(p.sum()) for s, p in zip(shape, pads))
    q = _q(type_, zp=-5)
    inputs = [T(shape, type_, **q), T((4, 2), "INT32", data=pads)]
    feeds = [_rand(rng, shape, type_)]
    if value == "const":
        v = np.array([7 if type_ != "FLOAT32" else 1.5], _DT[type_])
        inputs.append(T((1,), type_, data=v, **q))
    elif value == "input":
        inputs.append(T((1,), type_, **q))
        feeds.append(np.array([42], _DT[type_]))
    model = op_model(op, inputs, [T(out, type_, **q)])
    # TFLM's PADV2 reads its value from a constant only when it has one; a run-time value is ours vs Python
    got = check(backend, model, feeds, tflm=value != "input", float_tol=type_ == "FLOAT32")
    fill = {None: (-5 if type_ == "INT8" else 0), "const": (7 if type_ != "FLOAT32" else 1.5), "input": 42}[value]
    want = np.pad(feeds[0], pads, constant_values=fill)
    np.testing.assert_array_equal(got[0], want)


def test_pad_refuses_run_time_paddings(backend):
    model = op_model("PAD", [T((2, 2), "INT8", scale=0.1, zero_point=0), T((2, 2), "INT32")],
                     [T((4, 4), "INT8", scale=0.1, zero_point=0)])
    with pytest.raises(UnsupportedOpError, match="paddings computed at run time"):
        backend.CInterpreter(model_content=model).allocate_tensors()


# ------------------------------------------------------------------------------------------------ MEAN / SUM

@pytest.mark.parametrize("op,type_,shape,axes,keep", [
    ("MEAN", "INT8", (1, 4, 5, 8), [1, 2], True),
    ("MEAN", "INT8", (2, 6, 7), [-1], False),
    ("MEAN", "INT16", (1, 3, 3, 16), [1, 2], True),
    ("MEAN", "FLOAT32", (2, 5, 3), [0, 2], False),
    ("MEAN", "INT8", (3, 17), [0, 1], False),
    ("SUM", "INT8", (1, 4, 4, 3), [1, 2], True),
    ("SUM", "INT16", (2, 9), [1], False),
    ("SUM", "FLOAT32", (4, 3), [0], True),
])
def test_mean_sum(backend, op, type_, shape, axes, keep):
    rng = _seed("reduce", op, type_, shape, axes, keep)
    rank = len(shape)
    red = sorted({a % rank for a in axes})
    out = tuple((1 if d in red else n) for d, n in enumerate(shape) if keep or d not in red)
    qin = _q(type_, scale=0.04, zp=-7)
    qout = _q(type_, scale=0.03 if op == "MEAN" else 0.5, zp=3)
    model = op_model(op, [T(shape, type_, **qin), T((len(axes),), "INT32", data=np.array(axes, np.int32))],
                     [T(out, type_, **qout)], options={"keep_dims": keep})
    check(backend, model, [_rand(rng, shape, type_)], float_tol=type_ == "FLOAT32")


# ------------------------------------------------------------------------------------------------ STRIDED_SLICE

SS_CASES = [
    # type, shape, begin, end, strides, options, tflm
    ("INT8", (1, 8, 6, 3), [0, 1, 0, 0], [1, 7, 6, 3], [1, 2, 1, 1], {}, True),
    ("INT32", (1, 49, 40), [0, 0, 0], [1, 1, 40], [1, 1, 1], {"shrink_axis_mask": 2}, True),
    ("INT16", (4, 10), [-1, 9], [0, 0], [-1, -3], {"end_mask": 1}, True),
    ("FLOAT32", (3, 4, 5), [1, 0, 1], [3, 4, 4], [1, 1, 2], {"begin_mask": 2, "end_mask": 4}, True),
    ("INT8", (2, 3, 4), [0, 1], [2, 3], [1, 1], {"ellipsis_mask": 1}, False),
    ("INT8", (3, 4), [0, 0, 1], [1, 3, 3], [1, 1, 1], {"new_axis_mask": 1, "begin_mask": 1, "end_mask": 1}, False),
    ("INT16", (2, 6), [0, 1], [2, 3], [1, 1], {"offset": True}, False),
    ("INT32", (5,), [2], [3], [1], {"shrink_axis_mask": 1}, True),
]


@pytest.mark.parametrize("case", SS_CASES, ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[1]))}-{sorted(c[5])}")
def test_strided_slice(backend, case):
    type_, shape, begin, end, strides, opts, tflm = case
    rng = _seed("ss", case)
    x = _rand(rng, shape, type_)
    ints = lambda v: T((len(v),), "INT32", data=np.array(v, np.int32))
    # the output shape our Python kernel computes (it is checked against TFLM / LiteRT elsewhere)
    probe = op_model("STRIDED_SLICE", [T(shape, type_, **_q(type_)), ints(begin), ints(end), ints(strides)],
                     [T((1,), type_, **_q(type_))], options=opts)
    from edge_sdk import Interpreter

    p = Interpreter(model_content=probe)
    p.allocate_tensors()
    out_shape = p.tensor_shapes()[p.get_output_details()[0]["index"]]
    model = op_model("STRIDED_SLICE", [T(shape, type_, **_q(type_)), ints(begin), ints(end), ints(strides)],
                     [T(out_shape, type_, **_q(type_))], options=opts)
    got = check(backend, model, [x], tflm=tflm, float_tol=type_ == "FLOAT32")
    assert got[0].size > 0


# ------------------------------------------------------------------------------------------------ SPLIT / SPLIT_V

@pytest.mark.parametrize("type_", ["INT8", "INT16", "FLOAT32"])
def test_split(backend, type_):
    rng = _seed("split", type_)
    shape = (2, 6, 3)
    model = op_model("SPLIT", [T((1,), "INT32", data=np.array([1], np.int32)), T(shape, type_, **_q(type_))],
                     [T((2, 2, 3), type_, **_q(type_)) for _ in range(3)], options={"num_splits": 3})
    x = _rand(rng, shape, type_)
    got = check(backend, model, [x], float_tol=type_ == "FLOAT32")
    for g, w in zip(got, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(g, w)


def test_split_v_with_an_inferred_size(backend):
    rng = _seed("split_v")
    shape = (3, 10)
    sizes = np.array([2, -1, 3], np.int32)
    model = op_model("SPLIT_V", [T(shape, "INT8", scale=0.1, zero_point=2), T((3,), "INT32", data=sizes),
                                 T((1,), "INT32", data=np.array([-1], np.int32))],
                     [T((3, n), "INT8", scale=0.1, zero_point=2) for n in (2, 5, 3)], options={"num_splits": 3})
    x = _rand(rng, shape, "INT8")
    got = check(backend, model, [x])
    assert [g.shape for g in got] == [(3, 2), (3, 5), (3, 3)]
    np.testing.assert_array_equal(np.concatenate(got, axis=1), x)


def test_split_refuses_an_uneven_split(backend):
    model = op_model("SPLIT", [T((1,), "INT32", data=np.array([1], np.int32)), T((2, 5), "INT8", scale=0.1, zero_point=0)],
                     [T((2, 2), "INT8", scale=0.1, zero_point=0) for _ in range(2)], options={"num_splits": 2})
    with pytest.raises(ModelError, match="not divisible"):
        backend.CInterpreter(model_content=model).allocate_tensors()


# ------------------------------------------------------------------------------------------------ TRANSPOSE

@pytest.mark.parametrize("type_,shape,perm", [
    ("INT8", (1, 3, 4, 5), [0, 3, 1, 2]),
    ("INT16", (2, 3, 4), [2, 0, 1]),
    ("FLOAT32", (4, 6), [1, 0]),
    ("INT32", (2, 1, 3, 2, 2), [4, 3, 2, 1, 0]),
])
def test_transpose(backend, type_, shape, perm):
    rng = _seed("transpose", type_, shape)
    out = tuple(shape[p] for p in perm)
    model = op_model("TRANSPOSE", [T(shape, type_, **_q(type_)), T((len(perm),), "INT32", data=np.array(perm, np.int32))],
                     [T(out, type_, **_q(type_))])
    x = _rand(rng, shape, type_)
    # TFLM's TRANSPOSE runs float32/int8/int16 only; INT32 is checked against our Python kernel
    got = check(backend, model, [x], tflm=type_ != "INT32", float_tol=type_ == "FLOAT32")
    np.testing.assert_array_equal(got[0], x.transpose(perm))


# ------------------------------------------------------------------------------------------------ seanet goldens

def _read_csv(path, dtype):
    with open(path, newline="") as f:
        return np.array([int(v) for row in csv.reader(f) for v in row if v.strip()], dtype)


@pytest.mark.parametrize("family", ["pad", "strided_slice"])
def test_seanet_goldens_through_c(backend, family):
    models = sorted(shared_models(f"tflite-micro/seanet/{family}/*.tflite"))
    if not models:
        pytest.skip("../shared/models is absent")
    checked = 0
    for path in models:
        stem = path.stem
        inputs = sorted(path.parent.glob(f"{stem}_input*_int16.csv"))
        golden = path.parent / f"{stem}_golden_int16.csv"
        if not inputs or not golden.exists():
            continue
        c = backend.CInterpreter(model_path=path)
        c.allocate_tensors()
        details = c.get_input_details()
        for d, f in zip(details, inputs):
            c.set_tensor(d["index"], _read_csv(f, d["dtype"]).reshape(d["shape"]))
        c.invoke()
        out = c.get_tensor(c.get_output_details()[0]["index"])
        np.testing.assert_array_equal(out.reshape(-1), _read_csv(golden, np.int64).astype(out.dtype),
                                      err_msg=path.name)
        checked += 1
    assert checked >= 10
