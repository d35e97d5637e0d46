"""``occlusion``: leave-one-out. Replace one position at a time and measure the target's drop."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer


class Occlusion(Method):
    name = "occlusion"
    paper = "https://arxiv.org/abs/1311.2901"
    description = (
        "Leave-one-out: each editable position is replaced by draws from the replacement distribution (the "
        "task's default unless `replacement` names one) and "
        "scored by the mean drop in the target's log-probability. Uses L+1 rows per draw; extra budget buys "
        "more draws per position (up to max_draws)."
    )
    kind = "perturbation"
    defaults: ClassVar[dict[str, Any]] = {"replacement": None, "max_draws": 4}

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        positions = list(case.editable)
        budget = scorer.rows_left(1 + len(positions) * self.params["max_draws"])
        draws = int(min(self.params["max_draws"], max(1, (budget - 1) // max(1, len(positions)))))
        base = scorer.target_logprob(scorer.prompt[None])[0]
        mask = np.zeros((len(positions) * draws, case.length), dtype=bool)
        mask[np.arange(mask.shape[0]), np.repeat(positions, draws)] = True
        rows = scorer.replacements.sample(rng, scorer.prompt, mask, self.params["replacement"])
        drops = base - scorer.target_logprob(rows).reshape(len(positions), draws).mean(1)
        scores = np.zeros(case.length)
        scores[positions] = drops
        return Attribution(masked_scores(scores, case), extras={"draws": draws})
