"""Fixed-point pieces of TFLite Micro's integer LSTM: the int16 sigmoid and tanh of the gates and cell state.

TFLM's integer LSTM keeps gate pre-activations in Q3.12 (scale 2**-12) and gate outputs in Q0.15
(scale 2**-15). It applies the int16 logistic and tanh of reference integer_ops, which live in
``fixedpoint`` (``logistic_int16``, ``tanh_int16``; the LOGISTIC and TANH kernels use them too). This module
adds the LSTM's own parameters and the whole-domain gate tables built from them.
"""

from __future__ import annotations

import functools

import numpy as np

# The int16 sigmoid/tanh and their table live in fixedpoint.py (one copy); imported here for the LSTM kernels.
from edge_sdk.runtime.kernels.fixedpoint import SIGMOID_TABLE_UINT16, logistic_int16, tanh_int16  # noqa: F401
from edge_sdk.runtime.kernels.quant import tflite_round


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
