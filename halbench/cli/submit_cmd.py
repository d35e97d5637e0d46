"""``halbench submit`` and ``halbench verify``: run an outside submission in the sandbox, then re-check it."""

from __future__ import annotations

import re
from pathlib import Path

import click

from halbench.cli.eval_cmd import BUDGETS, HEADERS, instances_for, run_jobs, summary_row, sweep_options
from halbench.submissions.spec import SLUG_PATTERN
from halbench.tasks.registry import REPO_ROOT

TRUST_HELP = "run the submission without bubblewrap, as a plain subprocess (only for code you have read)"


def _load(path: Path):
    from halbench.submissions.loader import load_submission
    from halbench.submissions.spec import SubmissionError

    try:
        return load_submission(path)
    except SubmissionError as exc:
        raise click.ClickException(f"invalid submission:\n{exc}") from None


@click.command("submit")
@click.argument("path", type=click.Path(path_type=Path, exists=True, file_okay=False))
@sweep_options
@click.option("--trust", is_flag=True, help=TRUST_HELP)
def submit(path, tasks, all_, split, limit, budgets, device, seed, executor, workers, address, progress, trust) -> None:
    """Run the submission in PATH (sandboxed) on every task instance and budget; results go to PATH/results/."""
    from halbench.cli.render import table
    from halbench.submissions.submit import submission_jobs

    sub = _load(path)
    instances = instances_for(tasks, all_ or not tasks)
    if limit is not None:
        raise click.UsageError("a submission covers whole splits (the board ranks complete entries only); drop --limit")
    jobs = submission_jobs(sub, budgets or BUDGETS)
    _check_loads(sub, jobs[0], trust)
    summaries = run_jobs(instances, jobs, split, None, seed, sub.results, device, executor, workers, address, progress,
                         trust=trust)  # fmt: skip
    click.echo(table(HEADERS, [summary_row(s) for s in summaries]))
    click.echo(f"results: {sub.results}")
    click.echo(f"next: halbench verify {sub.slug}")


def _check_loads(sub, job, trust: bool) -> None:
    """Load ``method.py`` in its sandbox before any case: a method that cannot load is one clear error, not a
    complete set of failed records (which a later run, after the fix, would resume rather than re-run)."""
    from halbench.isolation.method import IsolationError
    from halbench.sweep import build_method

    try:
        method = build_method(job, trust)  # the sweep's own instance: an in-process sweep reuses its worker
        method._ensure_worker()
    except IsolationError as exc:
        raise click.ClickException(f"{sub.method_file}: {exc}") from None
    except RuntimeError as exc:  # no usable sandbox and not --trust
        raise click.ClickException(str(exc)) from None


@click.command("verify")
@click.argument("target", metavar="SLUG_OR_PATH")
@click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda")
@click.option("--trust", is_flag=True, help=TRUST_HELP)
@click.option("--record", is_flag=True, help="when it passes, also write the committed record verifications/SLUG.json")
@click.option(
    "--sample", type=click.IntRange(min=0), default=90, show_default=True, help="records re-run (fresh entropy)"
)
def verify(target, device, trust, record, sample) -> None:
    """Re-check a submission's results; exit 0 when they verify, 1 otherwise.

    Writes the verifier's report to build/verify/SLUG.json; never touches the submission's own files.
    """
    from halbench.submissions.verify import verify_submission, write_report

    sub = _load(_locate(target))
    try:
        report = verify_submission(sub, device=device, trust=trust, sample=sample)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"{sub.slug}: {report.summaries} summaries, {report.records} records recomputed, {report.rerun} re-run "
        f"(sample drawn from entropy {report.entropy}): {len(report.mismatches)} mismatch(es)"
    )
    for line in report.mismatches[:50]:
        click.echo(f"  - {line}")
    written = write_report(report, record)
    click.echo(f"{'verified' if report.passed else 'FAILED'}: {', '.join(str(p) for p in written)}")
    if not report.passed:
        raise SystemExit(1)


def _locate(target: str) -> Path:
    """A bare slug means ``<repo>/submissions/<slug>``; anything else is a path."""
    bare = "/" not in target and "\\" not in target and re.fullmatch(SLUG_PATTERN, target)
    folder = REPO_ROOT / "submissions" / target if bare else Path(target)
    if not folder.is_dir():
        raise click.ClickException(f"no submission folder {folder}")
    return folder
