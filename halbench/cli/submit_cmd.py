"""``halbench submit`` and ``halbench verify``: run an outside submission, then re-check its stored results."""

from __future__ import annotations

import re
from pathlib import Path

import click

from halbench.cli.eval_cmd import BUDGETS, SHOWN, summary_row as _row
from halbench.submissions.spec import SLUG_PATTERN
from halbench.tasks.registry import REPO_ROOT


def _load(path: Path):
    from halbench.submissions.loader import load_submission
    from halbench.submissions.spec import SubmissionError

    try:
        return load_submission(path)
    except SubmissionError as exc:
        raise click.ClickException(f"invalid submission:\n{exc}") from None


@click.command("submit")
@click.argument("path", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--task", "tasks", multiple=True, help="task name or folder (repeatable; default every task)")
@click.option("--budget", "budgets", type=int, multiple=True, help="rows per case (repeatable; default 64 256 1024)")
@click.option("--limit", type=int, help="only the first N cases of the split")
@click.option("--split", type=click.Choice(["test", "dev"]), default="test", show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda")
@click.option("--seed", default=0, show_default=True)
@click.option("--progress/--no-progress", default=True)
def submit(path, tasks, budgets, limit, split, device, seed, progress) -> None:
    """Run the submission in PATH on every task and budget; results go to PATH/results/ (resumable)."""
    from halbench.cli.render import table
    from halbench.submissions.spec import SubmissionError
    from halbench.submissions.submit import run_submission
    from halbench.tasks.registry import UnknownTaskError

    sub = _load(path)
    try:
        summaries = run_submission(sub, tasks or None, budgets or BUDGETS, split, limit, device, seed, progress)
    except (SubmissionError, UnknownTaskError) as exc:
        raise click.ClickException(str(exc)) from None
    headers = ["task", "method", "budget", "cases", "failed", *SHOWN, "rows/case", "s/case"]
    click.echo(table(headers, [_row(s) for s in summaries]))
    click.echo(f"results: {sub.results}")
    click.echo(f"next: halbench verify {sub.folder}")


@click.command("verify")
@click.argument("target", metavar="SLUG_OR_PATH")
@click.option("--sample", default=8, show_default=True, help="cases re-run per stored summary")
@click.option("--seed", default=0, show_default=True, help="seed of the sample")
@click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda")
def verify(target, sample, seed, device) -> None:
    """Re-check a submission's stored results; exit 0 when they verify, 1 otherwise."""
    from halbench.submissions.verify import REPORT_FILE, verify_submission

    sub = _load(_locate(target))
    report = verify_submission(sub, sample=sample, seed=seed, device=device)
    click.echo(
        f"{sub.slug}: checked {report.summaries} summaries ({report.cases_checked} case records), "
        f"re-ran {report.cases_rerun} sampled cases: {len(report.mismatches)} mismatch(es)"
    )
    for line in report.mismatches:
        click.echo(f"  - {line}")
    click.echo(f"{'verified' if report.passed else 'FAILED'}: {sub.folder / REPORT_FILE}")
    if not report.passed:
        raise SystemExit(1)


def _locate(target: str) -> Path:
    """A bare slug means ``<repo>/submissions/<slug>``; anything else is a path."""
    bare = "/" not in target and "\\" not in target and re.fullmatch(SLUG_PATTERN, target)
    folder = REPO_ROOT / "submissions" / target if bare else Path(target)
    if not folder.is_dir():
        raise click.ClickException(f"no submission folder {folder}")
    return folder
