"""Ground-truth-free metrics: the paper's reproducibility, its model-filled and probability variants, ERASER."""

from __future__ import annotations

import numpy as np

from halbench.metrics import METRICS
from halbench.metrics.faithfulness import ALPHAS, case_draws, faithfulness_metrics

from .conftest import built


def scores_with(record: dict, first: list[int]) -> np.ndarray:
    scores = np.zeros(len(record["prompt_ids"]))
    scores[first] = 1.0
    return scores


def test_metadata_registered():
    names = [f"{kind}@{a}" for kind in ("s_rep", "s_rep_lm", "p_rep") for a in ALPHAS] + ["comprehensiveness"]
    for name in names:
        assert name in METRICS and not METRICS[name].needs_ground_truth and METRICS[name].direction == "higher"
    assert "sufficiency" not in METRICS  # p_rep@0.25 is ERASER's sufficiency, read the right way up


def test_draws_depend_only_on_case_and_seed(tiny_bundle):
    record = tiny_bundle.cases()[0]
    a = case_draws(tiny_bundle.scorer(record, budget=None), 8, seed=1, lm_refills=8)
    b = case_draws(tiny_bundle.scorer(record, budget=None), 8, seed=1, lm_refills=8)
    c = case_draws(tiny_bundle.scorer(record, budget=None), 8, seed=2, lm_refills=8)
    np.testing.assert_array_equal(a.random, b.random)
    np.testing.assert_array_equal(a.model, b.model)
    assert (a.random != c.random).any() and (a.model != c.model).any()


def test_fixed_positions_are_never_refilled(tiny_bundle):
    record = tiny_bundle.cases()[0]
    draws = case_draws(tiny_bundle.scorer(record, budget=None), 8, seed=0)
    fixed = [p for p in range(len(record["prompt_ids"])) if p not in set(record["editable"])]
    evaluator = tiny_bundle.scorer(record, budget=None)
    from halbench.metrics.faithfulness import _keep_only

    kept = _keep_only(evaluator, draws.random, ())
    assert (kept[:, fixed] == np.asarray(record["prompt_ids"])[fixed]).all()


def test_equal_kept_sets_give_equal_numbers_and_rates_are_rates(tiny_bundle):
    """Two methods whose rankings keep the same positions get identical metrics."""
    record = tiny_bundle.cases()[1]
    evaluator = tiny_bundle.scorer(record, budget=None)
    draws = case_draws(evaluator, 16, seed=0, lm_refills=8)
    cause = record["causes"][0]
    x = faithfulness_metrics(scores_with(record, cause), evaluator, draws)
    y = faithfulness_metrics(scores_with(record, cause) * 7.0 + 0.5, evaluator, draws)
    assert x == y
    for a in ALPHAS:
        assert 0.0 <= x[f"p_rep@{a}"] <= 1.0
        assert (x[f"s_rep@{a}"] * 16) == round(x[f"s_rep@{a}"] * 16)  # a share of 16 greedy answers
        assert (x[f"s_rep_lm@{a}"] * 8) == round(x[f"s_rep_lm@{a}"] * 8)
    assert "s_rep_lm@0.5" not in faithfulness_metrics(
        scores_with(record, cause), evaluator, case_draws(evaluator, 16, 0)
    )


def test_shared_metric_rows_give_identical_numbers_and_cost_nothing_twice(tiny_bundle):
    record = tiny_bundle.cases("dev")[0]
    evaluator = tiny_bundle.scorer(record, budget=None)
    draws = case_draws(evaluator, 16, seed=0)
    rng = np.random.default_rng(0)
    memo: dict = {}
    for _ in range(3):
        scores = rng.random(len(record["prompt_ids"]))
        fresh = faithfulness_metrics(scores, tiny_bundle.scorer(record, budget=None), draws)
        assert fresh == faithfulness_metrics(scores, evaluator, draws, memo)
    before = evaluator.cost.rows
    faithfulness_metrics(scores, evaluator, draws, memo)
    assert evaluator.cost.rows == before


def test_keeping_the_cause_reproduces_the_hallucination():
    from halbench.tasks.bundle import load_bundle

    bundle = load_bundle(built("single/grammar-llama-b"), device="cpu")
    good, bad = [], []
    for record in bundle.cases()[:10]:
        evaluator = bundle.scorer(record, budget=None)
        draws = case_draws(evaluator, 16, seed=0)
        cause = record["causes"][0]
        others = [p for p in record["editable"] if p not in cause]
        good.append(faithfulness_metrics(scores_with(record, cause), evaluator, draws))
        bad.append(faithfulness_metrics(scores_with(record, others[:3]), evaluator, draws))
    for name in ("s_rep@0.25", "p_rep@0.25", "comprehensiveness"):
        assert np.mean([g[name] for g in good]) > np.mean([b[name] for b in bad]) + 0.2, name
