"""EMBEDDING_LOOKUP_SPARSE, as LiteRT's reference embedding_lookup_sparse.cc (float32; TFLM has no such op).

Inputs: ids INT32 (N,), indices INT32 (N, rank) (the sparse positions of the ids, sorted as a SparseTensor is),
dense_shape INT32 (rank,) (constant here: it fixes the output shape), weights FLOAT32 (N,), params FLOAT32
(rows, ...). Output: dense_shape[:-1] + params.shape[1:]. Each id adds params[id] * weight to the output bucket
its index names (the index without its last coordinate); a bucket is finalized when the next id names another one
(LiteRT walks the ids in order): MEAN divides it by the sum of its weights, SQRTN by the root of the sum of their
squares, SUM leaves it. An id outside [0, rows) fails the invoke with a DataError naming the node and the id (as
LiteRT's does; the C kernel too), and so does an index row whose bucket lies outside the output (row-major over
dense_shape[:-1]): the error names the row's first coordinate outside its dimension (there is one). LiteRT's
current embedding_lookup_sparse.cc fails on any coordinate outside its dimension; the ai-edge-litert 2.3.0 wheel
takes a row whose flat bucket is inside the output (tests/test_ops_recurrent.py has one) and drops an id whose
bucket is not. We run the former and fail the latter; the last coordinate is not read.
"""

from __future__ import annotations

import numpy as np

from edge_sdk.errors import DataError
from edge_sdk.runtime.kernels.movement import position_out_of_range
from edge_sdk.runtime.kernels.node import Eval, Node

_F32 = np.float32


def prepare_embedding_lookup_sparse(node: Node) -> Eval:
    node.expect_counts(5, 1)
    ids, indices, _shape, weights, params = (node.input(i) for i in range(5))
    out = node.outputs[0]
    node.expect_types(ids, ("INT32",), "ids")
    node.expect_types(indices, ("INT32",), "indices")
    node.expect_types(weights, ("FLOAT32",), "weights")
    node.expect_types(params, ("FLOAT32",), "params")
    node.expect_types(out, ("FLOAT32",), "output")
    dense = node.constant_values(2, "dense_shape", ("INT32",)).astype(np.int64)
    node.expect(len(ids.shape) == 1, f"ids must be 1-D, has shape {ids.shape}")
    n = ids.shape[0]
    rank = dense.size
    node.expect(rank >= 1, "dense_shape must hold at least one dimension")
    node.expect(tuple(indices.shape) == (n, rank), f"indices {indices.shape} must be ({n}, {rank})")
    node.expect(tuple(weights.shape) == (n,), f"weights {weights.shape} must be ({n},)")
    node.expect(len(params.shape) >= 2, f"params must be at least 2-D, has shape {params.shape}")
    node.expect(bool((dense >= 0).all()), f"dense_shape {dense.tolist()} has a negative dimension")
    node.set_output_shape(0, tuple(int(d) for d in dense[:-1]) + tuple(params.shape[1:]))
    rows = params.shape[0]
    width = int(np.prod(params.shape[1:], dtype=np.int64))
    buckets = int(np.prod(dense[:-1], dtype=np.int64))
    # bucket of an index row: its coordinates but the last, row-major over dense_shape[:-1]
    strides = np.ones(rank - 1, np.int64)
    for k in range(rank - 3, -1, -1):
        strides[k] = strides[k + 1] * dense[k + 1]
    combiner = node.options.get("combiner", "SUM")
    if combiner not in ("SUM", "MEAN", "SQRTN"):
        raise node.unsupported(f"combiner {combiner}")

    def finalize(row, count, total, squares):
        if combiner == "SUM" or count == 0:
            return
        row /= total if combiner == "MEAN" else np.sqrt(squares, dtype=np.float32)

    where = node.where()

    def run(inputs, outputs):
        error = position_out_of_range(where, "ids", inputs[0], rows)  # LiteRT fails the invoke; so do we
        if error:
            raise error
        coords = inputs[1].astype(np.int64)  # (N, rank): the bucket is named by the first rank - 1
        bucket_of = coords[:, :-1] @ strides
        outside = np.flatnonzero((bucket_of < 0) | (bucket_of >= buckets))
        if outside.size:
            i = int(outside[0])
            k = int(np.flatnonzero((coords[i, :-1] < 0) | (coords[i, :-1] >= dense[:-1]))[0])
            element = i * rank + k  # flat in the indices tensor, as the C record counts it
            raise DataError(f"{where}: indices element {element} is {int(coords[i, k])}, outside [0, {int(dense[k])}) "
                            f"(row {i} names bucket {int(bucket_of[i])} of {buckets}; a run-time input)")
        y = outputs[0].reshape(buckets, width)
        y[...] = 0
        table = inputs[4].reshape(rows, width)
        current, count, total, squares = 0, 0, _F32(0), _F32(0)
        for i in range(n):
            idx, bucket, w = int(inputs[0][i]), int(bucket_of[i]), _F32(inputs[3][i])
            if bucket != current:
                finalize(y[current], count, total, squares)
                current, count, total, squares = bucket, 0, _F32(0), _F32(0)
            count += 1
            squares = _F32(squares + w * w)
            total = _F32(total + w)
            y[bucket] += table[idx] * w
        if count:  # no ids: no bucket (the output may have none)
            finalize(y[current], count, total, squares)

    return run
