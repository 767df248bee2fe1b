"""Run-time values outside what they index, in SPARSE_TO_DENSE, REVERSE_SEQUENCE and EMBEDDING_LOOKUP_SPARSE (issue
23 point 4): both runtimes fail the invoke with one DataError naming the node, the bad element and its value (the
C kernels through EDGE_EVAL_BAD_INPUT, before reading or writing out of bounds), where LiteRT's reference kernels
fail the invoke; in-range values afterwards run as LiteRT does.

- SPARSE_TO_DENSE: an index outside output_shape (LiteRT fails, validate_indices or not).
- REVERSE_SEQUENCE: a seq_length above the sequence dimension (LiteRT fails); a negative one reverses nothing, as
  LiteRT runs it. The 2.3.0 wheel checks only seq_lengths[0] (reverse_sequence.cc:93): a later length above the
  axis runs there and reads past it (denormal garbage in its output), so LiteRT's failure is shown on element 0.
- EMBEDDING_LOOKUP_SPARSE: an index row naming a bucket outside dense_shape (the error names the row's coordinate
  outside its dimension). LiteRT's current embedding_lookup_sparse.cc fails the invoke there; the ai-edge-litert
  2.3.0 wheel in the venv drops such an id (its output shows it): we follow the current source, and
  ``test_wheel_drops_the_bucket`` records the wheel's behaviour so a newer wheel that fails shows up here.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, fails_then_runs_as_litert, op_model, run_peer


def _sparse_to_dense(type_="INT32"):
    np_type = np.int32 if type_ == "INT32" else np.int64
    model = op_model("SPARSE_TO_DENSE", [T((3, 2), type_), T((2,), type_, data=np.array([3, 4], np_type)),
                                         T((3,), "FLOAT32"), T((), "FLOAT32")], [T((3, 4), "FLOAT32")],
                     {"validate_indices": False})
    values, default = np.array([1, 2, 3], np.float32), np.array(-1, np.float32)
    good = np.array([[0, 0], [1, 2], [2, 3]], np_type)
    bad = np.array([[0, 0], [1, 4], [2, 3]], np_type)  # element 3 is 4: outside [0, 4)
    return model, (lambda p: [p, values, default]), good, bad, "SPARSE_TO_DENSE", "element 3 is 4"


def _sparse_to_dense_negative():
    model, inputs, good, _bad, name, _entry = _sparse_to_dense("INT64")
    bad = np.array([[0, 0], [1, 2], [-2, 3]], np.int64)  # element 4 is -2
    return model, inputs, good, bad, name, "element 4 is -2"


def _reverse_sequence(type_="INT32", first=False):
    model = op_model("REVERSE_SEQUENCE", [T((2, 4, 3), "FLOAT32"), T((2,), type_)], [T((2, 4, 3), "FLOAT32")],
                     {"seq_dim": 1, "batch_dim": 0})
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    np_type = np.int32 if type_ == "INT32" else np.int64
    good = np.array([4, -1], np_type)  # a negative length reverses nothing, as LiteRT runs it
    if first:  # the element LiteRT checks
        return model, (lambda p: [x, p]), good, np.array([6, 2], np_type), "REVERSE_SEQUENCE", "element 0 is 6"
    bad = np.array([3, 5], np_type)  # element 1 is 5: above the axis of 4
    return model, (lambda p: [x, p]), good, bad, "REVERSE_SEQUENCE", "element 1 is 5"


def _embedding_lookup_sparse():
    params = np.arange(12, dtype=np.float32).reshape(4, 3)
    ins = [T((3,), "INT32"), T((3, 3), "INT32"), T((3,), "INT32", data=np.array([2, 3, 2], np.int32)),
           T((3,), "FLOAT32"), T((4, 3), "FLOAT32", data=params)]
    model = op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T((2, 3, 3), "FLOAT32")], {"combiner": "MEAN"})
    ids, weights = np.array([3, 0, 1], np.int32), np.array([1.0, 0.5, 2.0], np.float32)
    good = np.array([[0, 0, 0], [0, 2, 1], [1, 1, 0]], np.int32)
    bad = np.array([[0, 0, 0], [1, 3, 1], [1, 1, 0]], np.int32)  # element 4 is 3: bucket 6 of 6
    return model, (lambda p: [ids, p, weights]), good, bad, "EMBEDDING_LOOKUP_SPARSE", "element 4 is 3"


def _embedding_lookup_sparse_negative():
    model, inputs, good, _bad, name, _entry = _embedding_lookup_sparse()
    bad = np.array([[0, 0, 0], [0, 2, 1], [-1, 1, 0]], np.int32)  # element 6 is -1
    return model, inputs, good, bad, name, "element 6 is -1"


CASES = {"SPARSE_TO_DENSE": _sparse_to_dense, "SPARSE_TO_DENSE negative INT64": _sparse_to_dense_negative,
         "REVERSE_SEQUENCE": _reverse_sequence, "REVERSE_SEQUENCE INT64": lambda: _reverse_sequence("INT64"),
         "REVERSE_SEQUENCE first": lambda: _reverse_sequence(first=True),
         "EMBEDDING_LOOKUP_SPARSE": _embedding_lookup_sparse,
         "EMBEDDING_LOOKUP_SPARSE negative": _embedding_lookup_sparse_negative}


@pytest.mark.parametrize("case", list(CASES))
def test_value_out_of_range_fails_the_invoke(runtime, case):
    fails_then_runs_as_litert(runtime, CASES[case]())


@pytest.mark.parametrize("case", ["SPARSE_TO_DENSE", "SPARSE_TO_DENSE negative INT64", "REVERSE_SEQUENCE first"])
def test_litert_fails_the_same_invoke(case):
    """The peer's behaviour followed: LiteRT's reference kernels refuse the same values at invoke."""
    model, inputs, _good, bad, _name, _entry = CASES[case]()
    with pytest.raises(Exception):
        run_peer(model, inputs(bad), "litert", isolate=True)


def test_wheel_drops_the_bucket():
    """The ai-edge-litert 2.3.0 wheel drops an id whose bucket lies outside dense_shape (its output is the in-range
    ids' result); LiteRT's current source fails that invoke, as we do. A wheel that fails it ends this test."""
    model, inputs, good, bad, _name, _entry = _embedding_lookup_sparse()
    (dropped,) = run_peer(model, inputs(bad), "litert", isolate=True)
    (full,) = run_peer(model, inputs(good), "litert", isolate=True)
    assert not dropped[0, 2].any() and full[0, 2].any()  # the bad id's bucket got nothing
    np.testing.assert_array_equal(dropped[[0, 1], [0, 1]], full[[0, 1], [0, 1]])
