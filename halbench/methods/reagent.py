"""``reagent``: ReAGent (Zhao and Shan, 2024), recursive attribution by random token replacement.

Each of ``probes`` independent chains keeps logit-scale importances over the editable positions, started
uniformly at random. One step of a chain replaces a random subset of the prompt (each editable position
with probability ``ratio``), measures ``delta = p(target | prompt) - p(target | probe)``, and adds
``logit(d / 2 + 1/2)`` to every position, with ``d = delta`` where the position was replaced and
``d = -delta`` where it was kept: replacing an important token should hurt the target, so positions whose
replacement did not hurt it lose importance. After each update the chain checks its stopping condition:
keep only its ``rational_size`` top-ranked positions, replace all the others, and stop once the model
still predicts the target. The scores are the mean over stopped chains of the softmax of their
importances (as the reference code returns), here as its logarithm so that long runs cannot underflow
to ties; the order is the same.

Deviations from the paper and its reference code (github.com/casszhao/ReAGent, also in inseq):

- Replacements: the original fills replaced positions with a masked LM's (RoBERTa's) or a POS-tag
  sampler's tokens; no extra weights can be fetched here, so they come from the method's
  ``replacement`` strategy (the scorer's default unless set), or, with ``replacement="model"``, from
  the attributed model's own next-token predictions at each position of the original prompt (one
  forward row; ``model_top_k`` most likely ordinary tokens other than the original, sampled by their
  renormalised probabilities). This is the causal analogue of the reference's RoBERTa sampler, which
  predicts each position from its prefix and takes the argmax (``model_top_k=1``).
- Stopping: the reference stops when the target is among the top 3 predictions; the Scorer exposes
  whether greedy decoding reproduces the (possibly multi-token) target, so a chain stops when the target
  is the top prediction at every target position (top-1).
- Only editable positions are ever replaced or ranked (fixed ones cannot be causes); ``rational_size``
  counts editable positions; a probe that would replace nothing is redrawn (it would be a wasted row).
- ``p(target)`` is the teacher-forced probability of the whole target, not only its first token.
- ``|d|`` is clipped just below 1 so that the logit stays finite.
- Budget: the reference runs up to ``max_steps`` steps (2 rows per chain each: the probe and the stopping
  check). Here the chains share the row budget: their number is sized so that each gets ``min_steps``
  steps, stopped chains free their rows for the others, and when fewer rows are left than a full step
  needs, a probe runs without its check. If no chain stopped (the reference would divide by zero), all
  chains are averaged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer

CLIP = 1.0 - 1e-9  # |d| < 1 keeps logit(d / 2 + 1/2) = 2 artanh(d) finite
Sampler = Callable[[np.random.Generator, np.ndarray], np.ndarray]


def update(logits: np.ndarray, replaced: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """One ReAGent update of importances ``[C, E]`` from probes' replaced masks ``[C, E]`` and drops ``[C]``."""
    delta = np.asarray(delta, dtype=np.float64)[:, None]
    signed = np.clip(np.where(replaced, delta, -delta), -CLIP, CLIP)
    return logits + 2.0 * np.arctanh(signed)  # logit(d / 2 + 1/2) = log((1 + d) / (1 - d))


def outside_top(logits: np.ndarray, size: int) -> np.ndarray:
    """``[C, E]`` bool: positions outside each chain's ``size`` top-ranked ones (replaced by the stopping check)."""
    order = np.argsort(-logits, axis=1, kind="stable")
    outside = np.ones(logits.shape, dtype=bool)
    np.put_along_axis(outside, order[:, :size], False, axis=1)
    return outside


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.exp(x - top).sum(axis))


def aggregate(logits: np.ndarray, stopped: np.ndarray) -> np.ndarray:
    """``log`` of the mean over stopped chains (all, if none stopped) of ``softmax(importances)``: ``[E]``."""
    chains = logits[stopped] if stopped.any() else logits
    log_softmax = chains - _logsumexp(chains, 1)[:, None]
    return _logsumexp(log_softmax, 0) - np.log(len(chains))


def probe_masks(rng: np.random.Generator, chains: int, editable: int, ratio: float) -> np.ndarray:
    """``[chains, editable]``: each position replaced with probability ``ratio``; empty masks are redrawn."""
    masks = rng.random((chains, editable)) < ratio
    while editable and not masks.any(1).all():
        empty = ~masks.any(1)
        masks[empty] = rng.random((int(empty.sum()), editable)) < ratio
    return masks


def model_sampler(scorer: Scorer, positions: np.ndarray, top_k: int, fallback: str | None) -> Sampler:
    """Replacements from the model's own next-token predictions on the original prompt (one forward row).

    Position ``p`` draws from the ``top_k`` most likely ordinary tokens after ``prompt[:p]``, its own token
    excluded, by their renormalised probabilities; position 0 has no prefix and uses ``fallback``.
    """
    prompt, pool = scorer.prompt, scorer.replacements.pool
    predicted = positions[positions > 0]
    top_k = min(int(top_k), len(pool) - 1)
    logprobs = scorer.next_token_logprobs()[0][predicted - 1][:, pool]  # row p - 1 predicts position p
    logprobs[pool[None, :] == prompt[predicted][:, None]] = -np.inf
    top = np.argpartition(-logprobs, top_k - 1, axis=1)[:, :top_k]
    top_lp = np.take_along_axis(logprobs, top, 1)
    order = np.argsort(-top_lp, axis=1, kind="stable")
    top, top_lp = np.take_along_axis(top, order, 1), np.take_along_axis(top_lp, order, 1)
    weights = np.exp(top_lp - top_lp[:, :1])
    cdf = np.cumsum(weights / weights.sum(1, keepdims=True), axis=1)
    ids = pool[top]

    def draw(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
        rows = np.broadcast_to(prompt, mask.shape).copy()
        pick = (rng.random((mask.shape[0], len(predicted), 1)) > cdf[None, :, :-1]).sum(-1)
        sub = mask[:, predicted]
        rows[:, predicted] = np.where(sub, ids[np.arange(len(predicted))[None, :], pick], rows[:, predicted])
        if mask[:, 0].any():
            head = np.zeros_like(mask)
            head[:, 0] = mask[:, 0]
            rows[:, 0] = scorer.replacements.sample(rng, prompt, head, fallback)[:, 0]
        return rows

    return draw


class ReAgent(Method):
    name = "reagent"
    paper = "https://arxiv.org/abs/2402.00794"
    code = "https://github.com/casszhao/ReAGent"
    description = (
        "ReAGent: chains of random replacements (ratio 0.3) update logit-scale token importances by the drop in "
        "the target's probability, until keeping only each chain's top-ranked tokens still makes the target the "
        "top prediction or the budget is spent. Replacements come from the replacement strategy, or with "
        "replacement='model' from the model's own next-token predictions, standing in for the original's "
        "masked LM (none can be fetched here)."
    )
    kind = "perturbation"
    defaults: ClassVar[dict[str, Any]] = {
        "replacement": None,
        "ratio": 0.3,
        "rational_size": 5,
        "probes": 8,
        "max_steps": 3000,
        "min_steps": 16,
        "model_top_k": 5,
    }

    def _sampler(self, scorer: Scorer, positions: np.ndarray, rows: int) -> tuple[Sampler, str]:
        kind = self.params["replacement"]
        fallback = None if kind == "model" else kind
        if kind == "model" and rows >= 3 and len(positions):  # the prediction row leaves one probe at least
            return model_sampler(scorer, positions, self.params["model_top_k"], fallback), "model"
        chosen = fallback or scorer.replacements.default
        return (lambda rng, mask: scorer.replacements.sample(rng, scorer.prompt, mask, chosen)), chosen

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        positions = np.asarray(case.editable, dtype=np.int64)
        probes, max_steps = int(self.params["probes"]), int(self.params["max_steps"])
        cap = 2 + 2 * probes * max_steps  # the prediction row, the original, and two rows per chain and step
        if scorer.rows_left(cap) < 2:
            raise ValueError(f"reagent needs at least 2 rows, {scorer.rows_left(cap)} left")
        if not len(positions):
            return Attribution(masked_scores(np.zeros(case.length), case), extras={"chains": 0, "steps": 0})
        draw, kind = self._sampler(scorer, positions, scorer.rows_left(cap))
        chains = int(np.clip((scorer.rows_left(cap) - 1) // (2 * int(self.params["min_steps"])), 1, probes))
        logits = rng.random((chains, len(positions)))
        steps, stopped = np.zeros(chains, dtype=np.int64), np.zeros(chains, dtype=bool)
        p_original, hit_original = None, False
        while True:
            left = scorer.rows_left(cap) - (p_original is None)
            ready = np.flatnonzero(~stopped & (steps < max_steps))
            if not len(ready) or left < 1:
                break
            ready = ready[np.argsort(steps[ready], kind="stable")]
            full = min(len(ready), left // 2)  # chains that get a probe and a stopping check
            chosen = ready[: max(full, 1)]
            replaced = probe_masks(rng, len(chosen), len(positions), float(self.params["ratio"]))
            rows = draw(rng, self._full(replaced, positions, case.length))
            if p_original is None:
                rows = np.vstack([scorer.prompt[None], rows])
            logprob, hits = scorer.target_scores(rows)
            if p_original is None:
                p_original, hit_original, logprob = float(np.exp(logprob[0])), bool(hits[0]), logprob[1:]
            logits[chosen] = update(logits[chosen], replaced, p_original - np.exp(logprob))
            steps[chosen] += 1
            if full:
                stopped[chosen] = self._stops(logits[chosen], positions, case.length, draw, scorer, rng, hit_original)
        scores = np.zeros(case.length)
        scores[positions] = aggregate(logits, stopped)
        extras = {"chains": chains, "steps": int(steps.sum()), "stopped": int(stopped.sum()), "replacement": kind}
        return Attribution(masked_scores(scores, case), extras=extras)

    def _stops(
        self,
        logits: np.ndarray,
        positions: np.ndarray,
        length: int,
        draw: Sampler,
        scorer: Scorer,
        rng: np.random.Generator,
        hit_original: bool,
    ) -> np.ndarray:
        """Per chain: does the target stay the top prediction with only its top-ranked positions kept?"""
        outside = outside_top(logits, int(self.params["rational_size"]))
        rows = draw(rng, self._full(outside, positions, length))
        stop = np.full(len(logits), hit_original)  # nothing outside the top: the prompt itself
        needed = outside.any(1)
        if needed.any():
            stop[needed] = scorer.target_scores(rows[needed])[1]
        return stop

    @staticmethod
    def _full(mask: np.ndarray, positions: np.ndarray, length: int) -> np.ndarray:
        full = np.zeros((len(mask), length), dtype=bool)
        full[:, positions] = mask
        return full
