"""Gradient baselines through captum: ``saliency``, ``grad_x_input``, ``integrated_gradients``.

captum differentiates the Scorer's teacher-forced target log-probability with
respect to the prompt's input embeddings; a position's score is the reduction
of its embedding-sized attribution to one number (the L2 norm for saliency, the
sum for the signed methods). Every forward/backward pass is charged by the Scorer.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from captum.attr import InputXGradient, IntegratedGradients, Saliency

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer


def _forward(scorer: Scorer):
    return lambda embeds: scorer.target_logprob_from_embeddings(embeds)


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
        "mean neutral-filler embedding; steps sized to the budget (3 rows each), at most max_steps."
    )
    kind = "gradient"
    defaults: ClassVar[dict[str, Any]] = {"max_steps": 32}

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        embeds = scorer.input_embeddings()
        remaining = scorer.rows_left(3 * self.params["max_steps"])
        steps = remaining // 3
        if steps < 2:
            raise ValueError(f"integrated_gradients needs at least 6 rows, {remaining} left")
        table = scorer.model.get_input_embeddings().weight.detach()
        neutral = table[torch.as_tensor(scorer.replacements.neutral, device=table.device)].mean(0)
        baseline = embeds.clone()
        baseline[0, list(case.editable)] = neutral
        scores = _scores(
            case,
            scorer,
            IntegratedGradients,
            "sum",
            embeds,
            baselines=baseline,
            n_steps=steps,
            internal_batch_size=steps,
        )
        return Attribution(scores, extras={"steps": steps})
