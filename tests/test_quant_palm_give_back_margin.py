"""The give-back margin (converters/quantize/widen.py ``_holds_with_margin``) is measured toward what widening
reaches: a task figure half-way from the goal to the every-op-widest model's own figure, not to perfect. With a
goal of 0.8 and a widest model at 0.875 a margin toward 1.0 asked 0.9 -- more than any give-back can keep -- so
the heavy ops never went back to int8."""

from __future__ import annotations

from types import SimpleNamespace

import pytest


class _Goal:
    """A task judge's records by figure: goal 0.8 of the metric 'strings'."""

    def __init__(self, figures: dict):
        self.figures = figures

    def record(self, qmodel):
        return {"judged": True, "goal": {"strings": 0.8}, "metrics": {"strings": self.figures[qmodel]}}


@pytest.mark.parametrize("figure, ceiling, holds", [
    (0.84, 0.875, True),   # half-way to 0.875 is 0.8375: held (toward perfect, 0.9, it was not)
    (0.83, 0.875, False),  # below half-way
    (0.89, None, False),   # the widest model's figure unknown: toward perfect, 0.9, as before
    (0.90, None, True),
    (0.90, 1.0, True),
    (0.81, 0.79, True),    # the widest model below the goal: the goal itself (nothing better to keep)
])
def test_give_back_margin_is_half_way_to_the_widest_models_figure(figure, ceiling, holds):
    from converters.quantize.widen import _holds_with_margin

    goal = _Goal({"q": figure})
    result = SimpleNamespace(short=False, qmodel="q", outputs=None)
    assert _holds_with_margin(goal, result, ceiling) is holds
