"""``sat``: the paper's subsequence-association tracer (Sun et al., NeurIPS 2025).

It perturbs the prompt (each editable token replaced at ``rate``, the paper's
0.5), scores the hallucination on every perturbed prompt (teacher forcing
gives the expected indicator: the target probability), then beam-searches
ordered, non-contiguous token subsequences by p(hallucination | subsequence
kept) with :func:`fast_search`, which returns exactly what the reference
semantics return. All of the budget buys perturbed prompts. Per-token scores
follow SAT's ranking (:func:`per_token_scores`).

``sat_shrunk`` is our variant: the same perturbations and search, but each
candidate's conditional mean is shrunk toward the mean over all perturbed
prompts by ``shrinkage`` pseudo-prompts (a posterior mean). The paper's score
has no minimum support, so a long candidate contained in one or two prompts
that happened to hallucinate outranks the true cause seen in dozens; with
shrinkage the short, well-supported cause wins, most of all at small budgets.
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
    code = "https://github.com/sunyiyou/SAT"
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
        "shrinkage": 0.0,
        "samples": 0,
    }

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        samples = int(self.params["samples"])
        per_prompt = samples * len(case.target_ids) if samples > 0 else 1
        n = scorer.rows_left(self.params["max_perturbations"] * per_prompt) // per_prompt
        if n < 2:
            raise ValueError(f"sat needs rows for at least 2 perturbed prompts, {n} fit")
        perturbed, _ = scorer.perturb(rng, n, self.params["rate"], self.params["replacement"])
        # samples > 0: the paper's estimate (sample responses, count hallucinations); 0: its exact expectation
        y = scorer.sampled_hallucination(perturbed, rng, samples) if samples > 0 else scorer.target_prob(perturbed)
        result = fast_search(
            scorer.prompt,
            perturbed,
            y,
            list(case.editable),
            beam=self.params["beam"],
            max_level_rate=self.params["max_level_rate"],
            shrinkage=float(self.params["shrinkage"]),
        )
        scores = masked_scores(per_token_scores(result, case.length), case)
        best = None if result.best is None else tuple(int(p) for p in result.best.positions)
        return Attribution(scores, subsequence=best, extras={"perturbations": n})


class ShrunkSAT(SAT):
    name = "sat_shrunk"
    code = None  # ours: halbench/methods/sat.py
    description = (
        "SAT with support-weighted scores: each subsequence's mean target probability is shrunk toward the "
        "overall mean by a few pseudo-prompts, so rarely-seen long subsequences stop outranking the cause."
    )
    defaults: ClassVar[dict[str, Any]] = {**SAT.defaults, "shrinkage": 32.0}
