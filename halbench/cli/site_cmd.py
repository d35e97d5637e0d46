"""``halbench site build|serve``: the static leaderboard."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click


@click.group()
def site() -> None:
    """The static leaderboard site (site/_build/)."""


@site.command("build")
@click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    help="folder holding results/ and submissions/ (default: the repository)",
)
@click.option("--out", type=click.Path(path_type=Path), help="output folder (default: site/_build)")
@click.option("--cases-per-task", default=12, show_default=True, help="case drill-down pages per task")
def site_build(root: Path | None, out: Path | None, cases_per_task: int) -> None:
    """Render the leaderboard from results/ and submissions/*/results/."""
    from halbench.site.build import build_site
    from halbench.tasks.registry import REPO_ROOT

    report = build_site(root or REPO_ROOT, out=out, cases_per_task=cases_per_task)
    for problem in report.problems:
        click.secho(f"skipped: {problem}", fg="yellow", err=True)
    click.echo(f"built {report.pages} pages in {report.seconds:.1f} s")
    click.echo(str(report.index.resolve()))


@site.command("serve")
@click.option("--dir", "folder", type=click.Path(path_type=Path), help="built site (default: site/_build)")
@click.option("--port", default=8000, show_default=True)
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


@click.command("leaderboard")
@click.option("--scope", default="all", show_default=True, help="'all' or a task name")
@click.option("--budget", default=256, show_default=True, help="rows per case")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), help="folder holding results/")
@click.option("--markdown", is_flag=True, help="a Markdown table (for notes and papers)")
def leaderboard(scope: str, budget: int, root: Path | None, markdown: bool) -> None:
    """Print the ranked leaderboard (ranks tie when the paired bootstrap interval contains zero)."""
    from halbench.cli.render import table
    from halbench.site.build import SHOWN, gather
    from halbench.tasks.registry import REPO_ROOT

    site = gather(root or REPO_ROOT, cases_per_task=0)
    board = site.boards.get((scope, budget))
    if board is None:
        raise click.ClickException(f"no results for scope {scope!r} at budget {budget} (budgets: {site.store.budgets})")
    headers = ["rank", "method", "kind", "status", *SHOWN, "rows/case", "s/case", "failed"]
    rows = []
    for r in board.rows:
        cells = [f"{c.mean:.3f} [{c.low:.3f}, {c.high:.3f}]" if (c := r.metrics.get(m)) else "-" for m in SHOWN]
        rank = f"{r.rank}{'=' if r.tied else ''}"
        rows.append([rank, r.method, r.kind, r.status, *cells, f"{r.rows:.0f}", f"{r.seconds:.3f}", str(r.failed)])
    if markdown:
        click.echo("| " + " | ".join(headers) + " |\n|" + "---|" * len(headers))
        click.echo("\n".join("| " + " | ".join(row) + " |" for row in rows))
    else:
        click.echo(f"{scope} at {budget} rows per case, {board.cases} cases")
        click.echo(table(headers, rows))
