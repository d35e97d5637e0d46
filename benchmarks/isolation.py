"""The cost of isolation: rows per second of a method in-process against the same method in its sandboxed worker.

Perturbation-heavy methods (``occlusion`` and ``sat`` by default) at one budget, on the same cases with the
same rngs, measured in the same run: each case's scorer is fresh, the worker is started (and timed) once
before the clock runs, and both sides must give identical scores (checked). Isolation adds a round trip per
scorer call and the copying of the rows and answers through pipes; the model's work is the same. The default
instance is the tests' tiny random model, whose forwards are so cheap that the overhead shows at its largest;
``--instance`` measures a built task instance instead.

Usage: python benchmarks/isolation.py [--budget 256] [--cases 16] [--method occlusion --method sat] [--repeats 3]
                                     [--instance task/model]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from halbench.isolation import sandbox
from halbench.isolation.method import IsolatedMethod
from halbench.methods.base import get_method
from halbench.runner import case_rng
from halbench.runtime import configure_threads
from halbench.tasks.bundle import TaskBundle, load_bundle
from halbench.tasks.registry import REPO_ROOT, resolve_instances


def tiny_bundle(cases: int) -> TaskBundle:
    sys.path.insert(0, str(REPO_ROOT))
    from tests.tiny import make_tiny_instance

    return load_bundle(make_tiny_instance(Path(tempfile.mkdtemp()), "llama", cases=cases, dev=2), device="cpu")


def run(method, bundle: TaskBundle, records: list[dict], budget: int) -> tuple[float, int, list[np.ndarray]]:
    """Seconds, rows and scores of ``method`` over ``records``."""
    rows, scores, start = 0, [], time.perf_counter()
    for record in records:
        scorer = bundle.scorer(record, budget=budget)
        scores.append(np.asarray(method.attribute(scorer.case, scorer, case_rng(0, record["id"])).scores))
        rows += scorer.cost.rows
    return time.perf_counter() - start, rows, scores


@click.command()
@click.option("--budget", default=256, show_default=True)
@click.option("--cases", default=16, show_default=True)
@click.option("--method", "methods", multiple=True, default=("occlusion", "sat"), show_default=True)
@click.option("--repeats", default=3, show_default=True, help="timed passes per side, alternating; the best counts")
@click.option("--instance", default=None, help="task/model of a built instance (default: the tiny random one)")
def main(budget: int, cases: int, methods: tuple[str, ...], repeats: int, instance: str | None) -> None:
    click.echo(f"torch threads: {configure_threads()} (the worker: 1)")
    bwrap = sandbox.find_bwrap()[0]
    click.echo(f"worker: {'bubblewrap ' + bwrap if bwrap else 'plain subprocess (no usable bubblewrap)'}")
    bundle = load_bundle(resolve_instances(instance)[0], device="cpu") if instance else tiny_bundle(cases)
    records = bundle.cases("test")[:cases]
    click.echo(f"{bundle.name}: {len(records)} cases, budget {budget}")
    click.echo(
        f"{'method':<12} {'start s':>8} {'in-process rows/s':>18} {'isolated rows/s':>16} {'ratio':>6} {'ms/case':>8}"
    )
    for name in methods:
        local = get_method(name)
        started = time.perf_counter()
        isolated = IsolatedMethod(f"builtin:{name}", trust=bwrap is None)
        run(isolated, bundle, records[:1], budget)  # start the worker and warm both sides
        start_s = time.perf_counter() - started
        run(local, bundle, records[:1], budget)
        local_s = iso_s = float("inf")
        try:
            for _ in range(repeats):  # alternating, so both sides see the same load on a shared machine
                seconds, local_rows, expected = run(local, bundle, records, budget)
                local_s = min(local_s, seconds)
                seconds, iso_rows, got = run(isolated, bundle, records, budget)
                iso_s = min(iso_s, seconds)
        finally:
            isolated.close()
        same = local_rows == iso_rows and all(a.tobytes() == b.tobytes() for a, b in zip(expected, got, strict=True))
        overhead_ms = 1000 * (iso_s - local_s) / len(records)
        click.echo(
            f"{name:<12} {start_s:>8.1f} {local_rows / local_s:>18.0f} {iso_rows / iso_s:>16.0f} "
            f"{(iso_rows / iso_s) / (local_rows / local_s):>6.2f} {overhead_ms:>8.1f}{'' if same else '  DIFFERS'}"
        )


if __name__ == "__main__":
    main()
