"""Fixed-point pieces of TFLite Micro's integer LSTM: the int16 sigmoid and tanh of the gates and cell state.

TFLM's integer LSTM keeps gate pre-activations in Q3.12 (scale 2**-12) and gate outputs in Q0.15
(scale 2**-15). Its int16 logistic and tanh (reference integer_ops) share one 256-entry table of sigmoid
sampled every 1/24, in unsigned 0.16 format, and interpolate linearly between entries; tanh uses
tanh(x) = 2 * sigmoid(2x) - 1 through a finer input step. Both take a (multiplier, left shift) pair: a zero
multiplier means "power-of-two input scale", handled as multiplier 3 << shift (the 3/4 scaling that widens
the table's [-8, 8] reach to about [-10.7, 10.7]).

Everything here is vectorized over numpy int64 arrays and mirrors the C integer steps (unsigned
intermediates are non-negative by construction, so int64 holds them exactly).
"""

from __future__ import annotations

import functools

import numpy as np

# The sigmoid(i / 24) table in unsigned 0.16 (TFLite's common.h data); fixedpoint.py holds the one copy.
from edge_sdk.kernels.fixedpoint import SIGMOID_TABLE_UINT16
from edge_sdk.kernels.quant import tflite_round

# Index pairs (entry, next entry) for interpolation; the last entry is only reached through saturation.
_TABLE_NEXT = np.append(SIGMOID_TABLE_UINT16[1:], SIGMOID_TABLE_UINT16[-1])


def _scale_input(x: np.ndarray, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    if input_multiplier == 0:  # power-of-two input scale
        input_multiplier, input_left_shift = 3 << input_left_shift, 0
    rounding = (1 << (input_left_shift - 1)) if input_left_shift > 0 else 0
    return (np.asarray(x, dtype=np.int64) * input_multiplier + rounding) >> input_left_shift


def logistic_int16(x, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """reference_integer_ops::Logistic on int16 data (output Q0.15); returns int64 values in int16 range."""
    v = _scale_input(x, input_multiplier, input_left_shift)
    a = np.abs(v)
    hi = a >> 9
    idx = np.minimum(hi, 254)
    lo_val = SIGMOID_TABLE_UINT16[idx]
    interp = (lo_val << 9) + (a & 0x1FF) * (_TABLE_NEXT[idx] - lo_val)
    r = np.where(hi >= 255, 0x7FFF << 10, interp)
    r = np.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1) >> 10
    return ((r + 32768) & 0xFFFF) - 32768  # the C code stores the uint32 into an int16


def tanh_int16(x, input_multiplier: int = 0, input_left_shift: int = 0) -> np.ndarray:
    """reference_integer_ops::Tanh on int16 data (output Q0.15); returns int64 values in int16 range."""
    v = _scale_input(x, input_multiplier, input_left_shift)
    a = np.abs(v)
    hi = a >> 8
    idx = np.minimum(hi, 254)
    lo_val = SIGMOID_TABLE_UINT16[idx]
    interp = (lo_val << 8) + (a & 0xFF) * (_TABLE_NEXT[idx] - lo_val)
    r = np.where(hi >= 255, 0xFFFF << 8, interp)
    r = np.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1) >> 8
    return ((r + 32768) & 0xFFFF) - 32768


def tanh_params_for_power(scale_power: int) -> tuple[int, int]:
    """TFLM lstm_internal::Tanh: (input_multiplier, input_left_shift) for an int16 input of scale 2**power."""
    shift = 15 + scale_power - 3
    if shift < 0:
        return 3, -shift
    return 0, shift


def checked_log2(x: float) -> int:
    """TFLite CheckedLog2's integer result: round(log2(x)) computed in float32, halves away from zero."""
    v = np.float32(np.log(np.float32(x))) * (np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    v = np.float32(v)
    return int(tflite_round(v))


# ---- whole-domain tables: the exact functions above evaluated once on every input they can see ----

SAT_DOMAIN = 1 << 16  # tables indexed by u + SAT_DOMAIN cover the unsaturated sum of two int16 values


def saturated_domain() -> np.ndarray:
    """Every u in [-65536, 65535] saturated to int16: the argument the kernels apply their function to."""
    return np.clip(np.arange(-SAT_DOMAIN, SAT_DOMAIN, dtype=np.int64), -32768, 32767)


@functools.lru_cache(maxsize=2)
def gate_tables(cell_gate: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(cell gate table, sigmoid table, smallest sigmoid output) over the saturated domain (Q3.12 in, Q0.15 out).

    Shared between kernels (read-only).
    """
    u = saturated_domain()
    sig = logistic_int16(u)
    cg = tanh_int16(u) if cell_gate == "TANH" else sig.copy()
    sig.flags.writeable = False
    cg.flags.writeable = False
    return cg, sig, int(sig.min())
