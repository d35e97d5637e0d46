"""GradientSHAP: exact on a linear stand-in, complete and in agreement with integrated gradients on a tiny
model, and the method contract (valid scores, budget kept, deterministic for a seed, global RNGs untouched)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from captum.attr import IntegratedGradients

from halbench.case import PublicCase
from halbench.methods.base import get_method
from halbench.replacements import Replacements
from halbench.runner import case_rng

BUDGETS = (16, 64, 256)


class Linear:
    """A scorer stand-in whose target log-probability is linear in the input embeddings: ``sum(W * E)``."""

    def __init__(self, length: int = 8, vocab: int = 20, dim: int = 3):
        gen = torch.Generator().manual_seed(0)
        self.table = torch.randn(vocab, dim, generator=gen)
        self.weight = torch.randn(length, dim, generator=gen)
        self.prompt = np.arange(length, dtype=np.int64)
        self.replacements = Replacements(self.table, list(range(length, vocab)), default="uniform")
        self.case = PublicCase("c", tuple(self.prompt.tolist()), (1,), tuple(range(1, length - 1)))
        self.rows = 0

    def rows_left(self, cap: int) -> int:
        return cap

    def input_embeddings(self, ids: np.ndarray | None = None) -> torch.Tensor:
        return self.table[torch.as_tensor(self.prompt[None] if ids is None else ids)]

    def target_logprob_from_embeddings(self, embeds: torch.Tensor) -> torch.Tensor:
        self.rows += 3 * embeds.shape[0]
        return (embeds * self.weight).sum((1, 2))


def test_exact_on_a_linear_model():
    """With one baseline every sample's attribution is ``W * (x - b)`` summed over the embedding."""
    scorer = Linear()
    rng = np.random.default_rng(0)
    baseline_rng = copy.deepcopy(rng)
    attribution = get_method("gradient_shap", baselines=1, max_samples=7).attribute(scorer.case, scorer, rng)
    mask = np.zeros((1, scorer.case.length), dtype=bool)
    mask[:, list(scorer.case.editable)] = True
    baseline = scorer.replacements.sample(baseline_rng, scorer.prompt, mask)
    expected = (scorer.weight * (scorer.input_embeddings() - scorer.input_embeddings(baseline))[0]).sum(-1)
    editable = list(scorer.case.editable)
    np.testing.assert_allclose(attribution.scores[editable], expected.numpy()[editable], rtol=1e-5, atol=1e-6)
    assert attribution.extras["samples"] == 7 and scorer.rows == 21


def test_complete_and_close_to_integrated_gradients_on_a_tiny_model(tiny_bundle):
    """One baseline, many samples: a Monte Carlo estimate of integrated gradients along the same path."""
    for record in tiny_bundle.cases("test")[:2]:
        scorer = tiny_bundle.scorer(record, budget=3 * 64)
        rng = case_rng(0, record["id"])
        baseline_rng = copy.deepcopy(rng)
        attribution = get_method("gradient_shap", baselines=1).attribute(scorer.case, scorer, rng)
        mask = np.zeros((1, scorer.case.length), dtype=bool)
        mask[:, record["editable"]] = True
        baseline = scorer.replacements.sample(baseline_rng, scorer.prompt, mask)
        evaluator = tiny_bundle.scorer(record, budget=None)
        gap = evaluator.target_logprob(scorer.prompt[None])[0] - evaluator.target_logprob(baseline)[0]
        ig = IntegratedGradients(evaluator.target_logprob_from_embeddings).attribute(
            evaluator.input_embeddings(), baselines=evaluator.input_embeddings(baseline), n_steps=32
        )
        ig_scores = ig[0].sum(-1).numpy()[record["editable"]]
        shap_scores = np.asarray(attribution.scores)[record["editable"]]
        assert abs(shap_scores.sum() - gap) <= 0.3 * abs(gap) + 1e-3  # completeness: f(x) - f(baseline)
        assert np.corrcoef(shap_scores, ig_scores)[0, 1] > 0.95


@pytest.mark.parametrize("budget", BUDGETS)
def test_valid_scores_within_budget(tiny_bundle, budget):
    record = tiny_bundle.cases("test")[0]
    scorer = tiny_bundle.scorer(record, budget=budget)
    attribution = get_method("gradient_shap").attribute(scorer.case, scorer, case_rng(0, record["id"]))
    attribution.validate(scorer.case)
    scores = np.asarray(attribution.scores)
    editable = np.zeros(len(scores), dtype=bool)
    editable[record["editable"]] = True
    assert np.isfinite(scores).all() and scores[~editable].max() < scores[editable].min()
    assert scorer.cost.rows <= budget and attribution.extras["samples"] == budget // 3


def test_deterministic_for_a_seed_and_leaves_the_global_generators_alone(tiny_bundle):
    record = tiny_bundle.cases("test")[1]

    def scores(seed: int) -> np.ndarray:
        scorer = tiny_bundle.scorer(record, budget=64)
        return get_method("gradient_shap").attribute(scorer.case, scorer, case_rng(seed, record["id"])).scores

    np.random.seed(123)
    torch.manual_seed(123)
    first = scores(0)
    numpy_after, torch_after = np.random.random(), torch.rand(1).item()
    np.random.seed(7)
    assert np.array_equal(first, scores(0))
    assert not np.array_equal(first, scores(1))
    np.random.seed(123)
    torch.manual_seed(123)
    scores(0)
    assert np.random.random() == numpy_after and torch.rand(1).item() == torch_after
