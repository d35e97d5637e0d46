"""Leak probes: model-free "methods" that would top the board if the suite leaked roles.

They use no model rows. Each learns from the instance's public dev split and scores test
positions from what a leak would expose; on a sound suite they score like ``random``.

- ``dev_lookup``: a token that was a cause in dev scores 1 (test mechanisms share no trigger with dev);
- ``token_form``: a logistic regression over the token's surface and identity (its string's characters,
  its id, its corpus frequency, how often it repeats in the prompt), trained on dev causes.
"""

from __future__ import annotations

import zlib
from typing import ClassVar

import numpy as np
from sklearn.linear_model import LogisticRegression

from halbench.case import DevCase, PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer


class DevLookup(Method):
    name = "dev_lookup"
    description = (
        "Leak probe: scores a position 1 when its token was a cause in the dev split, else 0, ties broken at "
        "random (no rows)."
    )
    kind = "probe"
    uses_dev = True

    def fit(self, dev: list[DevCase], vocabulary: list[str], unigram: np.ndarray | None) -> None:
        self.causal = {case.prompt_ids[p] for case in dev for alt in case.causes for p in alt}

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        causal = getattr(self, "causal", set())
        hits = np.array([1.0 if t in causal else 0.0 for t in case.prompt_ids])
        # random ties: without a hit the probe is the random baseline, not the worst ranking of a constant
        return Attribution(masked_scores(hits + 0.5 * rng.random(case.length), case))


HASH_DIMS = 64


def token_features(ids, strings, unigram: np.ndarray | None, vocab: int) -> np.ndarray:
    """Per token: hashed character 1- and 2-grams of its string, id bits, id, log frequency, repeats."""
    ids = np.asarray(ids, dtype=np.int64)
    bits = max(1, int(vocab - 1).bit_length())
    out = np.zeros((len(ids), HASH_DIMS + bits + 3))
    counts = {int(t): c for t, c in zip(*np.unique(ids, return_counts=True), strict=True)}
    for i, (tid, text) in enumerate(zip(ids, strings, strict=True)):
        grams = [text[j : j + n] for n in (1, 2) for j in range(len(text) - n + 1)]
        for gram in grams:
            out[i, zlib.crc32(gram.encode()) % HASH_DIMS] += 1.0 / max(1, len(grams))
        out[i, HASH_DIMS : HASH_DIMS + bits] = [(int(tid) >> b) & 1 for b in range(bits)]
        out[i, -3] = tid / max(1, vocab)
        out[i, -2] = np.log1p(unigram[tid]) if unigram is not None and tid < len(unigram) else 0.0
        out[i, -1] = counts[int(tid)] - 1
    return out


class TokenForm(Method):
    name = "token_form"
    description = (
        "Leak probe: logistic regression over token strings, ids, corpus frequency and repetition, trained on "
        "dev causes; scores test positions by predicted cause probability (no rows)."
    )
    kind = "probe"
    uses_dev = True
    defaults: ClassVar[dict] = {"C": 1.0}

    def fit(self, dev: list[DevCase], vocabulary: list[str], unigram: np.ndarray | None) -> None:
        self.vocabulary, self.unigram = vocabulary, unigram
        rows, labels = [], []
        for case in dev:
            causal = {p for alt in case.causes for p in alt}
            feats = self._features(case)
            for p in case.editable:
                rows.append(feats[p])
                labels.append(int(p in causal))
        self.model = None
        if len(set(labels)) == 2:
            self.model = LogisticRegression(C=self.params["C"], max_iter=2000).fit(np.array(rows), np.array(labels))

    def _features(self, case: PublicCase) -> np.ndarray:
        vocab = self.vocabulary
        strings = case.prompt_tokens or tuple(vocab[t] if t < len(vocab) else "" for t in case.prompt_ids)
        return token_features(case.prompt_ids, strings, self.unigram, len(self.vocabulary))

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        if getattr(self, "model", None) is None:
            return Attribution(masked_scores(np.zeros(case.length), case))
        return Attribution(masked_scores(self.model.predict_proba(self._features(case))[:, 1], case))
