"""Interventional verification: a case is admitted only if its planted cause is the cause.

Each check refills a set of positions with random neutral filler, ``refills``
times, and counts how often the model's greedy answer is (or is not) the
hallucinated target. Besides necessity, sufficiency, minimality, redundancy
and decoy inertness, two checks guard the ground truth itself: *stability*
(refilling a random half of the incidental positions, neither cause nor the
entity or stated fact, keeps the hallucination, so it does not hinge on
incidental filler, as it does in coin-flip cases) and
*specificity* (refilling every editable position removes it, so sufficiency
is not the model's prior answer). All rows of many candidates go through the model in a
few large batches. Refill draws are seeded per case, so a stored case can be
re-verified exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from halbench.tasks.forward import last_logits
from halbench.tasks.spec import VerificationSpec

CHECKS = ("necessity", "sufficiency", "minimality", "redundancy", "decoy_inert", "stability", "specificity")


@dataclass
class Candidate:
    """A prompt with its claimed causes; what the verifier needs and nothing more."""

    prompt_ids: list[int]
    target_id: int
    faithful_id: int | None
    causes: list[list[int]]
    editable: list[int]
    decoys: list[int] = field(default_factory=list)
    entity: list[int] = field(default_factory=list)  # evidence for the faithful answer (entity, stated fact)
    seed: tuple[int, ...] = (0,)


@dataclass
class Verdict:
    p_target: float
    p_faithful: float | None
    greedy: bool
    rates: dict[str, float | None]
    failed: list[str]

    @property
    def passed(self) -> bool:
        return not self.failed

    def as_record(self) -> dict:
        return {
            "p_target": round(self.p_target, 6),
            "p_faithful": None if self.p_faithful is None else round(self.p_faithful, 6),
            "greedy_is_target": self.greedy,
            **self.rates,
        }


@dataclass
class _Block:
    check: str
    rows: np.ndarray  # [R, L]
    want_target: bool  # success means the greedy answer IS the target


def _refill(base: np.ndarray, positions: list[int], n: int, neutral: np.ndarray, rng) -> np.ndarray:
    rows = np.repeat(base[None, :], n, axis=0)
    if positions:
        rows[:, positions] = neutral[rng.integers(len(neutral), size=(n, len(positions)))]
    return rows


def plan_blocks(cand: Candidate, refills: int, neutral: np.ndarray) -> list[_Block]:
    """The intervention rows for one candidate, in a fixed order (this order seeds the draws)."""
    base = np.asarray(cand.prompt_ids, dtype=np.int64)
    rng = np.random.default_rng(list(cand.seed))
    union = sorted({p for alt in cand.causes for p in alt})
    blocks = [_Block("necessity", _refill(base, union, refills, neutral, rng), False)]
    for alt in cand.causes:
        others = [p for p in cand.editable if p not in set(alt)]
        blocks.append(_Block("sufficiency", _refill(base, others, refills, neutral, rng), True))
    for a, alt in enumerate(cand.causes):
        rest = [p for b, other in enumerate(cand.causes) if b != a for p in other]
        if len(alt) > 1:
            for p in alt:
                blocks.append(_Block("minimality", _refill(base, [p, *rest], refills, neutral, rng), False))
    if len(cand.causes) > 1:
        for alt in cand.causes:
            blocks.append(_Block("redundancy", _refill(base, list(alt), refills, neutral, rng), True))
    if cand.decoys:
        blocks.append(_Block("decoy_inert", _refill(base, list(cand.decoys), refills, neutral, rng), True))
    incidental = [p for p in cand.editable if p not in set(union) | set(cand.entity)]
    blocks.append(_Block("stability", _refill_some(base, incidental, refills, neutral, rng), True))
    blocks.append(_Block("specificity", _refill(base, list(cand.editable), refills, neutral, rng), False))
    return blocks


def _refill_some(base: np.ndarray, positions: list[int], n: int, neutral: np.ndarray, rng) -> np.ndarray:
    """Refill a random half (each position by a coin flip) of ``positions`` in each row."""
    rows = _refill(base, positions, n, neutral, rng)
    keep = rng.random((n, len(positions))) < 0.5
    if positions:
        rows[:, positions] = np.where(keep, base[positions][None, :], rows[:, positions])
    return rows


def verify(
    model: torch.nn.Module,
    candidates: list[Candidate],
    spec: VerificationSpec,
    neutral_ids: list[int],
    batch_rows: int = 1024,
) -> list[Verdict]:
    """Verify candidates together: one batched pass over all their intervention rows."""
    neutral = np.asarray(neutral_ids, dtype=np.int64)
    plans = [plan_blocks(c, spec.refills, neutral) for c in candidates]
    rows: list[list[int]] = [c.prompt_ids for c in candidates]
    for blocks in plans:
        for block in blocks:
            rows.extend(block.rows.tolist())
    logits = last_logits(model, rows, batch_rows)
    greedy_all = logits.argmax(-1).numpy()
    probs = torch.softmax(logits[: len(candidates)], -1)
    verdicts, cursor = [], len(candidates)
    for i, (cand, blocks) in enumerate(zip(candidates, plans, strict=True)):
        outcomes: dict[str, list[float]] = {}
        for block in blocks:
            hits = greedy_all[cursor : cursor + len(block.rows)] == cand.target_id
            cursor += len(block.rows)
            rate = float(np.mean(hits if block.want_target else ~hits))
            outcomes.setdefault(block.check, []).append(rate)
        rates = {name: (min(outcomes[name]) if name in outcomes else None) for name in CHECKS}
        p_faith = None if cand.faithful_id is None else float(probs[i, cand.faithful_id])
        greedy = bool(greedy_all[i] == cand.target_id)
        failed = ([] if greedy else ["greedy"]) + [
            name for name in CHECKS if rates[name] is not None and rates[name] < getattr(spec, name)
        ]
        verdicts.append(Verdict(float(probs[i, cand.target_id]), p_faith, greedy, rates, failed))
    return verdicts
