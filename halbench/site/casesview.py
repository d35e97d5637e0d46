"""What a case drill-down shows: the prompt once per method and budget, shaded by its scores, against the truth.

Every token carries what the legend explains: part of a planted cause (outlined), an inert distractor
(a decoy, one part of a conjunction without its partner, or a reversed copy: verified not to matter),
fixed (no method may edit it), and, per method, its shade and whether it is in the method's top k.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from halbench.results import ResultStore

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
KINDS = {"single": "single trigger word", "pair": "pair of trigger words", "triple": "triple of trigger words"}


@dataclass
class Token:
    text: str
    editable: bool
    cause: bool  # in some alternative cause
    inert: bool  # a verified inert distractor
    shade: float = 0.0  # 0..1, the method's score rescaled over the editable positions
    top: int | None = None  # 1-based place among the method's top k, or None
    score: float | None = None


@dataclass
class Trace:
    method: str
    budget: int
    status: str
    tokens: list[Token]
    metrics: dict
    rows: int
    reason: str = ""


def ordinal(n: int) -> str:
    return ORDINALS[n - 1] if 1 <= n <= len(ORDINALS) else f"{n}th"


def mechanism_text(label: str) -> str:
    """``pair-3`` -> "the model's fourth planted pair of trigger words" (labels count from 0, per model)."""
    match = re.fullmatch(r"([a-z]+)-(\d+)", label)
    if match is None or match.group(1) not in KINDS:
        return "a mechanism label of the task's generator"
    return f"the model's {ordinal(int(match.group(2)) + 1)} planted {KINDS[match.group(1)]}"


def shades(scores: np.ndarray, editable: list[int]) -> np.ndarray:
    """Scores over the editable positions rescaled so the median is blank and the maximum is full.

    Min-max scaling would let one very negative score paint every other token dark; from the median
    up, only what a method ranks in its upper half is shaded, in proportion to its score.
    """
    out = np.zeros(len(scores))
    values = scores[editable]
    if not len(values):
        return out
    middle = float(np.median(values))
    span = values.max() - middle
    if span > 0 and np.isfinite(span):
        out[editable] = np.clip((values - middle) / span, 0.0, 1.0)
    return out


def top_k(scores: np.ndarray, editable: list[int], k: int) -> list[int]:
    """The k best editable positions, best first; ties go to the earlier position (display only, not a metric)."""
    return sorted(editable, key=lambda p: (-scores[p], p))[:k]


def cause_size(case: dict) -> int:
    return min(len(alt) for alt in case["causes"])


def base_tokens(case: dict) -> list[Token]:
    causes = {p for alt in case["causes"] for p in alt}
    editable, inert = set(case["editable"]), set(case.get("decoys") or [])
    texts = case.get("prompt_tokens") or [str(i) for i in case["prompt_ids"]]
    return [Token(str(t), i in editable, i in causes, i in inert) for i, t in enumerate(texts)]


def traces(store: ResultStore, instance: str, case: dict, methods: list[str]) -> list[Trace]:
    """Every stored (method, budget) record of ``case``, method by method, cheapest budget first."""
    k = cause_size(case)
    out: list[Trace] = []
    for method in methods:
        for budget in store.budgets:
            entry = store.get(instance, method, budget)
            record = None if entry is None else entry.records.get(case["id"])
            if record is None:
                continue
            tokens = base_tokens(case)
            scores = record.get("scores") if isinstance(record.get("scores"), list) else []
            if record.get("status") == "ok" and len(scores) == len(tokens):
                values = np.asarray(scores, dtype=float)
                shade = shades(values, case["editable"])
                places = {p: i + 1 for i, p in enumerate(top_k(values, case["editable"], k))}
                for i, token in enumerate(tokens):
                    token.shade, token.top, token.score = float(shade[i]), places.get(i), float(values[i])
            cost = record.get("cost") if isinstance(record.get("cost"), dict) else {}
            out.append(
                Trace(
                    method,
                    budget,
                    str(record.get("status", "?")),
                    tokens,
                    record.get("metrics") if isinstance(record.get("metrics"), dict) else {},
                    int(cost.get("rows", 0) or 0),
                    str(record.get("reason", "")),
                )
            )
    return out
