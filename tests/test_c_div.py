"""C runtime (firmware_c) DIV, bit-exact with our Python kernel (edge_sdk/runtime/kernels/elementwise.py prepare_div)
and TFLM.

int32: seeded values with the extremes (INT32_MIN, -1, 0, INT32_MAX), broadcast shapes, every fused
activation; zero divisors give 0 and INT32_MIN / -1 wraps (C vs Python only: TFLM traps on both). float32:
exact quotients. int8: every input pair for several scale / zero-point sets (the large-quotient shifts past 31
included), C == Python == TFLM. Refusals: int16, an unsupported activation, scales out of the C range.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edge_sdk.errors import ModelError, UnsupportedOpError
from tests.oprunner import T, op_model
from tests.peers import run_tflm
from tests.test_c_signal import check  # the shared C vs Python vs TFLM check

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                                reason="the C runtime needs gcc and make")

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)
I32_CORNERS = [-(1 << 31), -(1 << 31) + 1, -1, 0, 1, 2, 7, (1 << 31) - 1, -7]


@pytest.fixture(scope="module", autouse=True)
def backend():
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    return c_interpreter


def div_model(sa, sb, type_, act="NONE", qa=None, qb=None, qo=None):
    def spec(shape, q):
        return T(shape, type_, *q) if q else T(shape, type_)
    out = np.broadcast_shapes(sa, sb)
    return op_model("DIV", [spec(sa, qa), spec(sb, qb)], [spec(out, qo)], options={"fused_activation_function": act},
                    version=2 if type_ == "INT8" else 1)


def i32(rng, shape, bits=31):
    return rng.integers(-(1 << bits), 1 << bits, shape).astype(np.int32)


@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((5,), ()), ((), (6,)), ((2, 1, 3), (1, 4, 1))])
def test_div_int32(rng, act, shapes):
    sa, sb = shapes
    a, b = i32(rng, sa), i32(rng, sb, bits=int(rng.integers(2, 31)))
    b[b == 0] = 3
    b[b == -1] = 5
    m = div_model(sa, sb, "INT32", act)
    check(m, [a, b])  # no zero divisor, no INT32_MIN / -1: TFLM runs it


def test_div_int32_extremes_and_zero_divisor(rng):
    a = np.array([c for c in I32_CORNERS for _ in I32_CORNERS] + list(i32(rng, 19)), np.int32)
    b = np.array([c for _ in I32_CORNERS for c in I32_CORNERS] + list(i32(rng, 19, bits=4)), np.int32)
    m = div_model(a.shape, b.shape, "INT32")
    y = check(m, [a, b], tflm=False)[0]
    assert (y[b == 0] == 0).all()
    assert y[(a == -(1 << 31)) & (b == -1)].tolist() == [-(1 << 31)]
    ok = (b != 0) & ~((a == -(1 << 31)) & (b == -1))
    np.testing.assert_array_equal(y[ok], run_tflm(div_model((int(ok.sum()),), (int(ok.sum()),), "INT32"),
                                                  [a[ok], b[ok]])[0])
    # a scalar zero divisor (as a constant would be): zeros, no crash
    m = div_model((4,), (), "INT32")
    assert not check(m, [a[:4], np.array(0, np.int32)], tflm=False)[0].any()


@pytest.mark.parametrize("act", ["NONE", "RELU6"])
def test_div_float32(rng, act):
    a = (rng.standard_normal((4, 6)) * 10).astype(np.float32)
    b = (rng.standard_normal((6,)) * 3).astype(np.float32)
    a[0, :3] = [0.0, 1e30, -1e-30]
    check(div_model((4, 6), (6,), "FLOAT32", act), [a, b])


INT8_QUANT = [  # (scale, zp) of a, b, out
    ((0.05, -3), (0.02, 7), (0.06, 1)),        # numerators 0, -1: rounding exponent 32
    ((0.5, 100), (0.0001, -128), (0.3, -20)),  # scale ratio 1.7e4
    ((0.01, 0), (0.5, 0), (0.00002, 0)),       # scale ratio 1e3
    ((1.0, 127), (1.0, -128), (1.0, 0)),
]


@pytest.mark.parametrize("act", ["NONE", "RELU"])
@pytest.mark.parametrize("q", INT8_QUANT, ids=str)
def test_div_int8_every_pair(act, q):
    qa, qb, qo = q
    m = div_model((256, 1), (1, 256), "INT8", act, qa, qb, qo)
    check(m, [ALL_INT8.reshape(256, 1), ALL_INT8.reshape(1, 256)])


def test_div_refusals():
    from edge_sdk.runtime.c_interpreter import CInterpreter

    with pytest.raises(UnsupportedOpError):
        CInterpreter(model_content=div_model((3,), (3,), "INT16", "NONE", (0.1, 0), (0.1, 0), (0.1, 0))).allocate_tensors()
    with pytest.raises(UnsupportedOpError, match="activation"):
        CInterpreter(model_content=div_model((3,), (3,), "FLOAT32", "TANH")).allocate_tensors()
    with pytest.raises(ModelError, match="broadcast"):
        bad = op_model("DIV", [T((2, 3), "INT32"), T((4, 3), "INT32")], [T((2, 3), "INT32")])
        CInterpreter(model_content=bad).allocate_tensors()
    huge = div_model((3,), (3,), "INT8", "NONE", (1.0, 0), (1e-4, 0), (1e-4, 0))  # sa / (sb * so) = 1e8
    with pytest.raises(UnsupportedOpError, match="scale ratio"):
        CInterpreter(model_content=huge).allocate_tensors()
