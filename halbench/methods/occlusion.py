"""``occlusion``: leave-one-out. Replace one position at a time and measure the target's drop.

With fewer rows than positions (budgets below the prompt length) it occludes contiguous blocks instead,
one block per row, and gives every position of a block the block's drop: the same algorithm at a
coarser grain, which is what a real long prompt under a small budget allows.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer


def blocks(positions: list[int], count: int) -> list[list[int]]:
    """``positions`` cut into ``count`` contiguous blocks of nearly equal size."""
    return [list(b) for b in np.array_split(np.asarray(positions), count) if len(b)]


class Occlusion(Method):
    name = "occlusion"
    paper = "https://arxiv.org/abs/1311.2901"
    description = (
        "Leave-one-out: each editable position is replaced by draws from the replacement strategy and scored "
        "by the mean drop in the target's log-probability; one row for the prompt, then E rows per draw, as many "
        "draws as the budget buys up to max_draws (64). Below E + 1 rows, contiguous blocks are occluded instead."
    )
    kind = "perturbation"
    defaults: ClassVar[dict[str, Any]] = {"replacement": None, "max_draws": 64}

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        positions = list(case.editable)
        budget = scorer.rows_left(1 + len(positions) * self.params["max_draws"])
        if budget < 2:
            raise ValueError(f"occlusion needs at least 2 rows, {budget} left")
        groups = blocks(positions, min(len(positions), budget - 1))
        draws = int(min(self.params["max_draws"], max(1, (budget - 1) // len(groups))))
        base = scorer.target_logprob(scorer.prompt[None])[0]
        mask = np.zeros((len(groups) * draws, case.length), dtype=bool)
        for g, group in enumerate(groups):
            mask[g * draws : (g + 1) * draws, group] = True
        rows = scorer.replacements.sample(rng, scorer.prompt, mask, self.params["replacement"])
        drops = base - scorer.target_logprob(rows).reshape(len(groups), draws).mean(1)
        scores = np.zeros(case.length)
        for group, drop in zip(groups, drops, strict=True):
            scores[group] = drop
        return Attribution(masked_scores(scores, case), extras={"draws": draws, "blocks": len(groups)})
