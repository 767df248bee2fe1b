"""A run-time position outside the dimension it indexes (GATHER, GATHER_ND, EMBEDDING_LOOKUP,
EMBEDDING_LOOKUP_SPARSE, SCATTER_ND): LiteRT fails the invoke, and so do both our runtimes, with a DataError naming
the node and the bad entry. The C kernels stop the invoke from eval (EDGE_EVAL_BAD_INPUT: status EDGE_BAD_INPUT,
the record naming node, tensor, element and value) before reading out of bounds; an invoke with positions in range
afterwards runs as before."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oprunner import T, fails_then_runs_as_litert, op_model, run_peer


def _gather():
    model = op_model("GATHER", [T((2, 4, 3), "INT8", 0.1, 0), T((2, 2), "INT64")], [T((2, 2, 3), "INT8", 0.1, 0)],
                     options={"axis": 1, "batch_dims": 1})
    x = np.arange(24, dtype=np.int8).reshape(2, 4, 3)
    good = np.array([[3, 0], [1, 2]], np.int64)
    bad = np.array([[3, 0], [1, 4]], np.int64)  # element 3 is 4: outside [0, 4)
    return model, (lambda p: [x, p]), good, bad, "GATHER", "element 3 is 4"


def _gather_nd():
    model = op_model("GATHER_ND", [T((3, 2, 2), "FLOAT32"), T((2, 2), "INT16")], [T((2, 2), "FLOAT32")])
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    good = np.array([[2, 1], [0, 0]], np.int16)
    bad = np.array([[2, 1], [3, 0]], np.int16)  # element 2 (vector 1) is 3: outside [0, 3)
    return model, (lambda p: [x, p]), good, bad, "GATHER_ND", "element 2 is 3"


def _embedding_lookup():
    table = np.arange(10, dtype=np.float32).reshape(5, 2)
    model = op_model("EMBEDDING_LOOKUP", [T((3,), "INT32"), T((5, 2), "FLOAT32", data=table)],
                     [T((3, 2), "FLOAT32")])
    good = np.array([4, 0, 2], np.int32)
    bad = np.array([4, -1, 2], np.int32)  # element 1 is -1
    return model, (lambda p: [p]), good, bad, "EMBEDDING_LOOKUP", "element 1 is -1"


def _embedding_lookup_sparse():
    params = np.arange(12, dtype=np.float32).reshape(4, 3)
    ins = [T((3,), "INT32"), T((3, 2), "INT32"), T((2,), "INT32", data=np.array([2, 2], np.int32)),
           T((3,), "FLOAT32"), T((4, 3), "FLOAT32", data=params)]
    model = op_model("EMBEDDING_LOOKUP_SPARSE", ins, [T((2, 3), "FLOAT32")], {"combiner": "SUM"})
    indices = np.array([[0, 0], [0, 1], [1, 0]], np.int32)
    weights = np.array([1.0, 0.5, 2.0], np.float32)
    good = np.array([3, 0, 1], np.int32)
    bad = np.array([3, 0, 9], np.int32)  # element 2 is 9: outside [0, 4)
    return model, (lambda p: [p, indices, weights]), good, bad, "EMBEDDING_LOOKUP_SPARSE", "element 2 is 9"


def _scatter_nd():
    model = op_model("SCATTER_ND", [T((2, 1), "INT32"), T((2, 3), "FLOAT32"),
                                    T((2,), "INT32", data=np.array([4, 3], np.int32))], [T((4, 3), "FLOAT32")])
    upd = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    good = np.array([[3], [0]], np.int32)
    bad = np.array([[3], [4]], np.int32)  # element 1 is 4: outside [0, 4)
    return model, (lambda p: [p, upd]), good, bad, "SCATTER_ND", "element 1 is 4"


CASES = {"GATHER": _gather, "GATHER_ND": _gather_nd, "EMBEDDING_LOOKUP": _embedding_lookup,
         "EMBEDDING_LOOKUP_SPARSE": _embedding_lookup_sparse, "SCATTER_ND": _scatter_nd}


@pytest.mark.parametrize("op", list(CASES))
def test_position_out_of_range_fails_the_invoke(runtime, op):
    fails_then_runs_as_litert(runtime, CASES[op]())


@pytest.mark.parametrize("op", list(CASES))
def test_litert_fails_the_same_invoke(op):
    """The peer's behaviour this file follows: LiteRT's reference kernels refuse the same positions at invoke."""
    model, inputs, _good, bad, _name, _entry = CASES[op]()
    with pytest.raises(Exception):
        run_peer(model, inputs(bad), "litert", isolate=True)
