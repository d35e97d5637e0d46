"""Scoring one case with one method at one budget, and aggregating records into a summary.

A method that raises (``SystemExit`` included), returns an invalid attribution
or exceeds its budget fails that case, with the reason, and the run goes on;
bad case data fails that case too. Only ``KeyboardInterrupt`` stops a run,
which then resumes where it stopped (see :mod:`halbench.sweep`).
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field

import numpy as np

from halbench.methods.base import Method
from halbench.metrics import METRICS, localization_metrics
from halbench.metrics.aggregate import bootstrap_ci
from halbench.metrics.faithfulness import case_draws, faithfulness_metrics
from halbench.tasks.bundle import TaskBundle

REFILLS = 16


@dataclass
class EvalConfig:
    method: str
    params: dict = field(default_factory=dict)
    split: str = "test"
    limit: int | None = None
    budget: int = 64
    seed: int = 0
    refills: int = REFILLS
    lm_refills: int = 0  # model-filled refills for s_rep_lm (0: not computed)


class MetricMemo:
    """Faithfulness rows already scored, per case, for one task instance, seed and refill count.

    Share one across the methods and budgets of an instance: a kept set is scored once, and the
    per-case refill draws (one model forward each) are drawn once.
    """

    def __init__(self) -> None:
        self._cases: dict[tuple, dict] = {}

    def for_case(self, case_id: str, config: EvalConfig) -> dict:
        return self._cases.setdefault((case_id, config.seed, config.refills, config.lm_refills), {})


def case_problems(record: dict, vocab: int) -> list[str]:
    """Why a case cannot be scored (empty when it can): positions or ids out of range, missing fields."""
    try:
        n = len(record["prompt_ids"])
        ids = [int(i) for i in record["prompt_ids"]] + [int(i) for i in record["target_ids"]]
        editable = [int(p) for p in record["editable"]]
        causes = [[int(p) for p in alt] for alt in record["causes"]]
    except (KeyError, TypeError, ValueError) as exc:
        return [f"malformed case data ({type(exc).__name__}: {exc})"]
    out = []
    if not record["target_ids"]:
        out.append("empty target")
    if any(not 0 <= i < vocab for i in ids):
        out.append(f"a token id is outside the model's vocabulary of {vocab}")
    if any(not 0 <= p < n for p in editable):
        out.append("an editable position lies outside the prompt")
    if any(not alt or any(p not in set(editable) for p in alt) for alt in causes):  # none: no ground truth
        out.append("a cause position lies outside the prompt's editable positions")
    return out


def stored_scores(scores) -> np.ndarray:
    """Scores as stored: 6 significant digits. Metrics are computed from these, so anyone can recompute them."""
    return np.array([float(f"{float(s):.6g}") for s in np.asarray(scores, dtype=np.float64)])


def case_rng(seed: int, case_id: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(case_id.encode())])


def score_case(
    method: Method, bundle: TaskBundle, record: dict, config: EvalConfig, memo: MetricMemo | None = None
) -> tuple[dict, float]:
    """The case's record (scores, metrics, rows spent, or the failure reason) and the seconds it took."""
    out: dict = {"id": record["id"]}
    start = time.perf_counter()
    problems = case_problems(record, bundle.model.get_input_embeddings().num_embeddings)
    if problems:
        out.update(status="failed", reason="invalid case: " + "; ".join(problems), cost={"rows": 0})
        return out, 0.0
    scorer = bundle.scorer(record, budget=config.budget)
    try:
        attribution = method.attribute(scorer.case, scorer, case_rng(config.seed, record["id"]))
        attribution.validate(scorer.case)
    except (Exception, SystemExit) as exc:  # a method's failure is that case's failure, not the run's
        out.update(status="failed", reason=f"{type(exc).__name__}: {exc}"[:500])
        return out, time.perf_counter() - start
    finally:
        out["cost"] = {k: v for k, v in scorer.cost.as_record().items() if k != "seconds"}
    seconds = time.perf_counter() - start
    scores = stored_scores(attribution.scores)
    evaluator = bundle.scorer(record, budget=None)
    # cases without causes (external tasks without ground truth) get the ground-truth-free metrics only
    metrics = localization_metrics(scores, record["causes"], record["editable"]) if record["causes"] else {}
    case_memo = {} if memo is None else memo.for_case(record["id"], config)
    if "draws" not in case_memo:
        case_memo["draws"] = case_draws(evaluator, config.refills, config.seed, config.lm_refills)
    metrics.update(faithfulness_metrics(scores, evaluator, case_memo["draws"], case_memo))
    out.update(status="ok", scores=scores.tolist(), metrics=metrics)
    if attribution.subsequence is not None:
        out["subsequence"] = [int(p) for p in attribution.subsequence]
    return out, seconds


def worst(metric: str) -> float:
    info = METRICS[metric]
    return info.low if info.direction == "higher" else info.high


def case_value(record: dict, metric: str) -> float:
    """A record's value of ``metric``; a failed case, or a missing or non-finite value, counts at the worst value.

    The one rule for failures: summaries (:func:`aggregate`) and boards (:mod:`halbench.leaderboard`) both use it.
    """
    value = (record.get("metrics") or {}).get(metric) if record.get("status") == "ok" else None
    return float(value) if isinstance(value, int | float) and np.isfinite(value) else worst(metric)


def aggregate(records: list[dict], seed: int, seconds: dict[str, float] | None = None) -> dict:
    """Means with bootstrap intervals. A failed case counts at each metric's worst value (:func:`case_value`)."""
    ok = [r for r in records if r.get("status") == "ok"]
    metrics = {}
    for name in METRICS:
        if not any(name in r.get("metrics", {}) for r in ok):
            continue
        values = [case_value(r, name) for r in records]
        mean, low, high = bootstrap_ci(values, seed=seed)
        metrics[name] = {"mean": round(mean, 6), "low": round(low, 6), "high": round(high, 6), "n": len(values)}
    costs = {
        k: round(float(np.mean([r.get("cost", {}).get(k, 0) for r in records])), 4) if records else 0.0
        for k in ("forward_rows", "backward_rows", "rows")
    }
    costs["seconds"] = round(float(np.mean(list(seconds.values()))), 4) if seconds else 0.0
    failures = {r["id"]: r.get("reason", "?") for r in records if r.get("status") != "ok"}
    return {
        "cases": len(records),
        "ok": len(ok),
        "failed": len(failures),
        "failures": failures,
        "metrics": metrics,
        "cost": costs,
    }
