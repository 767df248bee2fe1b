"""The arena planner: valid (no live overlaps, aligned), at or above the lower bound, TFLM's offsets for its
own ordering, and never larger than TFLM's planned arena on the reference models."""

from __future__ import annotations

import re

import numpy as np
import pytest

from edge_sdk.runtime.arena import ALIGNMENT, ORDERINGS, BufferRequest, lower_bound, plan
from tests.conftest import ROOT, shared_model, shared_models
from tests.peers import tflm_arenas


def reqs(*triples):
    return [BufferRequest(i, size, first, last, f"b{i}") for i, (size, first, last) in enumerate(triples)]


def assert_valid(p, alignment=ALIGNMENT):
    bufs = p.buffers
    for b in bufs:
        assert b.offset % alignment == 0
        assert b.end <= p.total
    for i, a in enumerate(bufs):
        for b in bufs[i + 1 :]:
            live_together = not (a.last_use < b.first_use or b.last_use < a.first_use)
            if live_together and a.size and b.size:
                assert a.end <= b.offset or b.end <= a.offset, (a, b)
    assert p.lower_bound <= p.total


# ---------------------------------------------------------------------------------------- TFLM's own cases
# From TFLM's greedy_memory_planner_test.cc (sizes unaligned there: alignment=1 reproduces its offsets).
def test_tflm_medium_case_offsets():
    r = reqs((10, 0, 1), (20, 1, 2), (30, 2, 3), (40, 3, 4), (50, 0, 1))
    p = plan(r, orderings=["size"], alignment=1)
    assert [b.offset for b in p.buffers] == [50, 70, 40, 0, 0]
    assert p.total == 90
    assert_valid(p, 1)


def test_tflm_overlap_case():
    p = plan(reqs((100, 0, 1), (50, 2, 3), (20, 1, 2)), orderings=["size"], alignment=1)
    assert p.total == 120
    assert_valid(p, 1)


def test_tflm_simple_case():
    p = plan(reqs((10, 0, 1), (20, 2, 3)), orderings=["size"], alignment=1)
    assert [b.offset for b in p.buffers] == [0, 0] and p.total == 20


def test_person_detection_lifetimes():
    sizes = [9216, 3, 256, 2304, 2304, 2304, 1152, 4608, 4608, 4608, 4608, 4608, 4608, 4608, 4608, 4608, 4608,
             2304, 9216, 9216, 9216, 4608, 18432, 18432, 18432, 9216, 36864, 18432, 18432]
    lifetimes = [(0, 29)] + [(28 - k, 29 - k) for k in range(28)]
    r = [BufferRequest(i, s, a, b) for i, (s, (a, b)) in enumerate(zip(sizes, lifetimes))]
    tflm = plan(r, orderings=["size"])
    best = plan(r)
    assert_valid(tflm)
    assert_valid(best)
    assert best.total <= tflm.total < sum(sizes)
    assert best.lower_bound == lower_bound(r)


# ---------------------------------------------------------------------------------------- properties
@pytest.mark.parametrize("seed", range(40))
def test_random_lifetimes_valid_and_bounded(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    steps = int(rng.integers(1, 30))
    r = []
    for i in range(n):
        a = int(rng.integers(0, steps))
        b = int(rng.integers(a, steps))
        size = int(rng.choice([0, 1, 3, 16, 17, 100, 1000, int(rng.integers(1, 5000))]))
        r.append(BufferRequest(i, size, a, b))
    p = plan(r)
    assert_valid(p)
    tflm = plan(r, orderings=["size"])
    assert_valid(tflm)
    assert p.total <= tflm.total  # trying more orderings never loses to TFLM's
    for name in ORDERINGS:
        assert_valid(plan(r, orderings=[name]))
    # deterministic
    again = plan(list(r))
    assert [b.offset for b in again.buffers] == [b.offset for b in p.buffers] and again.total == p.total


def test_lower_bound_is_tight_for_chains():
    # a chain of ops: each buffer overlaps only its neighbours -> two at a time
    r = [BufferRequest(i, 1000, i, i + 1) for i in range(10)]
    p = plan(r)
    assert p.lower_bound == 2 * 1008 == p.total


def test_render_draws_every_step():
    p = plan(reqs((100, 0, 1), (50, 1, 2), (20, 2, 3)))
    text = p.render(width=32)
    assert text.startswith(f"arena plan: {p.total} bytes")
    rows = [ln for ln in text.splitlines() if "|" in ln]
    assert len(rows) == 4
    assert all(len(row.split("|")[1]) == 32 for row in rows)
    assert "0" in rows[0].split("|")[1] and "2" not in rows[0].split("|")[1]


def test_bad_requests_rejected():
    with pytest.raises(ValueError):
        plan([BufferRequest(0, 10, 3, 2)])
    with pytest.raises(ValueError):
        plan([BufferRequest(0, -1, 0, 0)])
    assert plan([]).total == 0


# ---------------------------------------------------------------------------------------- against TFLM
def _models():
    return [p for p in shared_models("tflite-micro/**/*.tflite") if "vela" not in p.name]


def test_never_larger_than_tflm_on_reference_models():
    from edge_sdk.runtime.planner import static_plan
    from edge_sdk.model import read_model

    paths = _models()
    if not paths:
        pytest.skip("../shared/models is absent")
    # one model per seanet op family keeps this quick; the rest are all the top-level models
    picked = [p for p in paths if "seanet" not in str(p) or re.search(r"/[a-z_]+1\.tflite$", str(p))]
    theirs = tflm_arenas(picked)
    assert len(theirs) >= len(picked) - 1, "TFLM did not plan the models"
    compared = 0
    for path in picked:
        if str(path) not in theirs:
            continue
        ours = static_plan(read_model(path))
        assert_valid(ours)
        assert ours.total <= theirs[str(path)], (path.name, ours.total, theirs[str(path)])
        compared += 1
    assert compared >= 10


def test_interpreter_plan_matches_static_plan():
    from edge_sdk.runtime.interpreter import Interpreter
    from edge_sdk.runtime.planner import static_plan
    from edge_sdk.model import read_model

    path = shared_model("tflite-micro/hello_world_int8.tflite")
    interp = Interpreter(model_path=path)
    interp.allocate_tensors()
    static = static_plan(read_model(path))
    assert interp.arena_size == static.total
    assert [(b.key, b.offset) for b in interp.arena_plan().buffers] == [(b.key, b.offset) for b in static.buffers]


def test_child_runs_from_repo_root():
    assert (ROOT / "edge_sdk" / "runtime" / "arena.py").exists()
