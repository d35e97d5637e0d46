"""Running a submission: the standard evaluation of its method on every task and budget.

Results go to ``<submission>/results/`` in exactly the layout of the benchmark's
``results/`` (``<task>/<slug>/budget-<B>.cases.jsonl`` and ``.json``), written by
the same :func:`halbench.runner.evaluate`: per-case failures (a crash, NaN, a
budget overrun) fail only that case, and an interrupted run resumes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from halbench.runner import EvalConfig, MetricMemo, evaluate, result_paths
from halbench.submissions.loader import Submission, activate
from halbench.submissions.spec import SubmissionError
from halbench.tasks.bundle import load_bundle
from halbench.tasks.registry import resolve, task_names

BUDGETS = (64, 256, 1024)
# Summary fields that must match for stored per-case records to be reused when resuming.
RESUME_KEYS = ("task_hash", "split", "params", "seed", "refills")


def run_submission(
    sub: Submission,
    tasks: Sequence[str] | None = None,
    budgets: Sequence[int] = BUDGETS,
    split: str = "test",
    limit: int | None = None,
    device: str = "auto",
    seed: int = 0,
    progress: bool = True,
) -> list[dict]:
    """Evaluate ``sub`` on each task (default: all) at each budget; returns the summaries written."""
    activate(sub)
    refs = [resolve(name) for name in (tasks or task_names())]
    params = dict(sub.spec.hyperparameters)
    summaries = []
    for ref in refs:
        bundle, memo = load_bundle(ref.artifacts, device=device), MetricMemo()
        for budget in budgets:
            config = EvalConfig(sub.slug, params, split, limit, budget, seed, out=sub.results)
            _check_resumable(sub, config, bundle.name, bundle.manifest["content_hash"])
            summaries.append(evaluate(bundle, config, progress=progress, memo=memo))
    return summaries


def _check_resumable(sub: Submission, config: EvalConfig, task: str, task_hash: str) -> None:
    """Refuse to mix new cases with records made under another task version, split, seed or parameters."""
    _, summary_path = result_paths(config, task)
    if not summary_path.is_file():
        return
    old = json.loads(summary_path.read_text(encoding="utf-8"))
    now = {
        "task_hash": task_hash,
        "split": config.split,
        "params": {**sub.method_cls.defaults, **config.params},
        "seed": config.seed,
        "refills": config.refills,
    }
    changed = [key for key in RESUME_KEYS if old.get(key) != now[key]]
    if changed:
        raise SubmissionError(
            f"{summary_path}: {', '.join(changed)}: differ from this run; delete "
            f"{summary_path.parent} to start that task afresh"
        )
