"""Generation: the sampled hallucination rate, greedy decoding, seeding and charging; SAT's support shrinkage."""

from __future__ import annotations

import numpy as np
import pytest

from halbench.methods.base import get_method
from halbench.methods.sat_search import fast_search
from halbench.scoring import BudgetExceeded


def test_sampled_rate_estimates_the_target_probability(tiny_bundle):
    scorer = tiny_bundle.scorer(tiny_bundle.cases("dev")[0], budget=None)
    rows, _ = scorer.perturb(np.random.default_rng(1), 6, 0.5)
    p = scorer.target_prob(rows)
    rate = scorer.sampled_hallucination(rows, np.random.default_rng(2), samples=400)
    assert np.all(np.abs(rate - p) <= 5 * np.sqrt(p * (1 - p) / 400) + 2e-3)  # five standard errors


def test_greedy_decoding_agrees_with_the_teacher_forced_hit(tiny_bundle):
    record = tiny_bundle.cases("test")[0]
    scorer = tiny_bundle.scorer(record, budget=None)
    rows, _ = scorer.perturb(np.random.default_rng(4), 32, 0.5)
    generated = scorer.generate(rows)  # greedy
    _, hit = scorer.target_scores(rows)
    assert np.array_equal((generated == np.asarray(record["target_ids"])[None, :]).all(1), hit)


def test_generation_is_seeded_and_charged(tiny_bundle):
    record = tiny_bundle.cases("dev")[1]
    a = tiny_bundle.scorer(record, budget=None)
    rows = np.repeat(a.prompt[None], 5, axis=0)
    first = a.generate(rows, np.random.default_rng(3), new_tokens=3)
    again = tiny_bundle.scorer(record, budget=None).generate(rows, np.random.default_rng(3), new_tokens=3)
    assert first.shape == (5, 3) and np.array_equal(first, again)
    assert a.cost.forward_rows == 15  # one row per prompt and generated token
    with pytest.raises(BudgetExceeded):
        tiny_bundle.scorer(record, budget=10).generate(rows, np.random.default_rng(3), new_tokens=3)


def test_custom_match_sees_the_generated_ids(tiny_bundle):
    scorer = tiny_bundle.scorer(tiny_bundle.cases("dev")[2], budget=None)
    rows = np.repeat(scorer.prompt[None], 4, axis=0)
    always = scorer.sampled_hallucination(rows, np.random.default_rng(0), samples=3, match=lambda g: g[:, 0] >= 0)
    assert np.array_equal(always, np.ones(4))


def test_sat_in_sampling_mode_stays_within_budget(tiny_bundle):
    record = tiny_bundle.cases("dev")[0]
    scorer = tiny_bundle.scorer(record, budget=256)
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
