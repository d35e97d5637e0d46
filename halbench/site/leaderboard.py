"""Leaderboard tables: per scope (all tasks or one) and budget, every metric with its interval, ranks with ties.

Methods are compared on the same cases: a scope keeps the cases every ranked method has a record for.
A failed case counts at the metric's worst value, so failing on hard cases never raises a mean.
The overall scope pools the cases of every task (each task's test split has the same size, so this is
the mean of the per-task means).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from halbench.metrics import METRICS, bootstrap_ci, rank_with_ties
from halbench.results import Entry, ResultStore

HEADLINE = "average_precision"
HEADLINE_BUDGET = 256


@dataclass
class Cell:
    mean: float
    low: float
    high: float


@dataclass
class Row:
    method: str
    kind: str
    source: str
    status: str
    rank: int = 0
    tied: bool = False
    metrics: dict[str, Cell] = field(default_factory=dict)
    rows: float = 0.0
    seconds: float = 0.0
    cases: int = 0
    failed: int = 0


@dataclass
class Board:
    scope: str  # "all" or a task name
    budget: int
    rows: list[Row]
    cases: int
    missing: list[str]  # methods left out for lack of results in this scope


def worst(metric: str) -> float:
    info = METRICS[metric]
    return info.low if info.direction == "higher" else info.high


def case_values(entries: list[Entry], ids: list[tuple[str, str]], metric: str) -> np.ndarray:
    """Per-case values of ``metric`` for (task, case id) pairs; failures and gaps at the worst value."""
    by_task = {e.task: e.records for e in entries}
    out = np.empty(len(ids))
    for i, (task, case) in enumerate(ids):
        record = by_task[task].get(case, {})
        value = record.get("metrics", {}).get(metric) if record.get("status") == "ok" else None
        out[i] = worst(metric) if value is None or not np.isfinite(value) else value
    return out


def build_board(store: ResultStore, scope: str, budget: int, statuses: dict[str, str]) -> Board:
    tasks = store.tasks if scope == "all" else [scope]
    present = {m: [store.get(t, m, budget) for t in tasks] for m in store.methods}
    ranked = {m: entries for m, entries in present.items() if all(e is not None for e in entries)}
    missing = sorted(set(present) - set(ranked))
    if not ranked:
        return Board(scope, budget, [], 0, missing)
    ids = _common_ids(ranked, tasks)
    rows = [_row(method, entries, ids, statuses) for method, entries in ranked.items()]
    if ids:
        values = {r.method: case_values(ranked[r.method], ids, HEADLINE) for r in rows}
        ranks = rank_with_ties(values, METRICS[HEADLINE].direction)
        counts = {rank: list(ranks.values()).count(rank) for rank in ranks.values()}
        for row in rows:
            row.rank, row.tied = ranks[row.method], counts[ranks[row.method]] > 1
    rows.sort(key=lambda r: (r.rank, -r.metrics.get(HEADLINE, Cell(0, 0, 0)).mean, r.method))
    return Board(scope, budget, rows, len(ids), missing)


def _common_ids(ranked: dict[str, list[Entry]], tasks: list[str]) -> list[tuple[str, str]]:
    ids: list[tuple[str, str]] = []
    for i, task in enumerate(tasks):
        common = set.intersection(*(set(entries[i].records) for entries in ranked.values()))
        ids.extend((task, case) for case in sorted(common))
    return ids


def _row(method: str, entries: list[Entry], ids: list[tuple[str, str]], statuses: dict[str, str]) -> Row:
    first = entries[0]
    row = Row(method, first.summary.get("kind", "?"), first.source, statuses.get(method, "built-in"))
    records = [e.records.get(case) for task, case in ids for e in entries if e.task == task]
    records = [r for r in records if r is not None]
    row.cases = len(records)
    row.failed = sum(r.get("status") != "ok" for r in records)
    if records:
        row.rows = float(np.mean([r.get("cost", {}).get("rows", 0) for r in records]))
        row.seconds = float(np.mean([r.get("cost", {}).get("seconds", 0.0) for r in records]))
    for metric in METRICS:
        if not any(metric in r.get("metrics", {}) for r in records):
            continue
        values = case_values(entries, ids, metric)
        if values.size:
            row.metrics[metric] = Cell(*bootstrap_ci(values, seed=0))
    return row
