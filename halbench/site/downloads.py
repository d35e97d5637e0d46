"""The site's raw-data downloads: every summary as JSON and CSV, and every per-case record's metrics as CSV.

They hold exactly the entries the board was built from (after :mod:`halbench.site.inputs` screened
them), each tagged with its source and verification status, so a reader can recompute the board.
"""

from __future__ import annotations

import csv
import io
import json

from halbench.metrics import METRICS
from halbench.results import Entry, ResultStore

SUMMARY_COLUMNS = ("task", "model", "method", "source", "status", "budget", "cases", "ok", "failed", "complete")
COST_COLUMNS = ("rows", "forward_rows", "backward_rows", "seconds")
CASE_COLUMNS = ("task", "model", "method", "source", "budget", "case", "status")


def _ordered(store: ResultStore) -> list[Entry]:
    return sorted(store.entries, key=lambda e: (e.task, e.model, e.method, e.budget))


def results_json(store: ResultStore, statuses: dict[str, str]) -> str:
    """Every stored summary (with its provenance), tagged with its source and verification status."""
    out = [{**e.summary, "source": e.source, "status": statuses.get(e.method, "?")} for e in _ordered(store)]
    return json.dumps(out, indent=1, sort_keys=True) + "\n"


def summaries_csv(store: ResultStore, statuses: dict[str, str]) -> str:
    """One row per (task, model, method, budget): counts, cost per case, each metric's mean and interval."""
    metric_cols = [f"{m}_{part}" for m in METRICS for part in ("mean", "low", "high")]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*SUMMARY_COLUMNS, *COST_COLUMNS, *metric_cols, "task_hash"])
    for e in _ordered(store):
        s = e.summary
        cost = s["cost"] if isinstance(s.get("cost"), dict) else {}
        metrics = s["metrics"] if isinstance(s.get("metrics"), dict) else {}
        head = [e.task, e.model, e.method, e.source, statuses.get(e.method, "?"), e.budget, s.get("cases"), s.get("ok")]
        head += [s.get("failed"), s.get("complete", "")]
        values = [(metrics.get(m) or {}).get(part, "") for m in METRICS for part in ("mean", "low", "high")]
        writer.writerow([*head, *(cost.get(c, "") for c in COST_COLUMNS), *values, s.get("task_hash")])
    return buffer.getvalue()


def cases_csv(store: ResultStore) -> str:
    """One row per (task, model, method, budget, case): status, every metric, rows spent, failure reason."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CASE_COLUMNS, *METRICS, *COST_COLUMNS[:3], "reason"])
    for e in _ordered(store):
        for case_id, r in sorted(e.records.items()):
            metrics = r.get("metrics") if isinstance(r.get("metrics"), dict) else {}
            cost = r.get("cost") if isinstance(r.get("cost"), dict) else {}
            writer.writerow(
                [
                    e.task,
                    e.model,
                    e.method,
                    e.source,
                    e.budget,
                    case_id,
                    r.get("status"),
                    *(metrics.get(m, "") for m in METRICS),
                    *(cost.get(c, "") for c in COST_COLUMNS[:3]),
                    r.get("reason", ""),
                ]
            )
    return buffer.getvalue()
