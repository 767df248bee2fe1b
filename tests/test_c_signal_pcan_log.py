"""SignalPCAN and SignalFilterBankLog on the runtime grid (the Python interpreter and the C runtime), bit-exact
with TFLM and, on the C runtime, with our Python kernels.

One-op models with FlexBuffers custom options (flatbuffers' own encoder), seeded inputs spread over every
octave of uint32 plus the extremes (0, 1, 2, 3, 2^32 - 1, powers of two), compared exactly: C == Python ==
TFLM. Malformed options (missing key, wrong type, out-of-range value) are refused at load by C and Python.
"""

from __future__ import annotations

import numpy as np

from tests.oprunner import T, op_model
from tests.test_c_signal import check, opts, refusal


def spread_u32(rng, n) -> np.ndarray:
    """uint32 values with a uniformly drawn bit length (every octave), extremes first."""
    bits = rng.integers(0, 33, n)
    x = np.array([int(rng.integers(0, 1 << b)) if b else 0 for b in bits], np.uint32)
    corners = [0, 1, 2, 3, 4, 7, 8, 1023, 1024, 2047, 2048, 4095, 1 << 20, (1 << 31) - 1, 1 << 31, (1 << 32) - 1]
    x[: len(corners)] = corners
    return x


# --------------------------------------------------------------------------------------------- PCAN
def pcan_model(n, lut, shift, lut_const=True, noise_len=None):
    lut_t = T((len(lut),), "INT16", data=lut) if lut_const else T((len(lut),), "INT16")
    return op_model("SignalPCAN", [T((n,), "UINT32"), T((noise_len or n,), "UINT32"), lut_t], [T((n,), "UINT32")],
                    custom_options=opts(snr_shift=shift))


def test_pcan(rng, runtime):
    n = 64
    x, noise = spread_u32(rng, n), spread_u32(rng, n)
    rng.shuffle(noise)
    lut = rng.integers(-32768, 32768, 125).astype(np.int16)
    lut[:6] = [-32768, 32767, -32768, 32767, 32767, 32767]  # the int32 sum and the int16 result wrap
    outs = set()
    for shift in (0, 6, 12, 31, 40, 63):
        y = check(runtime, pcan_model(n, lut, shift), [x, noise])[0]
        outs.add(bool((y > (1 << 20)).any()))
    assert outs == {True, False}  # both the linear and the squared branch, large and small results


def test_pcan_realistic_lut_and_long_noise(rng, runtime):
    # a smooth gain curve like the audio frontend's (decreasing with the noise estimate), a longer noise vector
    lut = np.clip(np.round(4096 * 2.0 ** (-np.arange(125) / 20.0)), 0, 32767).astype(np.int16)
    x = spread_u32(rng, 40)
    noise = spread_u32(rng, 48)
    check(runtime, pcan_model(40, lut, 18, noise_len=48), [x, noise])


def test_pcan_short_and_variable_lut(rng, runtime):
    x, noise = spread_u32(rng, 32), spread_u32(rng, 32)
    lut = rng.integers(-32768, 32768, 20).astype(np.int16)
    y = check(runtime, pcan_model(32, lut, 10), [x, noise], tflm=False)[0]  # TFLM would read past a 20-entry LUT
    full = rng.integers(-32768, 32768, 130).astype(np.int16)
    check(runtime, pcan_model(32, full, 10, lut_const=False), [x, noise, full], tflm=False)  # TFLM wants a constant LUT
    assert y.any()


def test_pcan_refusals(runtime):
    lut = np.ones(125, np.int16)
    io = ([T((4,), "UINT32"), T((4,), "UINT32"), T((125,), "INT16", data=lut)], [T((4,), "UINT32")])
    assert "'snr_shift'" in refusal(runtime, op_model("SignalPCAN", *io, custom_options=opts(shift=3)))
    assert "'snr_shift'" in refusal(runtime, op_model("SignalPCAN", *io, custom_options=opts(snr_shift="x")))
    assert "snr_shift" in refusal(runtime, op_model("SignalPCAN", *io, custom_options=opts(snr_shift=64)))
    assert "snr_shift" in refusal(runtime, op_model("SignalPCAN", *io, custom_options=opts(snr_shift=-1)))
    assert "malformed FlexBuffer" in refusal(runtime, op_model("SignalPCAN", *io, custom_options=b"\x01\x02\x03"))
    short_noise = ([T((4,), "UINT32"), T((3,), "UINT32"), T((125,), "INT16", data=lut)], [T((4,), "UINT32")])
    assert "noise" in refusal(runtime, op_model("SignalPCAN", *short_noise, custom_options=opts(snr_shift=3)))


# --------------------------------------------------------------------------------------------- log
def log_model(n, bits, scale):
    return op_model("SignalFilterBankLog", [T((n,), "UINT32")], [T((n,), "INT16")],
                    custom_options=opts(input_correction_bits=bits, output_scale=scale))


def test_filter_bank_log(rng, runtime):
    x = spread_u32(rng, 200)
    x[16:48] = np.arange(2, 34)  # small values: every octave below 2^16 is shifted up
    saw_cap = False
    for bits, scale in ((0, 1600), (3, 1600), (0, 1 << 16), (5, 1), (31, 777), (0, -1), (0, (1 << 31) - 1),
                        (0, -(1 << 31)), (12, 40000)):
        y = check(runtime, log_model(200, bits, scale), [x])[0]
        saw_cap |= bool((y == 32767).any())
    assert saw_cap


def test_filter_bank_log_every_segment(runtime):
    # every 16-bit fraction segment of the correction table at two octaves, exhaustively at a low one
    x = np.r_[np.arange(2, 1 << 16), (1 << 20) + (np.arange(1 << 12) << 8)].astype(np.uint32)
    check(runtime, log_model(x.size, 0, 1600), [x])


def test_filter_bank_log_refusals(runtime):
    io = ([T((4,), "UINT32")], [T((4,), "INT16")])
    m = lambda co: op_model("SignalFilterBankLog", *io, custom_options=co)  # noqa: E731
    assert "'output_scale'" in refusal(runtime, m(opts(input_correction_bits=3)))
    assert "'input_correction_bits'" in refusal(runtime, m(opts(output_scale=3)))
    assert "input_correction_bits" in refusal(runtime, m(opts(input_correction_bits=32, output_scale=3)))
    assert "'output_scale'" in refusal(runtime, m(opts(input_correction_bits=1, output_scale=1 << 40)))
    assert "'output_scale'" in refusal(runtime, m(opts(input_correction_bits=1, output_scale=1.5)))
    assert "missing" in refusal(runtime, m(b""))
