"""Markdown tables of the committed results: per task, every method's AP, Hit@k and S_rep@0.5 with intervals, and cost.

Usage: python scripts/results_table.py [--root .] [--budget 64 --budget 256 ...]
"""

from __future__ import annotations

from pathlib import Path

import click

from halbench.site.build import gather
from halbench.site.leaderboard import Cell

SHOWN = (("average_precision", "AP"), ("hit_at_k", "Hit@k"), ("s_rep@0.5", "S_rep@0.5"))


def fmt(cell: Cell | None) -> str:
    return "-" if cell is None else f"{cell.mean:.2f} [{cell.low:.2f}, {cell.high:.2f}]"


@click.command()
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."))
@click.option("--budget", "budgets", type=int, multiple=True, help="budgets to show (default: all)")
@click.option("--compact", is_flag=True, help="one table: methods x tasks, AP at the first budget, ranked overall")
def main(root: Path, budgets: tuple[int, ...], compact: bool) -> None:
    site = gather(root, cases_per_task=0)
    budgets = budgets or tuple(site.store.budgets)
    if compact:
        return compact_table(site, budgets[0])
    for scope in ["all", *site.tasks]:
        click.echo(f"\n### {'all tasks' if scope == 'all' else scope}\n")
        click.echo("| method | budget | rank | " + " | ".join(label for _, label in SHOWN) + " | rows/case | s/case |")
        click.echo("|---" * (5 + len(SHOWN)) + "|")
        for method in site.store.methods:
            for budget in budgets:
                board = site.boards.get((scope, budget))
                row = next((r for r in board.rows if r.method == method), None) if board else None
                if row is None:
                    continue
                cells = " | ".join(fmt(row.metrics.get(name)) for name, _ in SHOWN)
                rank = f"{row.rank}{'=' if row.tied else ''}"
                click.echo(f"| {method} | {budget} | {rank} | {cells} | {row.rows:.0f} | {row.seconds:.3f} |")


def compact_table(site, budget: int) -> None:
    """AP (mean) per task for each method, ordered by the overall rank; '-' where a task has no result yet."""
    tasks = list(site.tasks)
    overall = {r.method: r for r in site.boards[("all", budget)].rows}
    methods = sorted(site.store.methods, key=lambda m: (overall[m].rank if m in overall else 99, m))
    click.echo(f"| rank | method | all tasks | {' | '.join(tasks)} | rows/case |")
    click.echo("|---" * (4 + len(tasks)) + "|")
    for method in methods:
        cells = []
        for task in tasks:
            row = next((r for r in site.boards[(task, budget)].rows if r.method == method), None)
            cells.append(f"{row.metrics['average_precision'].mean:.2f}" if row else "-")
        top = overall.get(method)
        rank = f"{top.rank}{'=' if top.tied else ''}" if top else "-"
        total = fmt(top.metrics.get("average_precision")) if top else "-"
        rows = f"{top.rows:.0f}" if top else "-"
        click.echo(f"| {rank} | {method} | {total} | {' | '.join(cells)} | {rows} |")


if __name__ == "__main__":
    main()
