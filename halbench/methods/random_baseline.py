"""``random``: uniform random scores, the floor every method must beat."""

from __future__ import annotations

import numpy as np

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer


class RandomScores(Method):
    name = "random"
    description = "Uniform random scores over the editable positions; uses no model rows."
    kind = "baseline"

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        return Attribution(masked_scores(rng.random(case.length), case))
