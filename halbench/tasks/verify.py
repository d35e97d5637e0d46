"""Interventional verification: a case is admitted only if its planted cause is the cause.

Each check refills a set of positions, ``refills`` times, and counts how often
the model's greedy answer is (or is not) the hallucinated target. Every check
runs under two intervention families, each with its own thresholds:

- ``neutral``: each position takes a neutral word of its own slot category
  (content words of the same category, function words for function words),
  which only the generator knows;
- ``unigram``: each position takes a token drawn from the training corpus's
  unigram frequencies, which anyone with the corpus has.

A cause that holds under both is not an artefact of one refill distribution,
so no attribution method can win merely by perturbing the way the verifier does.

Checks: necessity (refilling the causes removes the hallucination),
sufficiency (keeping one alternative and refilling every other editable
position keeps it), minimality (refilling any one token of a multi-token cause
removes it), redundancy (refilling either alternative alone leaves it),
decoy_inert (refilling the inert distractors leaves it), stability (refilling a
random half of the incidental positions leaves it: no coin-flip cases),
specificity (refilling every editable position removes it, so sufficiency is
not the model's prior answer), and, where a task's thresholds set it, incidental
(refilling any one incidental position alone leaves it: no needed word goes
unnamed, which random halves can miss). All rows of many candidates go through the
model in a few large batches. Draws are seeded per case and family, so a
stored case can be re-verified exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from halbench.tasks.forward import last_logits

CHECKS = (
    "necessity", "sufficiency", "minimality", "redundancy", "decoy_inert", "stability", "specificity", "incidental",
)  # fmt: skip
FAMILIES = ("neutral", "unigram")
OPTIONAL_CHECKS = ("incidental",)  # on only where a task's thresholds set them; unset, left out of records


@dataclass
class Candidate:
    """A prompt with its claimed causes; what the verifier needs and nothing more."""

    prompt_ids: list[int]
    target_id: int
    faithful_id: int | None
    causes: list[list[int]]
    editable: list[int]
    decoys: list[int] = field(default_factory=list)  # inert distractors: decoys, partial parts, reversed copies
    entity: list[int] = field(default_factory=list)  # evidence for the faithful answer (entity, stated fact)
    slots: list[str | None] = field(default_factory=list)  # neutral pool of each position (None: fixed)
    seed: tuple[int, ...] = (0,)


@dataclass
class Refills:
    """The two intervention families: neutral pools by slot, and the corpus unigram."""

    pools: dict[str, np.ndarray]  # pool name -> token ids
    unigram_ids: np.ndarray
    unigram_p: np.ndarray

    @classmethod
    def from_records(cls, neutral: dict[str, list[int]], unigram: list[float]) -> Refills:
        counts = np.asarray(unigram, dtype=np.float64)
        ids = np.flatnonzero(counts > 0)
        return cls(
            {k: np.asarray(v, dtype=np.int64) for k, v in neutral.items()},
            ids.astype(np.int64),
            counts[ids] / counts[ids].sum(),
        )

    def draw(self, family: str, rng: np.random.Generator, slots: list[str | None], positions, n: int) -> np.ndarray:
        """``[n, len(positions)]`` replacement ids for ``positions`` under ``family``."""
        positions = list(positions)
        if family == "unigram":
            return self.unigram_ids[rng.choice(len(self.unigram_ids), size=(n, len(positions)), p=self.unigram_p)]
        out = np.empty((n, len(positions)), dtype=np.int64)
        for j, pos in enumerate(positions):
            pool = self.pools[slots[pos]]
            out[:, j] = pool[rng.integers(len(pool), size=n)]
        return out


@dataclass
class Verdict:
    p_target: float
    p_faithful: float | None
    greedy: bool
    rates: dict[str, dict[str, float | None]]  # family -> check -> rate
    failed: list[str]

    @property
    def passed(self) -> bool:
        return not self.failed

    def as_record(self) -> dict:
        return {
            "p_target": round(self.p_target, 6),
            "p_faithful": None if self.p_faithful is None else round(self.p_faithful, 6),
            "greedy_is_target": self.greedy,
            **{
                family: {c: r for c, r in rates.items() if r is not None or c not in OPTIONAL_CHECKS}
                for family, rates in self.rates.items()
            },
        }


@dataclass
class _Block:
    family: str
    check: str
    rows: np.ndarray  # [R, L]
    want_target: bool  # success means the greedy answer IS the target


class _Planner:
    def __init__(self, cand: Candidate, refills: Refills, family: str, n: int, index: int):
        self.cand, self.refills, self.family, self.n = cand, refills, family, n
        self.base = np.asarray(cand.prompt_ids, dtype=np.int64)
        self.rng = np.random.default_rng([*cand.seed, index])

    def refill(self, positions) -> np.ndarray:
        rows = np.repeat(self.base[None, :], self.n, axis=0)
        positions = list(positions)
        if positions:
            rows[:, positions] = self.refills.draw(self.family, self.rng, self.cand.slots, positions, self.n)
        return rows

    def refill_some(self, positions) -> np.ndarray:
        """Refill a random half (each position by a coin flip) of ``positions`` in each row."""
        rows = self.refill(positions)
        positions = list(positions)
        keep = self.rng.random((self.n, len(positions))) < 0.5
        if positions:
            rows[:, positions] = np.where(keep, self.base[positions][None, :], rows[:, positions])
        return rows

    def block(self, check: str, rows: np.ndarray, want_target: bool) -> _Block:
        return _Block(self.family, check, rows, want_target)


def plan_blocks(cand: Candidate, refills: Refills, n: int, incidental: bool = False) -> list[_Block]:
    """The intervention rows for one candidate, in a fixed order per family (this order seeds the draws).

    The per-position ``incidental`` blocks come last in each family, so the other blocks' draws do not
    depend on whether they are planned."""
    out = []
    for index, family in enumerate(FAMILIES):
        planner = _Planner(cand, refills, family, n, index)
        out += _family_blocks(planner)
        if incidental:
            out += [planner.block("incidental", planner.refill([q]), True) for q in _incidental(cand)]
    return out


def _incidental(cand: Candidate) -> list[int]:
    """Editable positions that are neither a cause nor the entity (distractors included), as stability's."""
    union = {q for alt in cand.causes for q in alt}
    return [q for q in cand.editable if q not in union | set(cand.entity)]


def _family_blocks(p: _Planner) -> list[_Block]:
    cand = p.cand
    union = sorted({q for alt in cand.causes for q in alt})
    blocks = [p.block("necessity", p.refill(union), False)]
    for alt in cand.causes:
        others = [q for q in cand.editable if q not in set(alt)]
        blocks.append(p.block("sufficiency", p.refill(others), True))
    for a, alt in enumerate(cand.causes):
        rest = [q for b, other in enumerate(cand.causes) if b != a for q in other]
        if len(alt) > 1:
            for q in alt:
                blocks.append(p.block("minimality", p.refill([q, *rest]), False))
    if len(cand.causes) > 1:
        for alt in cand.causes:
            blocks.append(p.block("redundancy", p.refill(alt), True))
    if cand.decoys:
        blocks.append(p.block("decoy_inert", p.refill(cand.decoys), True))
    blocks.append(p.block("stability", p.refill_some(_incidental(cand)), True))
    blocks.append(p.block("specificity", p.refill(cand.editable), False))
    return blocks


# Mining's order of checks: those that turn most candidates away first (measured on the committed builds:
# minimality on multi-token causes, then sufficiency, then stability), so a candidate's later rows are
# only run while it is still in the running. Re-verification runs every check (``staged=False``).
STAGES: tuple[tuple[str, str], ...] = (
    ("neutral", "minimality"),
    ("unigram", "minimality"),
    ("unigram", "sufficiency"),
    ("neutral", "sufficiency"),
    ("unigram", "stability"),
    ("neutral", "stability"),
    *((f, c) for c in ("decoy_inert", "redundancy", "necessity", "specificity", "incidental") for f in FAMILIES),
)  # incidental last: one block per incidental position


def verify(
    model: torch.nn.Module,
    candidates: list[Candidate],
    refills: Refills,
    thresholds: dict[str, object],
    n_refills: int,
    batch_rows: int = 512,
    staged: bool = False,
) -> list[Verdict]:
    """Verify candidates together, their intervention rows in large batches.

    ``thresholds`` maps each family to an object with one attribute per check (a ``Thresholds``).
    Every row is drawn up front in the same order, so ``staged`` changes which rows run, never their
    content: staged, the checks run in the order of ``STAGES`` and a candidate's remaining checks are
    skipped once one fails (a passing candidate gets every rate, as unstaged; a failing one only the
    rates reached, its ``failed`` the first failing stage's checks). Mining stages, re-verification does not.
    """
    incidental = all(getattr(thresholds[f], "incidental", None) is not None for f in FAMILIES)
    plans = [plan_blocks(c, refills, n_refills, incidental) for c in candidates]
    logits = last_logits(model, [c.prompt_ids for c in candidates], batch_rows) if candidates else None
    outcomes: list[dict[tuple[str, str], list[float]]] = [{} for _ in candidates]
    failed: list[list[str]] = [[] for _ in candidates]
    for stage in STAGES if staged else (None,):
        todo = [
            (i, b)
            for i, blocks in enumerate(plans)
            if not (staged and failed[i])
            for b in blocks
            if stage is None or (b.family, b.check) == stage
        ]
        _run_blocks(model, todo, candidates, outcomes, batch_rows)
        for i in {i for i, _ in todo}:
            failed[i] = _failures(outcomes[i], thresholds)
    return [_verdict(c, logits, i, outcomes[i], failed[i]) for i, c in enumerate(candidates)]


def _run_blocks(model, todo: list[tuple[int, _Block]], candidates, outcomes, batch_rows: int) -> None:
    """Run the rows of ``todo``'s blocks in one batched pass; append each block's success rate."""
    if not todo:
        return
    rows = [r for _, b in todo for r in b.rows.tolist()]
    greedy = last_logits(model, rows, batch_rows).argmax(-1).numpy()
    cursor = 0
    for i, block in todo:
        hits = greedy[cursor : cursor + len(block.rows)] == candidates[i].target_id
        cursor += len(block.rows)
        outcomes[i].setdefault((block.family, block.check), []).append(
            float(np.mean(hits if block.want_target else ~hits))
        )


def _rates(outcome: dict[tuple[str, str], list[float]]) -> dict[str, dict[str, float | None]]:
    return {f: {c: (min(outcome[f, c]) if (f, c) in outcome else None) for c in CHECKS} for f in FAMILIES}


def _failures(outcome: dict[tuple[str, str], list[float]], thresholds: dict[str, object]) -> list[str]:
    rates = _rates(outcome)
    return [
        f"{family}.{c}"
        for family in FAMILIES
        for c in CHECKS
        if rates[family][c] is not None and rates[family][c] < (getattr(thresholds[family], c, None) or 0.0)
    ]


def _verdict(cand: Candidate, logits: torch.Tensor, i: int, outcome, failed: list[str]) -> Verdict:
    probs = torch.softmax(logits[i], -1)
    greedy = bool(int(logits[i].argmax()) == cand.target_id)
    p_faith = None if cand.faithful_id is None else float(probs[cand.faithful_id])
    return Verdict(
        float(probs[cand.target_id]), p_faith, greedy, _rates(outcome), ([] if greedy else ["greedy"]) + failed
    )
