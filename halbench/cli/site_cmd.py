"""``halbench site build|serve`` and ``halbench leaderboard``: the static site and the same board as text.

Both read result files only (:mod:`halbench.site.inputs`): no submission's code is imported or run.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from halbench.cli.paths import out_problem

ROOT_OPTION = click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="folder holding results/, submissions/ and verifications/ (default: the repository)",
)
TASKS_OPTION = click.option(
    "--tasks",
    "tasks_root",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="tasks root with the built instances (default: $HALBENCH_TASKS, else ROOT/tasks)",
)


@click.group()
def site() -> None:
    """The static leaderboard site (site/_build/)."""


@site.command("build")
@ROOT_OPTION
@TASKS_OPTION
@click.option("--out", type=click.Path(path_type=Path), help="output folder (default: ROOT/site/_build)")
@click.option(
    "--cases-per-model", default=3, show_default=True, type=click.IntRange(min=0), help="drill-down cases per instance"
)
def site_build(root: Path | None, tasks_root: Path | None, out: Path | None, cases_per_model: int) -> None:
    """Render the leaderboard from results/ and submissions/*/results/ (reads files; runs no submission)."""
    from halbench.site.build import build_site
    from halbench.tasks.registry import REPO_ROOT

    problem = None if out is None else out_problem(out)
    if problem:
        raise click.ClickException(problem)
    report = build_site(root or REPO_ROOT, out=out, tasks_root=tasks_root, cases_per_model=cases_per_model)
    for problem in report.problems:
        click.secho(f"skipped: {problem}", fg="yellow", err=True)
    click.echo(f"built {report.pages} pages in {report.seconds:.1f} s")
    click.echo(str(report.index.resolve()))


@site.command("serve")
@click.option("--dir", "folder", type=click.Path(path_type=Path), help="built site (default: site/_build)")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
def site_serve(folder: Path | None, port: int) -> None:
    """Serve the built site on http://127.0.0.1:PORT/ (local only)."""
    import functools
    import http.server

    from halbench.tasks.registry import REPO_ROOT

    root = Path(folder or REPO_ROOT / "site" / "_build")
    if not (root / "index.html").is_file():
        raise click.ClickException(f"{root} has no index.html: run `halbench site build` first")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        click.echo(f"serving {root} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)")
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


def _view(value: str) -> str:
    if value == "headline" or (value.isdigit() and int(value) >= 1):
        return value if value == "headline" else str(int(value))
    raise click.BadParameter(f"{value!r}: 'headline' or a budget in rows per case (16, 64, 256)")


@click.command("leaderboard")
@click.option("--scope", default="all", show_default=True, help="'all' or a task name")
@click.option(
    "--budget",
    "view",
    default="headline",
    show_default=True,
    callback=lambda ctx, param, value: _view(value),
    help="'headline' (AP averaged over 16/64/256 rows) or one budget: 16, 64, 256",
)
@ROOT_OPTION
@TASKS_OPTION
@click.option("--markdown", is_flag=True, help="Markdown tables (for notes and papers)")
def leaderboard(scope: str, view: str, root: Path | None, tasks_root: Path | None, markdown: bool) -> None:
    """Print the board the site shows: ranked entries, then the unranked with reasons, then the leak probes."""
    from halbench.site.boards import HEADLINE_VIEW, board, views
    from halbench.site.inputs import load_inputs
    from halbench.site.text import render
    from halbench.tasks.registry import REPO_ROOT

    inputs = load_inputs(root or REPO_ROOT, tasks_root)
    for problem in inputs.problems:
        click.secho(f"skipped: {problem}", fg="yellow", err=True)
    if scope != "all" and scope not in inputs.tasks:
        raise click.ClickException(
            f"unknown scope {scope!r} (scopes: all, {', '.join(inputs.tasks) or 'no tasks built'})"
        )
    shown = views(inputs)
    if view != HEADLINE_VIEW and int(view) not in shown.budgets:
        raise click.ClickException(f"no results at {view} rows per case (budgets with results: {list(shown.budgets)})")
    if view == HEADLINE_VIEW and not shown.headline:
        raise click.ClickException("no results at 16, 64 or 256 rows per case yet: run `halbench eval` first")
    click.echo(render(board(inputs, scope, view, shown), view, markdown))
