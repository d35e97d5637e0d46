"""The leaderboard: boards per scope (all tasks or one), ranked on the suite's own case set.

Rules, in one place:

- **The case set is the suite's**, read from the built task instances (every test case of every
  instance in scope), never the intersection of what methods happened to record: an incomplete or
  broken entry cannot shrink anyone else's board.
- **A failed or missing case counts at the metric's worst value** (the same rule as every summary).
- **The headline** is average precision averaged over the budgets 16, 64 and 256 rows per case (the
  area under AP against log-budget), per case, then averaged over cases, models and tasks.
- **Intervals** come from a hierarchical bootstrap (models, then mechanisms, then cases; see
  :mod:`halbench.metrics.hierarchical`), and two methods share a rank when the paired interval of
  their difference contains zero.
- **Only complete, trusted entries are ranked**: every case of the scope at every budget, and either
  built-in or verified. Others are listed apart with the reason. Leak probes are never ranked; they
  are shown in the sanity panel beside ``random``.
- Nothing here executes code from a submission: it reads result files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from halbench.metrics import METRICS
from halbench.metrics.hierarchical import Bootstrap, Interval, Unit, kendall_tau
from halbench.results import Entry, ResultStore
from halbench.runner import case_value
from halbench.tasks.artifacts import CASES, ManifestError, read_cases

BUDGETS = (16, 64, 256)
HEADLINE = "average_precision"
HEADLINE_LABEL = "AP (mean over 16/64/256 rows)"
TRUSTED = ("built-in", "verified")
PROBE_KIND = "probe"


@dataclass
class SuiteIndex:
    """The test cases of every built instance, in order, with the units the bootstrap resamples."""

    cases: dict[str, list[str]]  # instance -> case ids
    units: dict[str, list[Unit]]  # instance -> one unit per case
    problems: list[str] = field(default_factory=list)

    def tasks(self) -> list[str]:
        return sorted({i.split("/")[0] for i in self.cases})

    def instances(self, scope: str = "all") -> list[str]:
        return sorted(i for i in self.cases if scope == "all" or i.split("/")[0] == scope)


def suite_index(tasks_root: Path, instances: list[str], split: str = "test") -> SuiteIndex:
    """Read each instance's case list; an instance that cannot be read is reported and left out."""
    index = SuiteIndex({}, {})
    for name in instances:
        task, model = name.split("/", 1)
        try:
            records = [r for r in read_cases(Path(tasks_root) / task / model / CASES) if r.get("split") == split]
        except ManifestError as exc:
            index.problems.append(str(exc))
            continue
        index.cases[name] = [r["id"] for r in records]
        index.units[name] = [
            Unit(task, model, f"{model}|{'+'.join(r.get('mechanisms') or [r['id']])}") for r in records
        ]
    return index


@dataclass
class Row:
    method: str
    kind: str
    source: str
    status: str  # built-in, verified, unverified, failed
    ranked: bool = False
    reason: str = ""  # why a row is not ranked
    rank: int = 0
    tied: bool = False
    headline: Interval | None = None
    metrics: dict[int, dict[str, Interval]] = field(default_factory=dict)  # budget -> metric -> interval
    rows: dict[int, float] = field(default_factory=dict)  # budget -> mean rows actually spent per case
    seconds: dict[int, float] = field(default_factory=dict)
    coverage: dict[int, float] = field(default_factory=dict)  # budget -> share of the scope's cases recorded
    failed: dict[int, int] = field(default_factory=dict)


@dataclass
class Board:
    scope: str
    budgets: tuple[int, ...]
    instances: list[str]
    cases: int
    rows: list[Row]  # ranked rows first, in rank order; then unranked rows; then probes

    @property
    def ranked(self) -> list[Row]:
        return [r for r in self.rows if r.ranked]

    @property
    def unranked(self) -> list[Row]:
        return [r for r in self.rows if not r.ranked and r.kind != PROBE_KIND]

    @property
    def probes(self) -> list[Row]:
        return [r for r in self.rows if r.kind == PROBE_KIND]


def case_values(entries: dict[str, Entry | None], index: SuiteIndex, instances: list[str], metric: str) -> np.ndarray:
    """Per-case values of ``metric`` over the scope's cases; failures and gaps at the worst value."""
    out = []
    for name in instances:
        records = entries[name].records if entries.get(name) is not None else {}
        out += [case_value(records.get(case_id) or {}, metric) for case_id in index.cases[name]]
    return np.asarray(out, dtype=float)


def _coverage(entries: dict[str, Entry | None], index: SuiteIndex, instances: list[str]) -> float:
    wanted = sum(len(index.cases[i]) for i in instances)
    got = sum(
        sum(1 for cid in index.cases[i] if cid in entries[i].records) for i in instances if entries.get(i) is not None
    )
    return got / wanted if wanted else 0.0


def build_board(
    store: ResultStore,
    index: SuiteIndex,
    scope: str,
    statuses: dict[str, str],
    budgets: tuple[int, ...] = BUDGETS,
    metrics: tuple[str, ...] | None = None,
    n_boot: int = 1000,
) -> Board:
    """The board of ``scope`` ("all" or a task) over ``budgets`` (one budget: that budget's board)."""
    instances = index.instances(scope)
    units = [u for i in instances for u in index.units[i]]
    if not units:
        return Board(scope, budgets, instances, 0, [])
    boot = Bootstrap(units, n_boot=n_boot, seed=0)
    shown = metrics or tuple(METRICS)
    rows, headline_values = [], {}
    for method in store.methods:
        row, values = _row(store, index, boot, instances, method, statuses, budgets, shown)
        if row is not None:
            rows.append(row)
            if row.ranked:
                headline_values[method] = values
    if headline_values:
        ranks = boot.ranks(headline_values, METRICS[HEADLINE].direction)
        counts = {r: list(ranks.values()).count(r) for r in ranks.values()}
        for row in rows:
            if row.method in ranks:
                row.rank, row.tied = ranks[row.method], counts[ranks[row.method]] > 1
    rows.sort(
        key=lambda r: (not r.ranked, r.kind == PROBE_KIND, r.rank, -(r.headline.mean if r.headline else -1), r.method)
    )
    return Board(scope, budgets, instances, len(units), rows)


def _row(store, index, boot, instances, method, statuses, budgets, shown) -> tuple[Row | None, np.ndarray | None]:
    per_budget = {b: {i: store.get(i, method, b) for i in instances} for b in budgets}
    present = [e for entries in per_budget.values() for e in entries.values() if e is not None]
    if not present:
        return None, None
    first = present[0]
    row = Row(method, first.summary.get("kind", "?"), first.source, statuses.get(method, first.source))
    if row.source == "built-in":
        row.status = "built-in"
    headline = []
    for budget, entries in per_budget.items():
        row.coverage[budget] = _coverage(entries, index, instances)
        records = [r for e in entries.values() if e is not None for cid, r in e.records.items()]
        row.rows[budget] = float(np.mean([(r.get("cost") or {}).get("rows", 0) for r in records])) if records else 0.0
        row.seconds[budget] = float(
            np.mean([e.summary.get("cost", {}).get("seconds", 0.0) for e in entries.values() if e is not None] or [0.0])
        )
        row.failed[budget] = sum(r.get("status") != "ok" for r in records)
        row.metrics[budget] = {}
        for metric in shown:
            if any(metric in (r.get("metrics") or {}) for r in records):
                row.metrics[budget][metric] = boot.interval(case_values(entries, index, instances, metric))
        headline.append(case_values(entries, index, instances, HEADLINE))
    values = np.mean(headline, axis=0)
    row.headline = boot.interval(values)
    complete = all(c == 1.0 for c in row.coverage.values())
    if row.kind == PROBE_KIND:
        row.reason = "leak probe (sanity panel)"
    elif not complete:
        row.reason = "incomplete: " + ", ".join(f"{b} rows {c:.0%} of cases" for b, c in row.coverage.items() if c < 1)
    elif row.status not in TRUSTED:
        row.reason = f"{row.status}: run `halbench verify {method}`"
    row.ranked = not row.reason
    return row, values


def per_model_headline(store: ResultStore, index: SuiteIndex, methods: list[str], budgets=BUDGETS) -> dict[str, dict]:
    """``{model: {method: headline mean over that model's instances}}`` (complete entries only)."""
    out: dict[str, dict[str, float]] = {}
    models = sorted({i.split("/", 1)[1] for i in index.cases})
    for model in models:
        instances = [i for i in index.instances() if i.split("/", 1)[1] == model]
        units = [u for i in instances for u in index.units[i]]
        boot_point = Bootstrap(units, n_boot=1, seed=0).point
        for method in methods:
            per_budget = [{i: store.get(i, method, b) for i in instances} for b in budgets]
            if any(_coverage(entries, index, instances) < 1.0 for entries in per_budget):
                continue
            values = np.mean([case_values(e, index, instances, HEADLINE) for e in per_budget], axis=0)
            out.setdefault(model, {})[method] = float(boot_point @ values)
    return out


def model_agreement(per_model: dict[str, dict[str, float]]) -> dict[tuple[str, str], float | None]:
    """Kendall tau between every pair of models' method rankings."""
    models = sorted(per_model)
    return {(a, b): kendall_tau(per_model[a], per_model[b]) for i, a in enumerate(models) for b in models[i + 1 :]}
