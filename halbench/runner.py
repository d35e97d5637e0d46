"""Running one method on one task at one budget: per-case records, resumable, then aggregates.

Per-case results are appended to a JSONL file one flushed line at a time, so a
killed run loses at most the case in flight; running again skips every case
already recorded (a torn last line is dropped). A method that raises, returns
an invalid attribution or exceeds its budget fails that case, with the reason,
and the run goes on. Aggregates are written atomically at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from halbench.atomic import atomic_write_json
from halbench.methods.base import Method, get_method
from halbench.metrics import METRICS, bootstrap_ci, localization_metrics
from halbench.metrics.faithfulness import case_draws, faithfulness_metrics
from halbench.tasks.artifacts import library_versions
from halbench.tasks.bundle import TaskBundle


@dataclass
class EvalConfig:
    method: str
    params: dict = field(default_factory=dict)
    split: str = "test"
    limit: int | None = None
    budget: int = 1024
    seed: int = 0
    refills: int = 32
    out: Path = Path("results")


def result_paths(config: EvalConfig, task: str) -> tuple[Path, Path]:
    stem = Path(config.out) / task / config.method / f"budget-{config.budget}"
    return stem.with_suffix(".cases.jsonl"), stem.with_suffix(".json")


def read_done(path: Path) -> list[dict]:
    """Records already written; a torn (unparseable) last line from a killed run is dropped and truncated."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    records, good_bytes = [], 0
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
        good_bytes += len(line.encode("utf-8"))
    if good_bytes != path.stat().st_size:
        with open(path, "r+b") as handle:
            handle.truncate(good_bytes)
    return records


class MetricMemo:
    """Faithfulness rows already scored, per case, for one task, seed and refill count.

    Share one across the methods and budgets of a task in one process: a kept set is scored once.
    """

    def __init__(self) -> None:
        self._cases: dict[tuple, dict] = {}

    def for_case(self, case_id: str, config: EvalConfig) -> dict:
        return self._cases.setdefault((case_id, config.seed, config.refills), {})


def score_case(
    method: Method, bundle: TaskBundle, record: dict, config: EvalConfig, memo: MetricMemo | None = None
) -> dict:
    scorer = bundle.scorer(record, budget=config.budget)
    rng = np.random.default_rng([config.seed, zlib.crc32(record["id"].encode())])
    out: dict = {"id": record["id"]}
    start = time.perf_counter()
    try:
        attribution = method.attribute(scorer.case, scorer, rng)
        attribution.validate(scorer.case)
    except Exception as exc:  # a method's failure is that case's failure, not the run's
        out.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
        return out
    finally:
        out["cost"] = {**scorer.cost.as_record(), "seconds": round(time.perf_counter() - start, 4)}
    scores = np.asarray(attribution.scores, dtype=np.float64)
    evaluator = bundle.scorer(record, budget=None)
    metrics = localization_metrics(scores, record["causes"], record["editable"])
    draws = case_draws(evaluator, config.refills, config.seed)
    case_memo = None if memo is None else memo.for_case(record["id"], config)
    metrics.update(faithfulness_metrics(scores, evaluator, draws, case_memo))
    out.update(status="ok", scores=[round(float(s), 6) for s in scores], metrics=metrics)
    if attribution.subsequence is not None:
        out["subsequence"] = [int(p) for p in attribution.subsequence]
    return out


def aggregate(records: list[dict], seed: int) -> dict:
    ok = [r for r in records if r["status"] == "ok"]
    metrics = {}
    for name in METRICS:
        values = [r["metrics"][name] for r in ok if name in r["metrics"]]
        if values:
            mean, low, high = bootstrap_ci(values, seed=seed)
            metrics[name] = {"mean": round(mean, 6), "low": round(low, 6), "high": round(high, 6), "n": len(values)}
    costs = {
        k: round(float(np.mean([r["cost"][k] for r in records])), 4) if records else 0.0
        for k in ("forward_rows", "backward_rows", "rows", "seconds")
    }
    failures = {r["id"]: r["reason"] for r in records if r["status"] != "ok"}
    return {
        "cases": len(records),
        "ok": len(ok),
        "failed": len(failures),
        "failures": failures,
        "metrics": metrics,
        "cost": costs,
    }


def git_revision() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).parent
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def evaluate(bundle: TaskBundle, config: EvalConfig, progress: bool = True, memo: MetricMemo | None = None) -> dict:
    """Evaluate ``config.method`` on ``bundle``'s split, resuming from earlier per-case records."""
    method = get_method(config.method, **config.params)
    cases_path, summary_path = result_paths(config, bundle.name)
    cases_path.parent.mkdir(parents=True, exist_ok=True)
    records = read_done(cases_path)
    done = {r["id"] for r in records}
    todo = bundle.cases(config.split)[: config.limit]
    with open(cases_path, "a", encoding="utf-8") as handle:
        for record in tqdm(
            todo,
            desc=f"{config.method} on {bundle.name} @{config.budget}",
            disable=not progress,
            leave=False,
            initial=len(done & {r["id"] for r in todo}),
        ):
            if record["id"] in done:
                continue
            result = score_case(method, bundle, record, config, memo)
            handle.write(json.dumps(result, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            records.append(result)
    wanted = {r["id"] for r in todo}
    records = [r for r in records if r["id"] in wanted]
    summary = {
        "task": bundle.name,
        "task_hash": bundle.manifest["content_hash"],
        "split": config.split,
        "method": config.method,
        "params": method.params,
        "kind": method.kind,
        "budget": config.budget,
        "seed": config.seed,
        "refills": config.refills,
        "limit": config.limit,
        "device": str(next(bundle.model.parameters()).device),
        "versions": library_versions(),
        "git_revision": git_revision(),
        **aggregate(records, config.seed),
    }
    atomic_write_json(summary_path, summary)
    return summary
