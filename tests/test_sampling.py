"""The Scorer's sampling mode (generate and match), SAT on sampled estimates, shrinkage, and shared metric rows."""

from __future__ import annotations

import numpy as np
import pytest

from halbench.methods.base import get_method
from halbench.methods.sat_search import fast_search
from halbench.metrics.faithfulness import case_draws, faithfulness_metrics
from halbench.scoring import BudgetExceeded

from .conftest import BUILT, TASKS

pytestmark = pytest.mark.skipif("single" not in BUILT, reason="single not built")


@pytest.fixture(scope="module")
def single():
    from halbench.tasks.bundle import load_bundle

    return load_bundle(TASKS / "single", device="cpu")


def test_sampled_rate_estimates_the_target_probability(single):
    scorer = single.scorer(single.cases("dev")[0], budget=None)
    rows, _ = scorer.perturb(np.random.default_rng(1), 6, 0.5)
    p = scorer.target_prob(rows)
    rate = scorer.sampled_hallucination(rows, np.random.default_rng(2), samples=500)
    assert np.all(np.abs(rate - p) <= 5 * np.sqrt(p * (1 - p) / 500) + 2e-3)  # five standard errors


def test_generation_is_seeded_and_charged(single):
    record = single.cases("dev")[1]
    a = single.scorer(record, budget=None)
    rows = np.repeat(a.prompt[None], 5, axis=0)
    first = a.generate(rows, np.random.default_rng(3), new_tokens=3)
    again = single.scorer(record, budget=None).generate(rows, np.random.default_rng(3), new_tokens=3)
    assert first.shape == (5, 3) and np.array_equal(first, again)
    assert a.cost.forward_rows == 15  # one row per prompt and generated token
    tight = single.scorer(record, budget=10)
    with pytest.raises(BudgetExceeded):
        tight.generate(rows, np.random.default_rng(3), new_tokens=3)


def test_custom_match_sees_the_generated_ids(single):
    scorer = single.scorer(single.cases("dev")[2], budget=None)
    rows = np.repeat(scorer.prompt[None], 4, axis=0)
    always = scorer.sampled_hallucination(rows, np.random.default_rng(0), samples=3, match=lambda g: g[:, 0] >= 0)
    assert np.array_equal(always, np.ones(4))


def test_sat_in_sampling_mode_stays_within_budget(single):
    record = single.cases("dev")[0]
    scorer = single.scorer(record, budget=256)
    attribution = get_method("sat", samples=4).attribute(scorer.case, scorer, np.random.default_rng(0))
    attribution.validate(scorer.case)
    assert scorer.cost.rows <= 256 and attribution.extras["perturbations"] == 256 // 4


def test_shrinkage_prefers_the_well_supported_cause():
    """A pair kept together in many prompts beats a long subsequence seen once by luck."""
    rng = np.random.default_rng(0)
    original = np.arange(10)
    keep = rng.random((64, 10)) < 0.5
    perturbed = np.where(keep, original, 99)
    y = np.where(keep[:, 2] & keep[:, 7], 0.95, 0.05)
    lucky = np.flatnonzero(~(keep[:, 2] & keep[:, 7]))[0]
    perturbed[lucky] = original  # one prompt keeps everything ...
    y[lucky] = 1.0  # ... and happened to hallucinate fully
    plain = fast_search(original, perturbed, y, beam=20)
    shrunk = fast_search(original, perturbed, y, beam=20, shrinkage=32.0)
    assert shrunk.ranked[0].positions == (2, 7)
    assert len(plain.ranked[0].positions) > 2  # the paper's score crowns a long, once-seen candidate


def test_shared_metric_rows_give_identical_numbers(single):
    record = single.cases("dev")[3]
    evaluator = single.scorer(record, budget=None)
    draws = case_draws(evaluator, 16, seed=0)
    rng = np.random.default_rng(0)
    memo: dict = {}
    for _ in range(3):
        scores = rng.random(len(record["prompt_ids"]))
        fresh = faithfulness_metrics(scores, single.scorer(record, budget=None), draws)
        shared = faithfulness_metrics(scores, evaluator, draws, memo)
        assert fresh == shared
    before = evaluator.cost.rows
    faithfulness_metrics(scores, evaluator, draws, memo)
    assert evaluator.cost.rows == before  # every kept set already scored
