"""Sweep wall time on each executor, measured in the same run on the same work.

Runs one small sweep (a few methods x budgets on some cases of two instances) on the local executor
with one worker (the reference), on the local executor with one worker per core, and on a local Ray
cluster of one CPU per core; prints wall seconds and the speed-up against the reference, and checks
that every executor wrote byte-identical records.

Usage: python benchmarks/sweep.py [--cases 16] [--instance task/model ...]
"""

from __future__ import annotations

import filecmp
import shutil
import tempfile
import time
from pathlib import Path

import click

from halbench.executors import cores, local_executor, ray_executor
from halbench.sweep import Sweep, make_job, run_sweep
from halbench.tasks.registry import resolve_instances

INSTANCES = ("single/grammar-gpt2-a", "natural/natural-llama-b")
METHODS = ("occlusion", "sat", "integrated_gradients", "lime")
BUDGETS = (16, 64)


def timed(sweep: Sweep, executor) -> float:
    start = time.perf_counter()
    run_sweep(sweep, executor, progress=False)
    return time.perf_counter() - start


def identical(a: Path, b: Path) -> bool:
    left = sorted(p.relative_to(a) for p in a.rglob("*.cases.jsonl"))
    right = sorted(p.relative_to(b) for p in b.rglob("*.cases.jsonl"))
    return left == right and all(filecmp.cmp(a / p, b / p, shallow=False) for p in left)


@click.command()
@click.option("--cases", default=16, show_default=True, help="cases per instance")
@click.option("--instance", "names", multiple=True, help="task/model (repeatable)")
@click.option("--ray/--no-ray", default=True, show_default=True)
def main(cases: int, names: tuple[str, ...], ray: bool) -> None:
    instances = [i for n in names or INSTANCES for i in resolve_instances(n)]
    jobs = [make_job(m, {}, b) for m in METHODS for b in BUDGETS]
    n = cores()
    runs = {"local, 1 worker": local_executor(1), f"local, {n} workers": local_executor(n)}
    if ray:
        runs[f"ray, {n} CPUs"] = ray_executor(workers=n)
    root = Path(tempfile.mkdtemp(prefix="halbench-sweep-bench-"))
    try:
        click.echo(f"{len(instances)} instances x {cases} cases x {len(METHODS)} methods x {len(BUDGETS)} budgets")
        reference, first = None, None
        for label, executor in runs.items():
            out = root / label.replace(" ", "").replace(",", "-")
            seconds = timed(Sweep(instances, jobs, limit=cases, out=out), executor)
            reference = reference or seconds
            first = first or out
            same = "identical records" if identical(first, out) else "RECORDS DIFFER"
            click.echo(f"{label:<20} {seconds:>8.1f} s   {reference / seconds:>5.2f}x   {same}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
