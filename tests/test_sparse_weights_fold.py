"""Pruned weights stored sparse (MediaPipe's *_sparse detectors: a sparse constant -> DENSIFY [-> DEQUANTIZE when
float16] -> CONV_2D / FULLY_CONNECTED) are constants folded at prepare (planner.folded_constants): the DENSIFY
output reads the kernel's dense bytes in place on every build, and a host folds the DEQUANTIZE after it, so the
consumers see a constant filter and the hosts pack it once. Unfolded, the C runtime copied the dense weights into
the arena every invoke and ran those convolutions unpacked: 4.5-6.9x XNNPACK on a sparse MobileNetV2 (zoo
sparse16w), ~0.9x after, as the dense model. Held here: outputs against LiteRT's reference kernels in both
runtimes, the tensor plan equal to the dense twin's (host and microcontroller plans), the filter packed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from edge_sdk.model import read_model
from edge_sdk.runtime import planner
from edge_sdk.runtime.interpreter import Interpreter
from tests.conftest import needs_c_runtime
from tests.oprunner import T, op_model
from tests.peers import run_litert

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import zoo  # noqa: E402

pytest.importorskip("ai_edge_litert")


def dense_model() -> bytes:
    """A float 1x1 CONV_2D 32 -> 64 on 8x8 (a 2,048-weight filter: sparse_weights_model prunes it) then LOGISTIC."""
    rng = np.random.default_rng(5)
    w = T((64, 1, 1, 32), "FLOAT32", data=rng.standard_normal((64, 1, 1, 32)).astype(np.float32))
    b = T((64,), "FLOAT32", data=rng.uniform(-0.1, 0.1, 64).astype(np.float32))
    return op_model("CONV_2D", [T((1, 8, 8, 32), "FLOAT32"), w, b], [T((1, 8, 8, 64), "FLOAT32")],
                    options={"padding": "SAME", "stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                             "dilation_w_factor": 1})


VARIANTS = {"float32": ("FLOAT32", lambda d: d), "float16": ("FLOAT16", zoo.fp16_weights_model)}


def _sparse(values: str) -> bytes:
    data = zoo.sparse_weights_model(dense_model(), value_type=VARIANTS[values][0])
    names = [read_model(data).op_name(op) for op in read_model(data).subgraphs[0].operators]
    assert names == (["DENSIFY", "CONV_2D"] if values == "float32" else ["DENSIFY", "DEQUANTIZE", "CONV_2D"])
    return data


def _x() -> np.ndarray:
    return np.random.default_rng(6).uniform(-1, 1, (1, 8, 8, 32)).astype(np.float32)


def _run(it, x):
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


@pytest.mark.parametrize("values", sorted(VARIANTS))
def test_plans_leave_the_densified_weights_out(values):
    """Host plan (fold=True): the input and the output alone, as the dense model's. Microcontroller plan
    (fold=False): the DENSIFY output still out; a float16 filter's DEQUANTIZE output kept (a microcontroller widens
    float16 weights per invoke into its arena, as it does a dense fp16w model's)."""
    sparse, dense = read_model(_sparse(values)), read_model(dense_model())
    io = {b.name for b in planner.static_plan(dense, fold=True).buffers}
    assert {b.name for b in planner.static_plan(sparse, fold=True).buffers} == io
    kept = {b.name for b in planner.static_plan(sparse, fold=False).buffers} - io
    assert kept == (set() if values == "float32" else {n for n in kept if n.endswith("_dequantized")}) and \
        len(kept) == (values == "float16")
    folded = planner.folded_constants(sparse, planner.declared_infos(sparse), host=False)
    assert [sparse.subgraphs[0].tensors[t].name for (_, t), _ in folded] == \
        [t.name for t in sparse.subgraphs[0].tensors if t.name.endswith("_dense")]


@pytest.mark.parametrize("values", sorted(VARIANTS))
def test_python_interpreter_matches_litert(values):
    data, x = _sparse(values), _x()
    want = run_litert(data, [x])[0]
    got = _run(Interpreter(model_content=data), x)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(want.max() - want.min()))


@needs_c_runtime
@pytest.mark.parametrize("values", sorted(VARIANTS))
def test_c_runtime_folds_packs_and_matches_litert(backend, values):
    data, x = _sparse(values), _x()
    want = run_litert(data, [x])[0]
    c = backend.CInterpreter(model_content=data)
    got = _run(c, x)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(want.max() - want.min()))
    py = Interpreter(model_content=data)
    py.allocate_tensors()
    info = c.plan_info()
    assert info["tensor_total"] == py.arena_size  # the same tensor plan: input and output only
    assert info["tensor_total"] <= 4 * 8 * 8 * (32 + 64) + 2 * 64
    # the dense float32 filter (64 x 32) lives outside the arena figure: folded bytes, packed copies
    assert c.packed_weights_bytes >= 4 * 64 * 32
    assert c.arena_size < 4 * 8 * 8 * (32 + 64) + 4096


# ------------------------------------------------------------------ FULLY_CONNECTED reading sparse weights itself
# LiteRT's FULLY_CONNECTED takes a sparse constant filter directly (no DENSIFY: a pruned model's CSR or 1x4 / 1x16
# block-sparse weights); both runtimes expand it once at prepare (conv._dense_weights, edge_densify_weights) and
# run the dense paths. Before: the Python kernel failed at eval on the stored values' shape, the C runtime refused.

def _sparse_fc(dtype: str, block: int, malformed: bool = False) -> tuple[bytes, np.ndarray]:
    from edge_sdk.model.types import DimensionMetadata, Sparsity
    from edge_sdk.model.writer import write_model
    from tests.oprunner import op_model_object

    rng = np.random.default_rng(9)
    units, depth = 16, 64
    keep = rng.uniform(size=(units, depth // block)) < 0.3
    if dtype == "float32":
        dense = rng.standard_normal((units, depth)).astype(np.float32)
    else:
        dense = rng.integers(-127, 128, (units, depth)).astype(np.int8)
    dense = (dense.reshape(units, depth // block, block) * keep[:, :, None]).reshape(units, depth).astype(dense.dtype)
    segments, indices, values = [0], [], []
    for r in range(units):
        for c in np.nonzero(keep[r])[0]:
            indices.append(c)
            values.append(dense[r, c * block:(c + 1) * block])
        segments.append(len(indices))
    if malformed:
        indices[0] = depth  # a block column outside the dense shape
    dims = [DimensionMetadata("DENSE", units),
            DimensionMetadata("SPARSE_CSR", 0, np.array(segments, np.int32), np.array(indices, np.int32))]
    sparsity = Sparsity([0, 1], [], dims) if block == 1 else \
        Sparsity([0, 1, 2], [1], dims + [DimensionMetadata("DENSE", block)])
    vals = np.concatenate(values).astype(dense.dtype)
    if dtype == "float32":
        ins = [T((1, depth), "FLOAT32"), T((vals.size,), "FLOAT32", data=vals), None]
        outs = [T((1, units), "FLOAT32")]
    else:
        ins = [T((1, depth), "INT8", 0.05, 3), T((vals.size,), "INT8", 0.01, 0, data=vals), None]
        outs = [T((1, units), "INT8", 0.4, -2)]
    model = op_model_object("FULLY_CONNECTED", ins, outs)
    model.subgraphs[0].tensors[1].shape = (units, depth)
    model.subgraphs[0].tensors[1].sparsity = sparsity
    x = np.random.default_rng(10).standard_normal((1, depth)).astype(np.float32)
    if dtype == "int8":
        x = np.random.default_rng(10).integers(-128, 128, (1, depth)).astype(np.int8)
    return write_model(model), x


FC_CASES = [("float32", 1), ("float32", 4), ("int8", 16)]


@pytest.mark.parametrize("dtype,block", FC_CASES)
def test_fully_connected_with_sparse_weights_python(dtype, block):
    data, x = _sparse_fc(dtype, block)
    want = run_litert(data, [x])[0]
    got = _run(Interpreter(model_content=data), x)
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(want.max() - want.min()))
    else:
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


@needs_c_runtime
@pytest.mark.parametrize("dtype,block", FC_CASES)
def test_fully_connected_with_sparse_weights_c(backend, dtype, block):
    data, x = _sparse_fc(dtype, block)
    want = run_litert(data, [x])[0]
    got = _run(backend.CInterpreter(model_content=data), x)
    py = _run(Interpreter(model_content=data), x)
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(want.max() - want.min()))
    else:
        np.testing.assert_array_equal(got, py)  # the integer paths agree to the bit
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


@needs_c_runtime
def test_malformed_sparse_weights_refused_in_one_line(backend):
    from edge_sdk.errors import EdgeError

    data, x = _sparse_fc("float32", 4, malformed=True)
    for make in (lambda: Interpreter(model_content=data), lambda: backend.CInterpreter(model_content=data)):
        with pytest.raises(EdgeError) as e:
            make().allocate_tensors()
        text = str(e.value)
        assert "\n" not in text and "FULLY_CONNECTED" in text and "sparse" in text.lower(), text
