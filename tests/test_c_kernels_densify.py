"""The C runtime's DENSIFY (firmware_c/src/kernels/densify.c; sparsity read by edge_tensor_sparsity in edge.c):
CSR and block-sparse constants of FLOAT32, FLOAT16 and INT8, expanded once at prepare; equal to our Python
interpreter and to the dense original (LiteRT's reference kernels for float32 / int8: TFLM cannot DENSIFY);
a sparse float16 weight behind DEQUANTIZE (how MediaPipe ships them); malformed structures refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from edge_sdk.errors import ModelError
from edge_sdk.model import schema
from edge_sdk.model.types import DimensionMetadata, Operator, OperatorCode, Sparsity, Tensor
from edge_sdk.model.writer import write_model
from tests.conftest import needs_c_runtime
from tests.oprunner import T, assert_same, op_model_object, run_c, run_ours

pytestmark = needs_c_runtime

RNG = np.random.default_rng(1602)


def _csr_2d(dense):
    rows = dense.shape[0]
    seg, ind, vals = [0], [], []
    for r in range(rows):
        nz = np.nonzero(dense[r])[0]
        ind += nz.tolist()
        vals += dense[r, nz].tolist()
        seg.append(len(ind))
    sp = Sparsity([0, 1], [], [DimensionMetadata("DENSE", rows),
                               DimensionMetadata("SPARSE_CSR", 0, np.array(seg), np.array(ind))])
    return np.array(vals, dense.dtype), sp


def _block_2d(dense, bh, bw):
    rows, cols = dense.shape
    seg, ind, vals = [0], [], []
    for r in range(rows // bh):
        for c in range(cols // bw):
            blk = dense[r * bh:(r + 1) * bh, c * bw:(c + 1) * bw]
            if blk.any():
                ind.append(c)
                vals += blk.reshape(-1).tolist()
        seg.append(len(ind))
    sp = Sparsity([0, 1, 2, 3], [0, 1], [
        DimensionMetadata("DENSE", rows // bh), DimensionMetadata("SPARSE_CSR", 0, np.array(seg), np.array(ind)),
        DimensionMetadata("DENSE", bh), DimensionMetadata("DENSE", bw)])
    return np.array(vals, dense.dtype), sp


def _sparse_dense(shape, dtype, density=0.3, blocks=None):
    dense = RNG.standard_normal(shape) * 4
    if blocks:
        bh, bw = blocks
        mask = RNG.random((shape[0] // bh, shape[1] // bw)) < density
        dense = dense * np.kron(mask, np.ones(blocks))
    else:
        dense = dense * (RNG.random(shape) < density)
    return dense.astype(dtype)


def _densify_model(vals, sp, shape, type_, declared_flat=True):
    model = op_model_object("DENSIFY", [T((vals.size,), type_, data=vals)], [T(shape, type_)])
    t = model.subgraphs[0].tensors[0]
    if not declared_flat:
        t.shape = tuple(shape)
    t.sparsity = sp
    return write_model(model)


@pytest.mark.parametrize("type_,dtype", [("FLOAT32", np.float32), ("FLOAT16", np.float16), ("INT8", np.int8)])
@pytest.mark.parametrize("layout", ["csr", "blocks"])
@pytest.mark.parametrize("declared_flat", [True, False])
def test_densify_equals_python_and_the_dense_original(type_, dtype, layout, declared_flat):
    shape = (12, 40)
    if layout == "csr":
        dense = _sparse_dense(shape, dtype)
        vals, sp = _csr_2d(dense)
    else:
        dense = _sparse_dense(shape, dtype, 0.4, (4, 4))
        vals, sp = _block_2d(dense, 4, 4)
    model = _densify_model(vals, sp, shape, type_, declared_flat)
    c = run_c(model, [])
    assert_same(c, run_ours(model, []), what="C vs Python")
    np.testing.assert_array_equal(c[0], dense)


@pytest.mark.parametrize("type_,dtype", [("FLOAT32", np.float32), ("INT8", np.int8)])
def test_densify_vs_litert_reference(type_, dtype):
    from tests.peers import run_litert

    dense = _sparse_dense((8, 6), dtype, 0.5, (2, 2))
    vals, sp = _block_2d(dense, 2, 2)
    model = _densify_model(vals, sp, dense.shape, type_, declared_flat=False)
    assert_same(run_c(model, []), run_litert(model, [], isolate=True), what="C vs LiteRT")


def test_sparse_float16_weights_behind_dequantize_and_add():
    # DENSIFY(float16) -> DEQUANTIZE -> ADD(x, w): how MediaPipe's float models store pruned weights.
    dense = _sparse_dense((6, 10), np.float16, 0.25)
    vals, sp = _csr_2d(dense)
    model = op_model_object("DENSIFY", [T((vals.size,), "FLOAT16", data=vals)], [T((6, 10), "FLOAT16")])
    sub = model.subgraphs[0]
    sub.tensors[0].sparsity = sp
    sub.tensors += [Tensor("w", (6, 10), "FLOAT32"), Tensor("x", (6, 10), "FLOAT32"), Tensor("y", (6, 10), "FLOAT32")]
    model.operator_codes += [OperatorCode(schema.BUILTIN_OPERATOR_CODES["DEQUANTIZE"], None, 3),
                             OperatorCode(schema.BUILTIN_OPERATOR_CODES["ADD"], None, 1)]
    sub.operators += [Operator(1, [1], [2]),
                      Operator(2, [3, 2], [4], options_type="AddOptions", options={"fused_activation_function": "NONE"})]
    sub.inputs, sub.outputs = [3], [4]
    blob = write_model(model)
    x = RNG.standard_normal((6, 10)).astype(np.float32)
    c = run_c(blob, [x])
    assert_same(c, run_ours(blob, [x]), what="C vs Python")
    np.testing.assert_array_equal(c[0], x + dense.astype(np.float32))


def test_malformed_sparsity_is_refused_by_name():
    dense = _sparse_dense((4, 6), np.float32, 0.5)
    vals, sp = _csr_2d(dense)
    bad = Sparsity(sp.traversal_order, sp.block_map,
                   [sp.dim_metadata[0], DimensionMetadata("SPARSE_CSR", 0, sp.dim_metadata[1].array_segments,
                                                          sp.dim_metadata[1].array_indices + 6)])
    with pytest.raises(ModelError, match="sparse index outside the dense shape"):
        run_c(_densify_model(vals, bad, (4, 6), "FLOAT32"), [])
    short = vals[: vals.size - 1]
    with pytest.raises(ModelError, match="more values than it stores"):
        run_c(_densify_model(short, sp, (4, 6), "FLOAT32"), [])
    perm = Sparsity([1, 1], [], sp.dim_metadata)
    with pytest.raises(ModelError, match="not a permutation"):
        run_c(_densify_model(vals, perm, (4, 6), "FLOAT32"), [])
