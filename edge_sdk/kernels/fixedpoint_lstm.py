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

import numpy as np

# sigmoid(i / 24) * 65536 as TFLite's common.h tabulates it (its rounding differs from round-half-up in a
# few dozen entries, so the values are data, not recomputed).
SIGMOID_TABLE_UINT16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], dtype=np.int64)

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
    return int(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)))
