"""``sat``: the paper's subsequence-association tracer (Sun et al., NeurIPS 2025).

It perturbs the prompt (each editable token replaced at ``rate``, the paper's
0.5), scores the hallucination on every perturbed prompt (teacher forcing
gives the expected indicator: the target probability), then beam-searches
ordered, non-contiguous token subsequences by p(hallucination | subsequence
kept) with :func:`fast_search`, which returns exactly what the reference
semantics return. All of the budget buys perturbed prompts. Per-token scores
follow SAT's ranking (:func:`per_token_scores`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.methods.sat_search import fast_search, per_token_scores
from halbench.scoring import Scorer


class SAT(Method):
    name = "sat"
    description = (
        "Subsequence-association tracer: perturb at rate 0.5, then beam search (width 20, levels up to 0.9 of "
        "the prompt) over token subsequences by the mean target probability of the perturbed prompts that "
        "contain them."
    )
    kind = "tracer"
    defaults: ClassVar[dict[str, Any]] = {
        "rate": 0.5,
        "beam": 20,
        "max_level_rate": 0.9,
        "replacement": None,
        "max_perturbations": 1024,
    }

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        cap = self.params["max_perturbations"]
        n = scorer.rows_left(cap)
        if n < 2:
            raise ValueError(f"sat needs at least 2 rows, {n} left")
        perturbed, _ = scorer.perturb(rng, n, self.params["rate"], self.params["replacement"])
        y = scorer.target_prob(perturbed)
        result = fast_search(
            scorer.prompt,
            perturbed,
            y,
            list(case.editable),
            beam=self.params["beam"],
            max_level_rate=self.params["max_level_rate"],
        )
        scores = masked_scores(per_token_scores(result, case.length), case)
        best = None if result.best is None else tuple(int(p) for p in result.best.positions)
        return Attribution(scores, subsequence=best, extras={"perturbations": n})
