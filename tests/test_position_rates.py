"""scripts/position_rates.py: the hallucination rate of candidates by where their cause sits."""

from __future__ import annotations

import importlib.util
import math

import numpy as np

from halbench.tasks.registry import REPO_ROOT

spec = importlib.util.spec_from_file_location("position_rates", REPO_ROOT / "scripts" / "position_rates.py")
rates = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rates)


def test_the_rank_is_the_mean_place_of_the_cause_among_editable_positions():
    editable = [2, 4, 6, 8, 10]
    assert rates.cause_rank(editable, [2]) == 0.0 and rates.cause_rank(editable, [10]) == 1.0
    assert rates.cause_rank(editable, [4, 8]) == 0.5
    assert rates.cause_rank([3], [3]) == 0.0  # one editable position: no division by zero


def test_rates_by_fifth_count_each_fifth_and_leave_empty_ones_nan():
    ranks = np.array([0.0, 0.1, 0.19, 0.5, 0.99, 1.0])
    hits = np.array([1, 1, 0, 1, 0, 0])
    got, counts = rates.rates_by_fifth(ranks, hits)
    assert counts == [3, 0, 1, 0, 2]  # the last rank (1.0) falls in the last fifth
    assert np.isclose(got[0], 2 / 3) and got[2] == 1.0 and got[4] == 0.0
    assert math.isnan(got[1]) and math.isnan(got[3])
