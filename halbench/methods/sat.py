"""``sat``: the paper's subsequence-association tracer (Sun et al., NeurIPS 2025), run as its reference code runs it.

Defaults follow ``run_benchmark.py`` of github.com/sunyiyou/SAT (docs/sat.md lists what still differs, and why):

* perturbation ``mode="rgrand"``: each perturbed prompt replaces ``k ~ U{1..max(1, floor(rate * E))}`` of
  the ``E`` editable positions, chosen uniformly without replacement (``rate`` 0.5, so about a quarter
  of the prompt on average); ``"rgfix"`` replaces exactly ``max(1, floor(rate * E))``; ``"bernoulli"``
  (halbench's earlier default) replaces each editable position independently with probability ``rate``;
* ``replacement="reference"``: a replaced token becomes a uniform choice among its 50 nearest tokens by
  input-embedding cosine that pass the reference's filters (:mod:`halbench.methods.sat_reference`); any of
  the shared strategies (``unigram``, ``uniform``, ``neighbours``, ``mask``; None: the instance's default)
  may be named instead;
* the hallucination of a perturbed prompt: ``samples=0`` (default) scores its teacher-forced target
  probability, the exact expectation of the paper's indicator; ``samples > 0`` samples responses:
  for text models (the case has ``target_text``) ``max_new_tokens`` tokens each, a hit when the decoded
  text contains the target string ignoring case, as the reference detects it; otherwise a hit when
  the response equals the target ids;
* the search (:func:`fast_search`): beam 20, levels up to 0.9 of the editable prompt, the reference's
  score, candidate order and answer rule. All of the budget buys perturbed prompts.

Per-token scores follow SAT's ranking (:func:`per_token_scores`).

``sat_shrunk`` is our variant: the same perturbations and search, but each candidate's conditional mean
is shrunk toward the mean over all perturbed prompts by ``shrinkage`` pseudo-prompts (a posterior mean).
The paper's score has no minimum support, so a long candidate contained in one or two prompts that
happened to hallucinate outranks the true cause seen in dozens; with shrinkage the short, well-supported
cause wins, most of all at small budgets.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, MethodError, masked_scores
from halbench.methods.sat_reference import MODES, contains_target, perturbation_mask, reference_replacer
from halbench.methods.sat_search import fast_search, per_token_scores
from halbench.replacements import STRATEGIES
from halbench.scoring import Scorer


class SAT(Method):
    name = "sat"
    code = "https://github.com/sunyiyou/SAT"
    description = (
        "Subsequence-association tracer as its reference code runs it: perturb a random 1..rate*E of the "
        "editable tokens with embedding neighbours of their class, then beam search (width 20, levels up to "
        "0.9 of the prompt) over token subsequences by the mean hallucination of the perturbed prompts that "
        "contain them."
    )
    kind = "tracer"
    defaults: ClassVar[dict[str, Any]] = {
        "mode": "rgrand",
        "rate": 0.5,
        "replacement": "reference",
        "top_k": 50,
        "beam": 20,
        "max_level_rate": 0.9,
        "max_perturbations": 1024,
        "shrinkage": 0.0,
        "samples": 0,
        "max_new_tokens": 128,
        "temperature": 1.0,
    }

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        self._check()
        per_prompt = self._rows_per_prompt(case)
        n = scorer.rows_left(self.params["max_perturbations"] * per_prompt) // per_prompt
        if n < 2:
            raise ValueError(f"sat needs rows for at least 2 perturbed prompts, {n} fit")
        perturbed = self._perturb(case, scorer, rng, n)
        y = self._hallucination(case, scorer, perturbed, rng)
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

    def _check(self) -> None:
        mode, replacement = self.params["mode"], self.params["replacement"]
        if mode not in MODES:
            raise MethodError(f"sat: unknown mode {mode!r} (one of {', '.join(MODES)})")
        if replacement is not None and replacement != "reference" and replacement not in STRATEGIES:
            raise MethodError(f"sat: unknown replacement {replacement!r} (reference or one of {', '.join(STRATEGIES)})")
        if int(self.params["samples"]) > 0 and int(self.params["max_new_tokens"]) < 1:
            raise MethodError("sat: max_new_tokens must be >= 1 when sampling")

    def _text_mode(self, case: PublicCase) -> bool:
        """Sampled free text, matched as a string: only for text models, whose cases carry the target string."""
        return int(self.params["samples"]) > 0 and bool(case.target_text)

    def _rows_per_prompt(self, case: PublicCase) -> int:
        """Model rows one perturbed prompt costs: one forward, or a row per generated token per sample."""
        samples = int(self.params["samples"])
        if samples <= 0:
            return 1
        steps = int(self.params["max_new_tokens"]) if self._text_mode(case) else len(case.target_ids)
        return samples * steps

    def _perturb(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator, n: int) -> np.ndarray:
        mode, replacement = self.params["mode"], self.params["replacement"]
        if mode == "bernoulli" and replacement != "reference":
            return scorer.perturb(rng, n, self.params["rate"], replacement)[0]  # the earlier perturbations, exactly
        mask = perturbation_mask(rng, n, case.length, case.editable, float(self.params["rate"]), mode)
        if replacement == "reference":
            replacer = reference_replacer(scorer.replacements, scorer.tokenizer, int(self.params["top_k"]))
            return replacer.sample(rng, scorer.prompt, mask)
        return scorer.replacements.sample(rng, scorer.prompt, mask, replacement)

    def _hallucination(
        self, case: PublicCase, scorer: Scorer, perturbed: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Per perturbed prompt: the target probability, or the share of sampled responses that hallucinate."""
        samples = int(self.params["samples"])
        temperature = float(self.params["temperature"])
        if samples <= 0:
            return scorer.target_prob(perturbed)
        if not self._text_mode(case):
            return scorer.sampled_hallucination(perturbed, rng, samples, temperature)
        rows = np.repeat(perturbed, samples, axis=0)
        generated = scorer.generate(rows, rng, new_tokens=int(self.params["max_new_tokens"]), temperature=temperature)
        texts = scorer.decode(_until_end(generated, getattr(scorer.tokenizer, "eos_token_id", None)))
        return contains_target(texts, case.target_text).astype(np.float64).reshape(-1, samples).mean(1)


def _until_end(generated: np.ndarray, eos: int | None) -> np.ndarray:
    """Every token after a response's first end-of-sequence made that token too, so decoding (which skips
    special tokens) reads each response only up to where ``model.generate`` would have stopped."""
    generated = np.asarray(generated)
    if eos is None:
        return generated
    ended = np.cumsum(generated == eos, axis=1) > 0
    return np.where(ended, eos, generated)


class ShrunkSAT(SAT):
    name = "sat_shrunk"
    code = None  # ours: halbench/methods/sat.py
    description = (
        "SAT with support-weighted scores: each subsequence's mean hallucination is shrunk toward the "
        "overall mean by a few pseudo-prompts, so rarely-seen long subsequences stop outranking the cause."
    )
    defaults: ClassVar[dict[str, Any]] = {**SAT.defaults, "shrinkage": 32.0}
