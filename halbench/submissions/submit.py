"""Running a submission: the standard sweep of its method, sandboxed, on every task instance and budget.

Results go to ``<submission>/results/`` in exactly the layout of the benchmark's ``results/``,
written by the same sweep: per-case failures (a crash, an exit, NaN, a budget overrun, a timeout)
fail only that case, and an interrupted run resumes. The method runs in an isolated worker
(:mod:`halbench.isolation`), never in this process.
"""

from __future__ import annotations

from collections.abc import Sequence

from halbench.submissions.loader import Submission
from halbench.sweep import Job, make_job


def submission_jobs(sub: Submission, budgets: Sequence[int]) -> list[Job]:
    """One job per budget, with the declared hyper-parameters, sourced from the submission folder."""
    return [make_job(sub.slug, dict(sub.spec.hyperparameters), b, source=str(sub.folder)) for b in budgets]
