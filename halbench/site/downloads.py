"""The site's raw-data downloads: every summary as JSON, and the summaries and per-case records as CSV."""

from __future__ import annotations

import csv
import io
import json

from halbench.metrics import METRICS
from halbench.results import ResultStore

SUMMARY_COLUMNS = ("task", "method", "source", "status", "budget", "cases", "ok", "failed", "rows", "seconds")


def results_json(store: ResultStore, statuses: dict[str, str]) -> str:
    """Every stored summary (with provenance), tagged with its source and verification status."""
    out = [
        {**e.summary, "source": e.source, "status": statuses.get(e.method, "built-in")}
        for e in sorted(store.entries, key=lambda e: (e.task, e.method, e.budget))
    ]
    return json.dumps(out, indent=1, sort_keys=True) + "\n"


def summaries_csv(store: ResultStore, statuses: dict[str, str]) -> str:
    metric_cols = [f"{m}_{part}" for m in METRICS for part in ("mean", "low", "high")]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*SUMMARY_COLUMNS, *metric_cols, "task_hash"])
    for e in sorted(store.entries, key=lambda e: (e.task, e.method, e.budget)):
        s = e.summary
        head = [e.task, e.method, e.source, statuses.get(e.method, "built-in"), e.budget, s["cases"], s["ok"]]
        head += [s["failed"], s["cost"].get("rows"), s["cost"].get("seconds")]
        values = [s["metrics"].get(m, {}).get(part, "") for m in METRICS for part in ("mean", "low", "high")]
        writer.writerow([*head, *values, s["task_hash"]])
    return buffer.getvalue()


def cases_csv(store: ResultStore) -> str:
    """One row per (task, method, budget, case): status, every metric, cost."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["task", "method", "budget", "case", "status", *METRICS, "rows", "seconds", "reason"])
    for e in sorted(store.entries, key=lambda e: (e.task, e.method, e.budget)):
        for case_id, r in sorted(e.records.items()):
            metrics = r.get("metrics", {})
            cost = r.get("cost", {})
            writer.writerow(
                [
                    e.task,
                    e.method,
                    e.budget,
                    case_id,
                    r.get("status"),
                    *(metrics.get(m, "") for m in METRICS),
                    cost.get("rows", ""),
                    cost.get("seconds", ""),
                    r.get("reason", ""),
                ]
            )
    return buffer.getvalue()
