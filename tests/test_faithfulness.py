"""S_rep, comprehensiveness and sufficiency: same seeded refills for every method, and they measure causes."""

from __future__ import annotations

import numpy as np
import pytest

from halbench.metrics import METRICS
from halbench.metrics.faithfulness import ALPHAS, case_draws, faithfulness_metrics
from halbench.tasks.bundle import load_bundle

from .conftest import BUILT, TASKS

pytestmark = pytest.mark.skipif("single" not in BUILT, reason="single not built")


@pytest.fixture(scope="module")
def single():
    return load_bundle(TASKS / "single", device="cpu")


def scores_with(record: dict, first: list[int]) -> np.ndarray:
    scores = np.zeros(len(record["prompt_ids"]))
    scores[first] = 1.0
    return scores


def test_metadata_registered():
    for name in [f"s_rep@{a}" for a in ALPHAS] + ["comprehensiveness", "sufficiency"]:
        assert name in METRICS and not METRICS[name].needs_ground_truth
    assert METRICS["sufficiency"].direction == "lower"


def test_draws_depend_only_on_case_and_seed(single):
    record = single.cases()[0]
    a = case_draws(single.scorer(record, budget=None), 8, seed=1)
    b = case_draws(single.scorer(record, budget=None), 8, seed=1)
    c = case_draws(single.scorer(record, budget=None), 8, seed=2)
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


def test_equal_kept_sets_give_equal_numbers(single):
    """Two methods whose rankings keep the same positions get identical metrics."""
    record = single.cases()[1]
    evaluator = single.scorer(record, budget=None)
    draws = case_draws(evaluator, 16, seed=0)
    cause = record["causes"][0]
    x = faithfulness_metrics(scores_with(record, cause), evaluator, draws)
    y = faithfulness_metrics(scores_with(record, cause) * 7.0 + 0.5, evaluator, draws)
    assert x == y


def test_keeping_the_cause_reproduces_the_hallucination(single):
    good, bad = [], []
    for record in single.cases()[:10]:
        evaluator = single.scorer(record, budget=None)
        draws = case_draws(evaluator, 16, seed=0)
        cause = record["causes"][0]
        others = [p for p in record["editable"] if p not in cause]
        good.append(faithfulness_metrics(scores_with(record, cause), evaluator, draws))
        bad.append(faithfulness_metrics(scores_with(record, others[:3]), evaluator, draws))
    assert np.mean([g["s_rep@0.25"] for g in good]) > np.mean([b["s_rep@0.25"] for b in bad]) + 0.3
    assert np.mean([g["comprehensiveness"] for g in good]) > np.mean([b["comprehensiveness"] for b in bad])
    assert np.mean([g["sufficiency"] for g in good]) < np.mean([b["sufficiency"] for b in bad])
