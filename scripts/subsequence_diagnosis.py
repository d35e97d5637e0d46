#!/usr/bin/env python
"""Why does a tracer win or lose where the cause is a subsequence? Per instance, method and budget, from
committed per-case records and the task's causes:

- AP and P@k (k = cause size), as on the board;
- for methods that return a subsequence (the tracers): its mean length, how often it *is* a cause
  (exact), how often it *contains* one, how often it holds at least one cause position;
- for every method: how often the top-k positions are exactly a cause, and how often they hold only
  *part* of it (the symptom of a per-token method on a conjunction); ties count against the method,
  as in the metrics.

Reads files only (results/ and tasks/); runs no model. Usage:
    python scripts/subsequence_diagnosis.py --task conjunctive --task ordered --method sat --method occlusion
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from halbench.records import read_records
from halbench.tasks.artifacts import read_cases

ROOT = Path(__file__).resolve().parents[1]


def causes_by_id(instance: Path) -> dict[str, list[set[int]]]:
    return {r["id"]: [set(c) for c in r["causes"]] for r in read_cases(instance / "cases.jsonl")}


def summarise(records: list[dict], causes: dict[str, list[set[int]]]) -> dict:
    ok = [r for r in records if r.get("status") == "ok"]
    out = {
        "cases": len(records),
        "ap": float(np.mean([r["metrics"]["average_precision"] for r in ok])) if ok else float("nan"),
        "p@k": float(np.mean([r["metrics"]["precision_at_k"] for r in ok])) if ok else float("nan"),
    }
    exact_top, part_top, sub_len, sub_exact, sub_contains, sub_touches = [], [], [], [], [], []
    for r in ok:
        alts, pk = causes[r["id"]], r["metrics"]["precision_at_k"]  # best alternative, ties against the method
        exact_top.append(pk == 1.0)
        part_top.append(0.0 < pk < 1.0)
        if r.get("subsequence") is not None:
            sub = set(r["subsequence"])
            sub_len.append(len(sub))
            sub_exact.append(any(sub == a for a in alts))
            sub_contains.append(any(a <= sub for a in alts))
            sub_touches.append(any(a & sub for a in alts))
    out["topk_exact"] = float(np.mean(exact_top)) if exact_top else float("nan")
    out["topk_part_only"] = float(np.mean(part_top)) if part_top else float("nan")
    if sub_len:
        out |= {
            "subseq_len": float(np.mean(sub_len)),
            "subseq_exact": float(np.mean(sub_exact)),
            "subseq_contains": float(np.mean(sub_contains)),
            "subseq_touches": float(np.mean(sub_touches)),
        }
    return out


def fmt(value) -> str:
    return "-" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", required=True, help="task name (every built model of it)")
    parser.add_argument("--method", action="append", required=True)
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--tasks", type=Path, default=ROOT / "tasks")
    args = parser.parse_args()
    cols = ["instance", "method", "budget", "cases", "AP", "P@k", "top-k exact", "top-k part only"]
    cols += ["subseq len", "subseq exact", "subseq contains", "subseq touches"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for task in args.task:
        for instance in sorted(p.parent for p in (args.tasks / task).glob("*/cases.jsonl")):
            causes = causes_by_id(instance)
            name = f"{task}/{instance.name}"
            for method in args.method:
                paths = (args.results / name / method).glob("budget-*.cases.jsonl")
                for budget, path in sorted((int(p.name.split("-")[1].split(".")[0]), p) for p in paths):
                    s = summarise(read_records(path)[0], causes)
                    row = [name, method, str(budget), str(s["cases"]), fmt(s["ap"]), fmt(s["p@k"])]
                    row += [fmt(s["topk_exact"]), fmt(s["topk_part_only"])]
                    row += [fmt(s.get(k)) for k in ("subseq_len", "subseq_exact", "subseq_contains", "subseq_touches")]
                    print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
