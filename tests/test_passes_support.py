"""Shared helpers for the pass tests (and a check that they can tell models apart)."""

from __future__ import annotations

import copy
from collections import Counter

import numpy as np

from edge_sdk import Interpreter
from edge_sdk.model import write_model
from edge_sdk.model.types import Model
from tests.peers import run_litert


def op_counts(model: Model, sg: int = 0) -> Counter:
    return Counter(model.op_name(op) for op in model.subgraphs[sg].operators)


def random_inputs(model: Model, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    sub = model.subgraphs[0]
    return [rng.standard_normal(sub.tensors[t].shape).astype(np.float32) for t in sub.inputs]


def run_ours(model: Model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    it = Interpreter(model=model)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


def assert_close(got, want, rtol=1e-5, atol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * max(1.0, float(np.abs(w).max(initial=0))))


def check_pass(model: Model, transform, seeds=(0, 1), rtol=1e-5, litert=True) -> Model:
    """Apply ``transform`` to a copy of ``model``; outputs must match before/after in our interpreter and,
    on the written bytes, in LiteRT's reference kernels. Returns the transformed model."""
    before = copy.deepcopy(model)
    after = transform(copy.deepcopy(model))
    data = write_model(after)  # the result must serialize
    for seed in seeds:
        x = random_inputs(before, seed)
        want = run_ours(before, x)
        got = run_ours(after, x)
        assert_close(got, want, rtol=rtol)
        if litert:
            assert_close(run_litert(data, x), want, rtol=rtol)
    return after


def test_check_pass_detects_a_wrong_rewrite():
    from edge_sdk.model.builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("x", (1, 4))
    y = g.tensor("y", (1, 4))
    g.op("RELU", [x], [y])
    g.output(y)
    model = g.build()

    def wrong(m):
        m.operator_codes[0].builtin_code = 14  # RELU -> LOGISTIC
        return m

    import pytest

    with pytest.raises(AssertionError):
        check_pass(model, wrong, litert=False)
    check_pass(model, lambda m: m)
