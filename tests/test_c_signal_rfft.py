"""SignalRfft on the runtime grid (the Python interpreter and the C runtime): kissfft's 16-bit fixed-point real
FFT, bit-exact with TFLM and, on the C runtime, with our Python kernel (edge_sdk/runtime/kernels/signal.py
prepare_rfft).

One-op models with FlexBuffers custom options (T, fft_length) over several lengths (radix 4, 2, 3
and 5 stages), seeded full-range int16 frames, the all -32768 corner and
short zero-padded frames. Bad fft_length values are refused at load with a reason naming the problem.
"""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import UnsupportedOpError
from tests.oprunner import T, op_model, refusal_on
from tests.test_c_signal import check, opts, refusal

INT16, INT32, FLOAT32 = 7, 2, 0


def rfft_model(shape, fft_length, t=INT16, in_type="INT16", out_type="INT16"):
    out_shape = tuple(shape[:-1]) + (max(fft_length + 2, 1),)
    return op_model("SignalRfft", [T(tuple(shape), in_type)], [T(out_shape, out_type)],
                    custom_options=opts(T=t, fft_length=fft_length))


def frames(rng, shape):
    x = rng.integers(-32768, 32768, shape).astype(np.int16)
    x.reshape(-1, shape[-1])[0] = -32768  # the all -32768 frame: every stage wraps at its corners
    x.reshape(-1, shape[-1])[1, ::2] = 32767
    return x


@pytest.mark.parametrize("n", [4, 8, 16, 64, 128, 256, 512])
def test_rfft_power_of_two(rng, n, runtime):
    x = frames(rng, (3, n))
    y = check(runtime, rfft_model((3, n), n), [x])[0]
    assert y.shape == (3, n + 2) and y.any()
    # the all-minimum frame: a DC bin only (kissfft's per-stage scaling: -32768 * n / n)
    assert y[0, 0] != 0 and not y[0, 2:].any()


@pytest.mark.parametrize("length", [1, 400, 511])
def test_rfft_zero_padded_frames(rng, length, runtime):
    x = frames(rng, (2, length)) if length > 1 else rng.integers(-32768, 32768, (2, 1)).astype(np.int16)
    check(runtime, rfft_model((2, length), 512), [x])


def test_rfft_mixed_radix(rng, runtime):
    # half lengths 12 (4 * 3), 20 (4 * 5), 30 (2 * 3 * 5), 45 (3 * 3 * 5): radix 3 and 5 butterflies
    for n in (24, 40, 60, 90):
        check(runtime, rfft_model((4, n), n), [frames(rng, (4, n))])


def test_rfft_audio_preprocessor_frame(rng, runtime):
    # the shape audio_preprocessor_int8.tflite feeds it: one windowed 480-sample frame, fft_length 512
    x = (rng.normal(0, 3000, 480)).clip(-32768, 32767).astype(np.int16)
    check(runtime, rfft_model((480,), 512), [x])


def test_rfft_bad_options_are_refused(runtime):
    # the runtimes word two of these differently (the Python kernel names the values)
    even = {"c": "fft_length must be even and at least 4", "python": "must be even and at least 4"}[runtime]
    assert even in refusal(runtime, rfft_model((2,), 2))
    assert even in refusal(runtime, rfft_model((8,), 33))
    assert even in refusal(runtime, rfft_model((8,), -8))
    assert "prime factor above 5" in refusal_any(runtime, rfft_model((8,), 14))
    assert "prime factor above 5" in refusal_any(runtime, rfft_model((8,), 2 * 11 * 16))
    frame = {"c": "frame length", "python": "input length 20 must be in 1..fft_length (16)"}[runtime]
    assert frame in refusal(runtime, rfft_model((20,), 16))
    assert "'fft_length' is missing" in refusal(runtime, op_model("SignalRfft", [T((8,), "INT16")],
                                                                  [T((10,), "INT16")], custom_options=opts(T=INT16)))
    assert "'T' is missing" in refusal(runtime, op_model("SignalRfft", [T((8,), "INT16")], [T((10,), "INT16")],
                                                         custom_options=opts(fft_length=8)))
    assert "not a type the FFT takes" in refusal(runtime, rfft_model((8,), 8, t=9, in_type="INT8"))
    assert "only the int16" in refusal_any(runtime, rfft_model((8,), 8, t=INT32, in_type="INT32", out_type="INT32"))


def refusal_any(runtime: str, model: bytes) -> str:
    """The reason of a refusal, a model error or an unsupported op; on the C runtime of the kind the Python
    interpreter's refusal is (the two agree on the kind)."""
    from edge_sdk.errors import ModelError

    refused = refusal_on(runtime, model, (ModelError, UnsupportedOpError))
    if runtime == "c":
        python = refusal_on("python", model, (ModelError, UnsupportedOpError))
        assert isinstance(refused, UnsupportedOpError) == isinstance(python, UnsupportedOpError), (refused, python)
    return str(refused)
