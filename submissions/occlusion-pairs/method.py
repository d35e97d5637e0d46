"""``occlusion-pairs``: leave-one-out occlusion plus pair occlusion of the top positions.

Leave-one-out (LOO) sees a position only through what removing it *alone* does.
That misses causes whose effect shows only as a pair interaction: when two
positions each sustain the hallucination on their own (redundant or backup
causes), removing either leaves the other in place and the target barely
moves, while removing both drops it. So, with whatever budget LOO leaves, the
top-m LOO positions are also refilled in pairs, and a position gains the pair
drop's excess over the two single drops (the interaction), maximised over its
partners. The maximum, floored at zero, means a position is only ever helped:
the parts of a conjunction (each alone already drops the target, the pair no
further) keep their LOO score, since any unrelated partner has excess near 0.

Budget: 1 + L rows for LOO (one refill per editable position, in one call),
then m(m-1)/2 rows for pairs (m the largest that fits, at most ``top_pairs``),
in a second call. A pair reuses the two refill tokens of its LOO rows, so the
excess measures the interaction rather than the noise of fresh draws. When the
budget is below 1 + L, the editable positions are cut into as many contiguous
blocks as fit (one row each) and a block's drop goes to every position in it.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, ClassVar

import numpy as np

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer


class OcclusionPairs(Method):
    name = "occlusion-pairs"
    description = (
        "Leave-one-out occlusion (one refill per editable position) plus pair occlusion of the top-m positions "
        "with the rows left (m <= top_pairs): score = single drop + best super-additive pair interaction."
    )
    kind = "perturbation"
    defaults: ClassVar[dict[str, Any]] = {"replacement": None, "top_pairs": 8}

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        editable = np.asarray(case.editable, dtype=np.int64)
        blocks = np.array_split(editable, max(1, scorer.rows_left(1 + len(editable)) - 1))
        loo_rows = self._loo_rows(case, scorer, rng, blocks)
        logprobs = scorer.target_logprob(loo_rows)  # row 0 is the unchanged prompt
        base, singles = logprobs[0], logprobs[0] - logprobs[1:]
        interaction, m = self._interactions(scorer, base, singles, blocks, loo_rows[1:])
        scores = np.zeros(case.length)
        for block, value in zip(blocks, singles + interaction, strict=True):
            scores[block] = value
        return Attribution(masked_scores(scores, case), extras={"pair_positions": m, "blocks": len(blocks)})

    def _loo_rows(
        self, case: PublicCase, scorer: Scorer, rng: np.random.Generator, blocks: list[np.ndarray]
    ) -> np.ndarray:
        """The prompt, then one row per block with that block refilled (as ``occlusion`` draws)."""
        mask = np.zeros((1 + len(blocks), case.length), dtype=bool)
        for b, block in enumerate(blocks):
            mask[1 + b, block] = True
        return scorer.replacements.sample(rng, scorer.prompt, mask, self.params["replacement"])

    def _interactions(
        self, scorer: Scorer, base: float, singles: np.ndarray, blocks: list[np.ndarray], loo_rows: np.ndarray
    ) -> tuple[np.ndarray, int]:
        """Per block, max(0, max over partners of pair drop - both single drops); zero outside the top m."""
        cap = int(self.params["top_pairs"])
        m = _pairs_that_fit(scorer.rows_left(cap * (cap - 1) // 2), min(cap, len(blocks)))
        interaction = np.zeros(len(blocks))
        if m < 2:
            return interaction, 0
        top = np.argsort(-singles, kind="stable")[:m]
        pairs = list(combinations(top.tolist(), 2))
        rows = np.broadcast_to(scorer.prompt, (len(pairs), len(scorer.prompt))).copy()
        for r, (i, j) in enumerate(pairs):
            rows[r, blocks[i]] = loo_rows[i, blocks[i]]
            rows[r, blocks[j]] = loo_rows[j, blocks[j]]
        excess = (base - scorer.target_logprob(rows)) - singles[[i for i, _ in pairs]] - singles[[j for _, j in pairs]]
        for (i, j), value in zip(pairs, excess, strict=True):
            interaction[i] = max(interaction[i], value)
            interaction[j] = max(interaction[j], value)
        return interaction, m


def _pairs_that_fit(rows: int, limit: int) -> int:
    """The largest m <= limit with m(m-1)/2 <= rows."""
    m = 0
    while m < limit and (m + 1) * m // 2 <= rows:
        m += 1
    return m
