#!/usr/bin/env python
"""Kendall tau between the headline rankings of two builds of the suite (say, two seeds).

A build is a repository-like folder with ``results/`` and a tasks folder. Only instances built and evaluated
in both (same ``task/model`` names) and methods complete on all of them in both count, so the two rankings are over
the same cells. Prints each build's headline per method, the tau over all common instances and per task.
Reads files only; the second build need not be committed (``HALBENCH_TASKS`` and ``eval --out`` make one).

    python scripts/seed_agreement.py --b /tmp/seed2 --tasks-b /tmp/seed2/tasks
"""

from __future__ import annotations

from pathlib import Path

import click

from halbench.leaderboard import PROBE_KIND, per_model_headline, suite_index
from halbench.methods.base import registered
from halbench.metrics.hierarchical import kendall_tau
from halbench.site.inputs import Inputs, load_inputs

REPO = Path(__file__).resolve().parents[1]


def instance_headlines(inputs: Inputs, instances: list[str]) -> dict[str, dict[str, float]]:
    """Each instance's headline per ranked method, methods complete on it only (leak probes left out, as on the
    board); an instance with no results gets an empty dict."""
    kinds = {name: cls.kind for name, cls in registered().items()}
    methods = [m for m in inputs.store.methods if kinds.get(m) != PROBE_KIND]
    out = {}
    for name in instances:
        one = suite_index(inputs.tasks_root, [name])  # per-model figures of this instance alone
        out[name] = per_model_headline(inputs.store, one, methods).get(name.split("/", 1)[1], {})
    return out


def headline(per_instance: dict[str, dict[str, float]], instances: list[str]) -> dict[str, float]:
    """Mean over ``instances`` of each method's per-instance headline, for methods complete on all of them."""
    rows = [per_instance[n] for n in instances]
    common = set.intersection(*(set(r) for r in rows)) if rows else set()
    return {m: sum(r[m] for r in rows) / len(rows) for m in sorted(common)}


@click.command()
@click.option("--a", "repo_a", type=click.Path(path_type=Path, file_okay=False), default=REPO, show_default=True)
@click.option("--tasks-a", type=click.Path(path_type=Path, file_okay=False), help="default: <a>/tasks")
@click.option("--b", "repo_b", type=click.Path(path_type=Path, file_okay=False), required=True)
@click.option("--tasks-b", type=click.Path(path_type=Path, file_okay=False), help="default: <b>/tasks")
def main(repo_a: Path, tasks_a: Path | None, repo_b: Path, tasks_b: Path | None) -> None:
    a, b = load_inputs(repo_a, tasks_a), load_inputs(repo_b, tasks_b)
    shared = sorted(set(a.manifests) & set(b.manifests))
    per_a, per_b = instance_headlines(a, shared), instance_headlines(b, shared)
    # a tasks folder copied whole holds instances that were not rebuilt (nor evaluated) there: skip them
    common = [n for n in shared if per_a[n] and per_b[n]]
    if not common:
        raise click.ClickException("the two builds share no task instance with results in both")
    ha, hb = headline(per_a, common), headline(per_b, common)
    methods = sorted(set(ha) & set(hb), key=lambda m: -ha[m])
    click.echo(f"instances in both: {', '.join(common)}\n")
    click.echo("| method | build a | build b |\n|---|---|---|")
    for m in methods:
        click.echo(f"| {m} | {ha[m]:.3f} | {hb[m]:.3f} |")
    click.echo(f"\nKendall tau over all common instances ({len(methods)} methods): {_fmt(kendall_tau(ha, hb))}")
    for task in sorted({n.split("/", 1)[0] for n in common}):
        names = [n for n in common if n.startswith(task + "/")]
        tau = kendall_tau(headline(per_a, names), headline(per_b, names))
        click.echo(f"  {task} ({len(names)} instances): {_fmt(tau)}")


def _fmt(tau: float | None) -> str:
    return "n/a (fewer than 3 methods in common)" if tau is None else f"{tau:.2f}"


if __name__ == "__main__":
    main()
