#!/usr/bin/env python
"""Tune one hyper-parameter of a method on the dev split only, and record the run.

For each value of the grid it runs the standard sweep on the dev split of every built instance (or the
ones given) at the suite's budgets, scores the headline (AP averaged over budgets, hierarchical
bootstrap) and writes a Markdown record (default ``docs/tuning/<method>-<param>.md``) with the table,
the chosen value and the command that reproduces it. Test cases are never touched.

Usage: python scripts/tune.py sat_shrunk shrinkage 0 8 16 32 64 [--task single --task conjunctive ...]
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from halbench.executors import local_executor
from halbench.leaderboard import BUDGETS, build_board, suite_index
from halbench.results import ResultStore
from halbench.sweep import Sweep, make_job, run_sweep
from halbench.tasks.registry import built_instances, resolve_instances, tasks_root


def score(method: str, out: Path, instances: list) -> tuple[float, float, float, float]:
    """Headline (mean, low, high) on the dev split and the mean rows spent at the largest budget."""
    store = ResultStore()
    store.add_root(out, "built-in")
    index = suite_index(tasks_root(), [i.name for i in instances], split="dev")
    board = build_board(store, index, "all", {}, budgets=BUDGETS, metrics=("average_precision",))
    row = next(r for r in board.rows if r.method == method)
    return row.headline.mean, row.headline.low, row.headline.high, row.rows[max(BUDGETS)]


@click.command()
@click.argument("method")
@click.argument("param")
@click.argument("values", nargs=-1, required=True)
@click.option("--task", "tasks", multiple=True, help="task or task/model (default: every built instance)")
@click.option("--out", type=click.Path(path_type=Path), default=Path("build/tuning"), show_default=True)
@click.option("--record", type=click.Path(path_type=Path), help="Markdown record (default docs/tuning/...)")
@click.option("--workers", default=1, show_default=True)
def main(method: str, param: str, values: tuple[str, ...], tasks, out: Path, record: Path | None, workers: int) -> None:
    instances = [i for name in tasks for i in resolve_instances(name)] if tasks else built_instances()
    rows = []
    for raw in values:
        value = json.loads(raw)
        folder = out / method / f"{param}={raw}"
        jobs = [make_job(method, {param: value}, b) for b in BUDGETS]
        run_sweep(Sweep(instances, jobs, split="dev", out=folder), local_executor(workers), progress=True)
        mean, low, high, spent = score(method, folder, instances)
        rows.append((raw, mean, low, high, spent))
        click.echo(f"{param}={raw}: dev headline AP {mean:.3f} [{low:.3f}, {high:.3f}], {spent:.0f} rows at 256")
    best = max(rows, key=lambda r: r[1])
    lines = [
        f"# Tuning `{method}`: `{param}` on the dev split",
        "",
        f"Instances: {', '.join(i.name for i in instances)} (dev split only; test cases untouched).",
        f"Budgets {', '.join(map(str, BUDGETS))}; headline = AP averaged over budgets, hierarchical bootstrap.",
        "",
        f"| {param} | dev headline AP | 95% interval | rows/case at {max(BUDGETS)} |",
        "|---|---|---|---|",
        *(f"| {r[0]} | {r[1]:.3f} | [{r[2]:.3f}, {r[3]:.3f}] | {r[4]:.0f} |" for r in rows),
        "",
        f"Best on dev: `{param} = {best[0]}`.",
        "",
        "Reproduce: `python scripts/tune.py "
        + " ".join([method, param, *values])
        + "`"
        + "".join(f" --task {t}" for t in tasks),
        "",
    ]
    target = record or Path("docs") / "tuning" / f"{method}-{param}.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines), encoding="utf-8")
    click.echo(f"recorded: {target}")


if __name__ == "__main__":
    main()
