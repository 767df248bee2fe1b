"""Lookup tables over every value of an 8- or 16-bit type: prepare evaluates a kernel's exact integer formula once
per input value (or once per pair of int8 values), eval is one gather.

Entry i of a table holds the result for the input whose bit pattern is i, so eval indexes the table with the
input's unsigned view (``x.view(np.uint8)``, ``np.uint16``); ``DOMAINS`` lists every value of a type in that
order (int8: 0..127, then -128..-1), as int64 for the formula.
"""

from __future__ import annotations

import numpy as np


def _domain(unsigned, signed) -> np.ndarray:
    values = np.arange(np.iinfo(unsigned).max + 1, dtype=unsigned).view(signed).astype(np.int64)
    values.setflags(write=False)  # shared by every table: formulas must not write into their input
    return values


# type name -> (every value, int64, at the index of its unsigned view; the index view dtype; the table dtype)
DOMAINS = {
    "INT8": (_domain(np.uint8, np.int8), np.uint8, np.int8),
    "UINT8": (_domain(np.uint8, np.uint8), np.uint8, np.uint8),
    "INT16": (_domain(np.uint16, np.int16), np.uint16, np.int16),
}
INT8_VALUES = DOMAINS["INT8"][0]


def table_run(type_name: str, f):
    """Eval of a unary op: f (int64 array -> int64 array, already clamped) tabulated over every input of the type."""
    domain, index_dtype, out_dtype = DOMAINS[type_name]
    table = f(domain).astype(out_dtype)

    def run(inputs, outputs):
        outputs[0][...] = table[inputs[0].view(index_dtype)]
    return run


def int8_pair_table_run(f):
    """Eval of a binary int8 op: f(x1, x2) (int64, already clamped) tabulated over all 65536 pairs; the first
    input's byte selects the row, the second's the column."""
    table = f(INT8_VALUES[:, None], INT8_VALUES[None, :]).astype(np.int8).ravel()

    def run(inputs, outputs):
        a = inputs[0].view(np.uint8).astype(np.intp)
        outputs[0][...] = table[(a << 8) | inputs[1].view(np.uint8)]
    return run
