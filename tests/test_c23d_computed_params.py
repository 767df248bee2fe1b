"""Parameters computed in the model, not stored as constants (issue 23), for REDUCE_WINDOW (window_shape /
strides / dilations), EMBEDDING_LOOKUP_SPARSE (dense_shape), NON_MAX_SUPPRESSION_V4 / V5 (max_output_size, the
thresholds), SEGMENT_SUM (segment_ids) and Mfcc (the sample rate).

* Known at prepare (here: an ADD of two constants, as converters write folded arithmetic): the op rows' ``params``
  fact sends the model through the Python prepare and the bytes the C runtime loads hand the value to the op as a
  constant (``<name>/known``: edge_sdk.runtime.c_loaded), so both runtimes run it (was, C: "... computed at run
  time"). Peer: LiteRT (reference kernels; SEGMENT_SUM: its builtin kernels, the reference resolver lacks it;
  REDUCE_WINDOW: LiteRT refuses a window it cannot read at prepare - "IsConstantTensor(window_dimensions_tensor)"
  - so its peer is the same model with the value stored as a constant).
* Computed from data (an ADD of a model input): both runtimes refuse at prepare in one line naming the node, the
  op and the input (the output's size or the prepared filterbank follows the value); never a guess. NMS's thresholds
  alone size nothing, nor does Mfcc's sample rate: from data, both runtimes read them at eval, as LiteRT does (Mfcc
  builds its filterbank then, zeros out where LiteRT's cannot be built).
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

from edge_sdk.errors import UnsupportedOpError
from edge_sdk.model import read_model, write_model
from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
from edge_sdk.model.types import Buffer, Model, Operator, OperatorCode, Tensor
from edge_sdk.model.writer import option_defaults
from edge_sdk.runtime import op_table
from edge_sdk.runtime.c_loaded import c_bytes, needs_prepare
from tests.oprunner import T, op_model_object, run_on, run_peer
from tests.test_ops_complex_random import RW_OPTIONS
from tests.test_ops_detection_audio import flex


def computed(model: Model, k: int, source: str) -> tuple[Model, np.ndarray]:
    """(a copy of the one-op ``model`` whose constant input ``k`` is computed by an ADD placed before the op - of
    the value and a zero constant ("constants"), or of a new model input and the zero ("data": the input is fed the
    value) - the value)."""
    m = copy.deepcopy(model)
    sg = m.subgraphs[0]
    t = sg.operators[-1].inputs[k]
    tensor = sg.tensors[t]
    value = m.tensor_data(0, t)

    def add_tensor(name: str, data: np.ndarray | None) -> int:
        buffer = 0
        if data is not None:
            m.buffers.append(Buffer(np.ascontiguousarray(data).tobytes()))
            buffer = len(m.buffers) - 1
        sg.tensors.append(Tensor(name=name, shape=tuple(value.shape), type=tensor.type, buffer=buffer))
        return len(sg.tensors) - 1

    zero = add_tensor(f"{tensor.name}_zero", np.zeros_like(value))
    part = add_tensor(f"{tensor.name}_part", value.copy() if source == "constants" else None)
    if source == "data":
        sg.inputs.append(part)
    sg.tensors[t] = dataclasses.replace(tensor, buffer=0)
    m.operator_codes.append(OperatorCode(BUILTIN_OPERATOR_CODES["ADD"], None, 1))
    sg.operators.insert(0, Operator(opcode_index=len(m.operator_codes) - 1, inputs=[part, zero], outputs=[t],
                                    options_type="AddOptions", options=option_defaults("AddOptions")))
    return m, value


def _f32(v) -> T:
    return T((), "FLOAT32", data=np.array(v, np.float32))


def reduce_window(rng, shape=(5, 6), window=(2, 2), strides=(1, 2), type_="FLOAT32"):
    out = tuple((n - w) // s + 1 for n, w, s in zip(shape, window, strides))
    vec = [T((len(shape),), "INT64", data=np.array(v, np.int64)) for v in (window, strides, (1,) * len(shape))]
    x = (rng.standard_normal(shape) * 4).astype(np.float32) if type_ == "FLOAT32" else \
        rng.integers(-20, 20, shape).astype(np.int32)
    model = op_model_object("REDUCE_WINDOW", [T(shape, type_), T((), type_), *vec], [T(out, type_)],
                            {"reduce_function": "ADD"}, options_type=RW_OPTIONS)
    return model, (2, 3, 4), [x, np.array(0, x.dtype)]


def nms(rng, n=8, max_output=5, soft=False):
    centre, size = rng.uniform(0, 10, (n, 2)), rng.uniform(0.5, 3, (n, 2))
    boxes = np.concatenate([centre - size / 2, centre + size / 2], 1).astype(np.float32)
    scores = rng.random(n).astype(np.float32)
    ins = [T((n, 4), "FLOAT32"), T((n,), "FLOAT32"), T((), "INT32", data=np.array(max_output, np.int32)), _f32(0.3),
           _f32(0.1)]
    outs = [T((max_output,), "INT32"), T((), "INT32")]
    if soft:
        ins, outs = ins + [_f32(0.5)], [outs[0], T((max_output,), "FLOAT32"), outs[1]]
    model = op_model_object("NON_MAX_SUPPRESSION_V5" if soft else "NON_MAX_SUPPRESSION_V4", ins, outs)
    return model, (2, 3, 4, 5) if soft else (2, 3, 4), [boxes, scores]


def segment_sum(rng, ids=(0, 0, 1, 2), width=2):
    ids = np.array(ids, np.int32)
    x = rng.standard_normal((ids.size, width)).astype(np.float32)
    model = op_model_object("SEGMENT_SUM", [T(x.shape, "FLOAT32"), T(ids.shape, "INT32", data=ids)],
                            [T((int(ids[-1]) + 1, width), "FLOAT32")])
    return model, (1,), [x]


def mfcc(rng, frames=4, bins=129, rate=16000):
    options = flex(dict(upper_frequency_limit=4000, lower_frequency_limit=20, filterbank_channel_count=40,
                        dct_coefficient_count=13))
    model = op_model_object("Mfcc", [T((1, frames, bins), "FLOAT32"), T((1,), "INT32", data=np.array([rate], np.int32))],
                            [T((1, frames, 13), "FLOAT32")], custom_options=options)
    return model, (1,), [(rng.random((1, frames, bins)) ** 3 * 50).astype(np.float32)]


def embedding_lookup_sparse(rng):
    ids = np.array([0, 5, 2, 2, 4, 1], np.int32)
    indices = np.array([[0, 0, 0], [0, 0, 2], [0, 2, 1], [1, 1, 0], [1, 1, 3], [2, 1, 1]], np.int32)
    weights = np.array([0.5, 2.0, -1.5, 1.0, 0.25, 3.0], np.float32)
    params = rng.standard_normal((6, 2, 3)).astype(np.float32)
    model = op_model_object("EMBEDDING_LOOKUP_SPARSE", [
        T((6,), "INT32"), T((6, 3), "INT32"), T((3,), "INT32", data=np.array([3, 2, 4], np.int32)),
        T((6,), "FLOAT32"), T((6, 2, 3), "FLOAT32", data=params)], [T((3, 2, 2, 3), "FLOAT32")], {"combiner": "SUM"})
    return model, (2,), [ids, indices, weights]


# case: (builder, its keyword arguments, the peer of the computed model: "litert", "litert_opt", or "folded" -
# LiteRT's reference kernels on the model as built, the value a constant)
CASES = {
    "REDUCE_WINDOW-float": (reduce_window, {}, "folded"),
    "REDUCE_WINDOW-int32-3d": (reduce_window, dict(shape=(3, 7, 4), window=(1, 3, 2), strides=(2, 2, 1),
                                                   type_="INT32"), "folded"),
    "NON_MAX_SUPPRESSION_V4": (nms, {}, "litert"),
    "NON_MAX_SUPPRESSION_V4-30": (nms, dict(n=30, max_output=12), "litert"),
    "NON_MAX_SUPPRESSION_V5": (nms, dict(soft=True), "litert"),
    "NON_MAX_SUPPRESSION_V5-30": (nms, dict(n=30, max_output=12, soft=True), "litert"),
    "SEGMENT_SUM": (segment_sum, {}, "litert_opt"),
    "SEGMENT_SUM-5": (segment_sum, dict(ids=(0, 1, 1, 1, 2, 3, 3), width=5), "litert_opt"),
    "EMBEDDING_LOOKUP_SPARSE": (embedding_lookup_sparse, {}, "litert"),
    "Mfcc": (mfcc, {}, "litert"),
    "Mfcc-8k": (mfcc, dict(frames=3, bins=65, rate=8000), "litert"),
}


def _case(name: str, seed: int = 3):
    build, kwargs, peer = CASES[name]
    model, params, feeds = build(np.random.default_rng(seed), **kwargs)
    return model, params, feeds, peer


@pytest.mark.parametrize("name", list(CASES))
def test_a_parameter_known_at_prepare_runs_on_both_runtimes_as_litert(runtime, name):
    model, params, feeds, peer = _case(name)
    built = model
    for k in params:
        built, _ = computed(built, k, "constants")
    data = write_model(built)
    got = run_on(runtime, data, feeds)
    want = run_peer(write_model(model) if peer == "folded" else data, feeds,
                    "litert" if peer == "folded" else peer, isolate=True)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        if g.dtype.kind == "f":
            span = float(np.ptp(w)) if w.size else 1.0
            assert np.abs(g.astype(np.float64) - w).max(initial=0) <= 1e-4 * max(span, 1.0), (g, w)
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", ["REDUCE_WINDOW-float", "NON_MAX_SUPPRESSION_V5", "SEGMENT_SUM",
                                  "EMBEDDING_LOOKUP_SPARSE"])
def test_the_c_runtimes_bytes_hand_every_computed_parameter_as_a_constant(name):
    """The row's ``params`` name the inputs the C kernel reads at prepare: a model computing one from constants goes
    through the Python prepare (needs_prepare) and its reader reads ``<name>/known``, holding the value."""
    model, params, _, _ = _case(name)
    op = model.op_name(model.subgraphs[0].operators[0])
    params = [k for k in params if k in op_table.row(op).params]  # NMS: max_output_size (its thresholds: at eval)
    assert params
    built, values = model, {}
    for k in params:
        built, values[k] = computed(built, k, "constants")
    assert needs_prepare(built)
    loaded = read_model(c_bytes(built)[0])
    sg = loaded.subgraphs[0]
    reader = sg.operators[-1]
    for k, value in values.items():
        assert sg.tensors[reader.inputs[k]].name.endswith("/known")
        np.testing.assert_array_equal(loaded.tensor_data(0, reader.inputs[k]).reshape(value.shape), value)


# case -> (input, what the refusals call it): the first parameter, computed from data
FROM_DATA = {"REDUCE_WINDOW-float": (2, "window_shape"), "NON_MAX_SUPPRESSION_V4": (2, "max_output_size"),
             "NON_MAX_SUPPRESSION_V5": (2, "max_output_size"), "SEGMENT_SUM": (1, "segment_ids"),
             "EMBEDDING_LOOKUP_SPARSE": (2, "dense_shape")}


@pytest.mark.parametrize("name", list(FROM_DATA))
def test_a_parameter_computed_from_data_is_refused_in_one_line_naming_node_op_and_input(runtime, name):
    from edge_sdk import Interpreter

    model, _, _, _ = _case(name)
    k, what = FROM_DATA[name]
    op = model.op_name(model.subgraphs[0].operators[0])
    built, _ = computed(model, k, "data")
    interp = Interpreter(model_content=write_model(built), backend=runtime)
    with pytest.raises(UnsupportedOpError) as err:
        interp.allocate_tensors()
    text = str(err.value)
    assert "\n" not in text and f"node 1 ({op} " in text and "computed at run time from data" in text, text
    named = f"{what} tensor '" if runtime == "python" else f"input {k} {what}"
    assert named in text, text


@pytest.mark.parametrize("soft", [False, True])
@pytest.mark.parametrize("iou, score, sigma", [(0.3, 0.1, 0.5), (0.6, -1.0, 0.0), (1.5, 0.2, 2.0), (-0.2, 0.0, 0.5)])
def test_nms_thresholds_fed_from_data_are_read_at_eval_as_litert(runtime, soft, iou, score, sigma):
    """iou / score thresholds (and V5's sigma) as model inputs: read at eval in both runtimes, out-of-range values
    unchecked as LiteRT reads them (an iou of 1.5 or -0.2 gives LiteRT's answer), exact."""
    model, _, feeds, _ = _case("NON_MAX_SUPPRESSION_V5-30" if soft else "NON_MAX_SUPPRESSION_V4-30")
    sg = model.subgraphs[0]
    ks = (3, 4, 5) if soft else (3, 4)
    for k in ks:  # the constant becomes a model input
        sg.tensors[sg.operators[0].inputs[k]] = dataclasses.replace(sg.tensors[sg.operators[0].inputs[k]], buffer=0)
        sg.inputs.append(sg.operators[0].inputs[k])
    data = write_model(model)
    fed = feeds + [np.array(v, np.float32) for v in (iou, score, sigma)[:len(ks)]]
    got, want = run_on(runtime, data, fed), run_peer(data, fed, "litert", isolate=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("rate", [16000, 8000, 44100, 22050, 4000])
@pytest.mark.parametrize("frames, bins", [(4, 129), (3, 65)])
def test_mfcc_sample_rate_fed_from_data_is_read_at_eval_as_litert(runtime, rate, frames, bins):
    """The rate as a model input: the filterbank built at eval, within 1e-4 of the range of LiteRT's; a rate LiteRT
    builds no filterbank for (4000 Hz puts the 4 kHz upper limit past the bins) gives its zeros."""
    from tests.test_ops_detection_audio import mfcc_model

    rng = np.random.default_rng(rate + bins)
    model = mfcc_model(frames, bins, rate_const=False)
    feeds = [(rng.random((1, frames, bins)) ** 3 * 50).astype(np.float32), np.array([rate], np.int32)]
    (got,), (want,) = run_on(runtime, model, feeds), run_peer(model, feeds, "litert", isolate=True)
    assert got.shape == want.shape
    assert np.abs(got.astype(np.float64) - want).max() <= 1e-4 * max(float(np.ptp(want)), 1.0)
    if rate == 4000:
        assert not want.any() and not got.any()


def test_mfcc_sample_rate_fed_from_data_that_is_not_positive_fails_the_invoke(runtime):
    """LiteRT fails the invoke (its filterbank does not initialize): a DataError naming the node and the input."""
    from edge_sdk import Interpreter
    from edge_sdk.errors import DataError
    from tests.test_ops_detection_audio import mfcc_model

    interp = Interpreter(model_content=mfcc_model(4, 129, rate_const=False), backend=runtime)
    interp.allocate_tensors()
    x, r = interp.get_input_details()
    interp.set_tensor(x["index"], np.ones((1, 4, 129), np.float32))
    interp.set_tensor(r["index"], np.array([0], np.int32))
    with pytest.raises(DataError) as err:
        interp.invoke()
    text = str(err.value)
    assert "\n" not in text and "node 0 (Mfcc" in text and "sample rate" in text, text
