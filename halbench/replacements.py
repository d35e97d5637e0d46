"""Replacement strategies for perturbations, shared by every method and by the metrics.

Only strategies that exist for any real model are offered: ``unigram`` (the
training corpus's token frequencies, shipped with each model; uniform where a
model comes without them), ``uniform`` over the vocabulary, ``neighbours``
(for each token its ``k`` nearest tokens by cosine similarity of input
embeddings, as the SAT paper does) and ``mask`` (the tokenizer's mask or unk
token). The verifier's neutral filler pool is not among them: a method that
perturbed exactly as the verifier does would agree with the ground truth by
construction.
"""

from __future__ import annotations

import numpy as np
import torch

STRATEGIES = ("unigram", "uniform", "neighbours", "mask")
DEFAULT = "unigram"


class Replacements:
    """Draws replacement tokens; ``pool`` is every ordinary (non-special) token id."""

    def __init__(
        self,
        embedding: torch.Tensor,
        pool: list[int],
        unigram: np.ndarray | None = None,
        mask_id: int | None = None,
        k: int = 8,
        default: str = DEFAULT,
    ):
        if default not in STRATEGIES:
            raise ValueError(f"unknown replacement strategy {default!r} (one of {', '.join(STRATEGIES)})")
        self.pool = np.asarray(sorted(pool), dtype=np.int64)
        if len(self.pool) < 2:
            raise ValueError("a replacement pool needs at least two ordinary tokens")
        weights = None if unigram is None else np.asarray(unigram, dtype=np.float64)[self.pool]
        if weights is None or not np.isfinite(weights).all() or weights.sum() <= 0:
            weights = np.ones(len(self.pool))
        self.unigram_p = weights / weights.sum()
        self.has_unigram = unigram is not None
        self.mask_id = mask_id
        self.k = min(k, len(self.pool) - 1)
        self.default = default
        self._emb = torch.nn.functional.normalize(embedding.detach().float().cpu(), dim=-1)
        self._cache: dict[int, np.ndarray] = {}
        self._nearest: dict[tuple[int, int], np.ndarray] = {}

    def neighbours(self, token: int) -> np.ndarray:
        """The ``k`` ordinary tokens nearest to ``token`` by cosine similarity of input embeddings."""
        if token not in self._cache:
            sims = self._emb[self.pool] @ self._emb[token]
            sims[torch.as_tensor(self.pool == token)] = -2.0
            top = torch.topk(sims, self.k).indices.numpy()
            self._cache[token] = self.pool[np.sort(top)]
        return self._cache[token]

    @property
    def vocabulary_size(self) -> int:
        """Rows of the input-embedding table (may exceed the tokenizer's length: padded vocabularies)."""
        return self._emb.shape[0]

    def nearest(self, token: int, k: int) -> np.ndarray:
        """The ``k`` ids of the whole vocabulary most similar to ``token`` by cosine, most similar first.

        Unlike :meth:`neighbours`, ``token`` itself and special tokens are ranked too: SAT's reference code
        takes the top ``k`` of the full table and filters afterwards, so its survivors are fewer than ``k``.
        """
        key = (int(token), int(k))
        if key not in self._nearest:
            sims = self._emb @ self._emb[int(token)]
            self._nearest[key] = torch.topk(sims, min(int(k), sims.numel())).indices.numpy().astype(np.int64)
        return self._nearest[key]

    def tokens(self, kind: str | None, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Context-free draws (``unigram``, ``uniform`` or ``mask``) of the given shape."""
        kind = kind or self.default
        if kind == "unigram":
            return self.pool[rng.choice(len(self.pool), size=shape, p=self.unigram_p)]
        if kind == "uniform":
            return self.pool[rng.integers(len(self.pool), size=shape)]
        if kind == "mask":
            if self.mask_id is None:
                raise ValueError("this tokenizer has no mask or unk token; use another replacement")
            return np.full(shape, self.mask_id, dtype=np.int64)
        raise ValueError(f"unknown replacement strategy {kind!r} (one of {', '.join(STRATEGIES)})")

    def sample(
        self, rng: np.random.Generator, prompt: np.ndarray, mask: np.ndarray, kind: str | None = None
    ) -> np.ndarray:
        """Copy of ``prompt`` broadcast to ``mask``'s shape with masked positions replaced."""
        kind = kind or self.default
        mask = np.asarray(mask, dtype=bool)
        rows = np.broadcast_to(np.asarray(prompt, dtype=np.int64), mask.shape).copy()
        if kind != "neighbours":
            draws = self.tokens(kind, rng, mask.shape)
            rows[mask] = draws[mask]
            return rows
        for pos in np.nonzero(mask.any(0))[0]:
            options = self.neighbours(int(prompt[pos]))
            draws = options[rng.integers(len(options), size=mask.shape[0])]
            rows[mask[:, pos], pos] = draws[mask[:, pos]]
        return rows
