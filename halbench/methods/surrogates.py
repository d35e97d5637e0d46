"""Surrogate-model baselines through captum: ``lime`` and ``kernel_shap``.

Each editable position is one interpretable feature; an ablated feature takes
a baseline token drawn once per case from the replacement strategy (captum
ablates to one fixed baseline id, not a fresh sample; fixed positions keep
their token, so ablating them changes nothing). The
number of sampled coalitions is the budget left, evaluated in batches
(``perturbations_per_eval``), so captum's one-forward-per-sample default does
not apply.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from captum.attr import KernelShap, Lime

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer


def _setup(
    case: PublicCase, scorer: Scorer, cap: int, rng: np.random.Generator, kind: str | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    ids = torch.as_tensor(scorer.prompt[None], dtype=torch.long)
    edit = np.zeros((1, case.length), dtype=bool)
    edit[0, list(case.editable)] = True
    baseline = torch.as_tensor(scorer.replacements.sample(rng, scorer.prompt, edit, kind), dtype=torch.long)
    mask = torch.zeros_like(ids)
    mask[0, list(case.editable)] = torch.arange(1, len(case.editable) + 1)
    return ids, baseline, mask, scorer.rows_left(cap)


def _forward(scorer: Scorer):
    return lambda ids: torch.as_tensor(scorer.target_logprob(ids.cpu().numpy()), dtype=torch.float32)


class _Surrogate(Method):
    explainer: ClassVar[type]
    defaults: ClassVar[dict[str, Any]] = {"max_samples": 1024, "batch": 256, "replacement": None}

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        ids, baseline, mask, samples = _setup(case, scorer, self.params["max_samples"], rng, self.params["replacement"])
        if samples < 2:
            raise ValueError(f"{self.name} needs at least 2 rows, {samples} left")
        torch.manual_seed(int(rng.integers(2**31)))
        attr = self.explainer(_forward(scorer)).attribute(
            ids,
            baselines=baseline,
            feature_mask=mask,
            n_samples=samples,
            perturbations_per_eval=min(self.params["batch"], samples),
        )
        return Attribution(masked_scores(attr[0].detach().float().numpy(), case), extras={"samples": samples})


class LimeMethod(_Surrogate):
    name = "lime"
    paper = "https://arxiv.org/abs/1602.04938"
    code = "https://captum.ai/api/lime.html"
    description = "LIME (captum): a lasso fitted to random coalitions of kept positions, weighted by similarity."
    kind = "perturbation"
    explainer = Lime


class KernelShapMethod(_Surrogate):
    name = "kernel_shap"
    paper = "https://arxiv.org/abs/1705.07874"
    code = "https://captum.ai/api/kernel_shap.html"
    description = "KernelSHAP (captum): Shapley values estimated by weighted regression on sampled coalitions."
    kind = "perturbation"
    explainer = KernelShap
