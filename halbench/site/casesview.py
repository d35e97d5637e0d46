"""What a case drill-down shows: the prompt once per method, shaded by its scores, against the planted cause."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from halbench.results import ResultStore


@dataclass
class Token:
    text: str
    editable: bool
    cause: bool  # in some alternative cause
    shade: float = 0.0  # 0..1, the method's score rescaled over the editable positions
    top: bool = False  # among the method's top-k (k = size of the smallest cause)
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


def top_k(scores: np.ndarray, editable: list[int], k: int) -> set[int]:
    """The k best editable positions; ties go to the earlier position (display only, not a metric)."""
    order = sorted(editable, key=lambda p: (-scores[p], p))
    return set(order[:k])


def base_tokens(case: dict) -> list[Token]:
    causes = {p for alt in case["causes"] for p in alt}
    editable = set(case["editable"])
    texts = case.get("prompt_tokens") or [str(i) for i in case["prompt_ids"]]
    return [Token(t, i in editable, i in causes) for i, t in enumerate(texts)]


def traces(store: ResultStore, task: str, case: dict, methods: list[str]) -> list[Trace]:
    """Every stored (method, budget) record of ``case``, method by method, cheapest budget first."""
    k = min(len(alt) for alt in case["causes"])
    out: list[Trace] = []
    for method in methods:
        for budget in store.budgets:
            entry = store.get(task, method, budget)
            record = None if entry is None else entry.records.get(case["id"])
            if record is None:
                continue
            tokens = base_tokens(case)
            if record.get("status") == "ok" and len(record.get("scores", [])) == len(tokens):
                scores = np.asarray(record["scores"], dtype=float)
                shade, top = shades(scores, case["editable"]), top_k(scores, case["editable"], k)
                for i, token in enumerate(tokens):
                    token.shade, token.top, token.score = float(shade[i]), i in top, float(scores[i])
            out.append(
                Trace(
                    method,
                    budget,
                    record.get("status", "?"),
                    tokens,
                    record.get("metrics", {}),
                    int(record.get("cost", {}).get("rows", 0)),
                    record.get("reason", ""),
                )
            )
    return out
