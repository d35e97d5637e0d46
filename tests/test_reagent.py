"""ReAGent: its update, ranking and aggregation on hand-made numbers, its loop on stand-in scorers, and the
method contract on a tiny instance (valid scores, budget kept, deterministic for a seed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from halbench.case import PublicCase
from halbench.methods.base import get_method
from halbench.methods.reagent import aggregate, model_sampler, outside_top, probe_masks, update
from halbench.replacements import Replacements
from halbench.runner import case_rng

from .tiny import make_tiny_instance

BUDGETS = (16, 64, 256)


# -- the core, on hand-made numbers ------------------------------------------------------------------------
def test_replaced_positions_gain_when_the_target_drops():
    logits = np.zeros((1, 3))
    new = update(logits, np.array([[True, False, True]]), np.array([0.5]))
    # logit(0.5 / 2 + 1/2) = log 3 for the replaced ones, logit(-0.5 / 2 + 1/2) = -log 3 for the kept one
    np.testing.assert_allclose(new, [[np.log(3), -np.log(3), np.log(3)]])


def test_replacements_that_do_not_hurt_the_target_lose_importance():
    logits = np.array([[1.0, 2.0], [0.5, 0.5]])
    new = update(logits, np.array([[True, False], [True, False]]), np.array([-0.6, 0.0]))
    np.testing.assert_allclose(new[0], [1.0 - np.log(4), 2.0 + np.log(4)])  # logit(0.2) = -log 4
    np.testing.assert_allclose(new[1], [0.5, 0.5])  # no change in the target: no change in importance


def test_a_certain_drop_stays_finite():
    new = update(np.zeros((1, 2)), np.array([[True, False]]), np.array([1.0]))
    assert np.isfinite(new).all() and new[0, 0] > 20 > -20 > new[0, 1]


def test_the_stopping_check_replaces_everything_outside_the_top():
    logits = np.array([[3.0, 1.0, 2.0, 0.0], [0.0, 1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(outside_top(logits, 2), [[False, True, False, True], [True, True, False, False]])
    assert not outside_top(logits, 9).any()


def test_scores_are_the_log_of_the_mean_softmax_over_stopped_chains():
    logits = np.array([[0.0, 1.0, 2.0], [2.0, 0.0, 0.0], [5.0, 5.0, 0.0]])
    soft = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    stopped = np.array([True, True, False])
    np.testing.assert_allclose(aggregate(logits, stopped), np.log(soft[:2].mean(0)))
    np.testing.assert_allclose(aggregate(logits, np.zeros(3, dtype=bool)), np.log(soft.mean(0)))
    assert np.isfinite(aggregate(np.array([[0.0, 5000.0]]), np.array([True]))).all()  # no underflow to ties


def test_probes_replace_at_the_ratio_and_never_nothing():
    masks = probe_masks(np.random.default_rng(0), 2000, 3, 0.3)
    assert masks.any(1).all()
    assert 0.3 < masks.mean() < 0.5  # 0.3 conditioned on a non-empty draw: 0.3 / (1 - 0.7**3) = 0.46


# -- the loop, on stand-in scorers -----------------------------------------------------------------------
class OneCause:
    """A scorer stand-in whose target is the top prediction exactly while position ``cause`` keeps its token."""

    def __init__(self, length: int, cause: int, budget: int, reproduces: bool = True, pool: list[int] | None = None):
        self.prompt = np.arange(length, dtype=np.int64)  # tokens 0..length-1; replacements never redraw them
        embedding = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
        self.replacements = Replacements(embedding, pool or list(range(length, 64)), default="uniform")
        self.cause, self.budget, self.spent, self.reproduces = cause, budget, 0, reproduces
        self.case = PublicCase("c", tuple(self.prompt.tolist()), (1,), tuple(range(1, length - 1)))

    def rows_left(self, cap: int) -> int:
        return max(0, min(cap, self.budget - self.spent))

    def target_scores(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.spent += len(ids)
        assert self.spent <= self.budget, "the method overspent"
        keep = np.asarray(ids)[:, self.cause] == self.prompt[self.cause]
        return np.where(keep, np.log(0.9), np.log(0.05)), keep & self.reproduces


def test_chains_find_the_single_cause_and_stop():
    scorer = OneCause(length=20, cause=7, budget=400)
    method = get_method("reagent", rational_size=1)
    attribution = method.attribute(scorer.case, scorer, np.random.default_rng(0))
    attribution.validate(scorer.case)
    # a chain stops only once the cause is its top position, so the mean softmax ranks the cause first
    assert attribution.extras["stopped"] == attribution.extras["chains"] > 1
    assert int(np.argmax(attribution.scores)) == 7 and scorer.spent < 400


def test_without_a_stop_the_budget_is_spent_exactly_and_never_exceeded():
    for budget in (2, 3, 16, 17, 64):
        scorer = OneCause(length=40, cause=7, budget=budget, reproduces=False)
        attribution = get_method("reagent").attribute(scorer.case, scorer, np.random.default_rng(1))
        attribution.validate(scorer.case)
        assert scorer.spent == budget and attribution.extras["stopped"] == 0
    assert int(np.argmax(attribution.scores)) == 7  # 64 rows: 1 chain, 31 probes


def test_fewer_than_two_rows_is_an_error():
    scorer = OneCause(length=10, cause=3, budget=1)
    with pytest.raises(ValueError, match="at least 2 rows"):
        get_method("reagent").attribute(scorer.case, scorer, np.random.default_rng(0))


def test_model_replacements_are_the_models_top_predictions_other_than_the_token():
    scorer = OneCause(length=6, cause=2, budget=10, pool=list(range(64)))
    logprobs = np.full((1, 6, 64), -20.0)
    for p in range(5):  # the prediction for position p + 1: its own token first, then p + 10, p + 11, p + 12
        logprobs[0, p, scorer.prompt[p + 1]] = -0.1
        logprobs[0, p, [p + 10, p + 11, p + 12]] = [-1.0, -1.5, -2.0]
    scorer.next_token_logprobs = lambda: logprobs
    draw = model_sampler(scorer, np.array([0, 1, 2, 3, 4]), top_k=2, fallback=None)
    mask = np.zeros((500, 6), dtype=bool)
    mask[:, [0, 2, 4]] = True
    rows = draw(np.random.default_rng(0), mask)
    np.testing.assert_array_equal(rows[:, [1, 3, 5]], np.broadcast_to(scorer.prompt[[1, 3, 5]], (500, 3)))
    for p in (2, 4):
        values, counts = np.unique(rows[:, p], return_counts=True)
        assert values.tolist() == [p + 9, p + 10]  # the top two after the original, never the original
        assert counts[0] > counts[1]  # drawn by renormalised probability
    assert (rows[:, 0] != scorer.prompt[0]).mean() > 0.9  # no prefix: drawn from the fallback strategy


# -- the contract, on a tiny model -------------------------------------------------------------------------
def run(bundle, record: dict, budget: int, seed: int = 0, **params):
    scorer = bundle.scorer(record, budget=budget)
    attribution = get_method("reagent", **params).attribute(scorer.case, scorer, case_rng(seed, record["id"]))
    attribution.validate(scorer.case)
    return attribution, scorer.cost.rows


def assert_valid(scores: np.ndarray, record: dict) -> None:
    editable = np.zeros(len(record["prompt_ids"]), dtype=bool)
    editable[record["editable"]] = True
    assert scores.shape == (len(record["prompt_ids"]),) and np.isfinite(scores).all()
    assert scores[~editable].max() < scores[editable].min()


@pytest.mark.parametrize("replacement", [None, "model"])
@pytest.mark.parametrize("budget", BUDGETS)
def test_valid_scores_within_budget(tiny_bundle, budget, replacement):
    record = tiny_bundle.cases("test")[0]
    attribution, rows = run(tiny_bundle, record, budget, replacement=replacement)
    assert_valid(np.asarray(attribution.scores), record)
    assert rows <= budget and attribution.extras["replacement"] == (replacement or "unigram")


@pytest.mark.parametrize("replacement", [None, "model"])
def test_deterministic_for_a_seed(tiny_bundle, replacement):
    record = tiny_bundle.cases("test")[1]
    first, rows = run(tiny_bundle, record, 64, replacement=replacement)
    again, rows_again = run(tiny_bundle, record, 64, replacement=replacement)
    other, _ = run(tiny_bundle, record, 64, seed=1, replacement=replacement)
    assert np.array_equal(first.scores, again.scores) and rows == rows_again
    assert not np.array_equal(first.scores, other.scores)


def test_two_rows_are_enough(tiny_bundle):
    record = tiny_bundle.cases("test")[2]
    for replacement in (None, "model"):
        attribution, rows = run(tiny_bundle, record, 2, replacement=replacement)
        assert_valid(np.asarray(attribution.scores), record)
        assert rows == 2 and attribution.extras["steps"] == 1


def test_a_long_prompt_under_a_small_budget(tmp_path):
    from halbench.tasks.bundle import load_bundle

    bundle = load_bundle(make_tiny_instance(tmp_path, "llama", cases=1, dev=1, length=200), device="cpu")
    record = bundle.cases("test")[0]
    attribution, rows = run(bundle, record, 16, replacement="model")
    assert_valid(np.asarray(attribution.scores), record)
    assert rows <= 16 and attribution.extras["steps"] == 7
