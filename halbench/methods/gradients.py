"""Gradient baselines through captum: ``saliency``, ``grad_x_input``, ``integrated_gradients``, ``gradient_shap``.

captum differentiates the Scorer's teacher-forced target log-probability with
respect to the prompt's input embeddings; a position's score is the reduction
of its embedding-sized attribution to one number (the L2 norm for saliency, the
sum for the signed methods). Every forward/backward pass is charged by the
Scorer (a row with its backward costs three).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import torch
from captum.attr import GradientShap, InputXGradient, IntegratedGradients, Saliency

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer

ROW_COST = 3  # one forward row and one backward row (two)


def _forward(scorer: Scorer):
    return lambda embeds: scorer.target_logprob_from_embeddings(embeds)


@contextlib.contextmanager
def _global_rngs(seed: int) -> Iterator[None]:
    """Seed the global RNGs captum's GradientShap draws from, restoring them afterwards.

    captum draws GradientSHAP's baselines (``np.random.choice``) and interpolation points
    (``np.random.uniform``) from numpy's global generator and its input noise from torch's: seeding torch
    alone leaves the scores to whatever ran before, so the same case and seed gave different numbers.
    """
    state = np.random.get_state()
    np.random.seed(seed)  # captum reads the legacy global generator
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
    finally:
        np.random.set_state(state)


def _per_position(attr: torch.Tensor, reduce: str) -> np.ndarray:
    attr = attr.detach().float()[0]
    return (attr.norm(dim=-1) if reduce == "norm" else attr.sum(-1)).cpu().numpy()


def _scores(case: PublicCase, scorer: Scorer, explainer: type, reduce: str, embeds: torch.Tensor, **kw) -> np.ndarray:
    """Run a captum explainer on the prompt's embeddings and reduce to one score per position."""
    attr = explainer(_forward(scorer)).attribute(embeds, **kw)
    return masked_scores(_per_position(attr, reduce), case)


class SaliencyMethod(Method):
    name = "saliency"
    paper = "https://arxiv.org/abs/1312.6034"
    code = "https://captum.ai/api/saliency.html"
    description = "Norm of the gradient of the target log-probability w.r.t. each input embedding (captum Saliency)."
    kind = "gradient"

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        embeds = scorer.input_embeddings().requires_grad_()
        return Attribution(_scores(case, scorer, Saliency, "norm", embeds, abs=True))


class GradXInput(Method):
    name = "grad_x_input"
    paper = "https://arxiv.org/abs/1605.01713"
    code = "https://captum.ai/api/input_x_gradient.html"
    description = "Gradient times input embedding, summed over the embedding (captum InputXGradient)."
    kind = "gradient"

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        embeds = scorer.input_embeddings().requires_grad_()
        return Attribution(_scores(case, scorer, InputXGradient, "sum", embeds))


class IntegratedGradientsMethod(Method):
    name = "integrated_gradients"
    paper = "https://arxiv.org/abs/1703.01365"
    code = "https://captum.ai/api/integrated_gradients.html"
    description = (
        "Integrated gradients (captum, Gauss-Legendre) from a baseline prompt whose editable positions hold the "
        "expected embedding under the replacement strategy; steps sized to the budget (3 rows each), at most max_steps."
    )
    kind = "gradient"
    defaults: ClassVar[dict[str, Any]] = {"max_steps": 64, "replacement": None}

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        embeds = scorer.input_embeddings()
        remaining = scorer.rows_left(ROW_COST * self.params["max_steps"])
        steps = remaining // ROW_COST
        if steps < 2:
            raise ValueError(f"integrated_gradients needs at least {2 * ROW_COST} rows, {remaining} left")
        baseline = embeds.clone()
        baseline[0, list(case.editable)] = scorer.baseline_embedding(self.params["replacement"])
        kwargs = {"baselines": baseline, "n_steps": steps, "internal_batch_size": steps}
        scores = _scores(case, scorer, IntegratedGradients, "sum", embeds, **kwargs)
        return Attribution(scores, extras={"steps": steps})


class GradientShapMethod(Method):
    name = "gradient_shap"
    paper = "https://arxiv.org/abs/1705.07874"
    code = "https://captum.ai/api/gradient_shap.html"
    description = (
        "GradientSHAP (captum): expected gradients between the prompt and baseline prompts whose editable "
        "positions are drawn from the replacement strategy; one sample (3 rows) per point, as many as the budget buys."
    )
    kind = "gradient"
    defaults: ClassVar[dict[str, Any]] = {"baselines": 8, "max_samples": 256, "stdev": 0.0, "replacement": None}

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        remaining = scorer.rows_left(ROW_COST * self.params["max_samples"])
        samples = remaining // ROW_COST
        if samples < 1:
            raise ValueError(f"gradient_shap needs at least {ROW_COST} rows, {remaining} left")
        mask = np.zeros((int(self.params["baselines"]), case.length), dtype=bool)
        mask[:, list(case.editable)] = True
        baseline_ids = scorer.replacements.sample(rng, scorer.prompt, mask, self.params["replacement"])
        baselines = scorer.input_embeddings(baseline_ids)
        with _global_rngs(int(rng.integers(2**31))):
            scores = _scores(
                case,
                scorer,
                GradientShap,
                "sum",
                scorer.input_embeddings(),
                baselines=baselines,
                n_samples=samples,
                stdevs=float(self.params["stdev"]),
            )
        return Attribution(scores, extras={"samples": samples})
