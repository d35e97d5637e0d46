"""``halbench eval`` and ``halbench methods list|show``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import click

from halbench.cli.paths import out_problem
from halbench.methods.base import MethodError, get_method, registered
from halbench.tasks.registry import REPO_ROOT, UnknownTaskError, built_instances, resolve_instances

BUDGETS = (16, 64, 256)
SHOWN = ("average_precision", "hit_at_k", "s_rep@0.5")
PARTIAL_OUT = Path("build") / "partial-results"


def parse_params(values: tuple[str, ...]) -> dict:
    out = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--param")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def output_folder(out: Path | None, limit: int | None) -> Path:
    """Where results go; a partial run (``--limit``) never writes into the committed ``results/``."""
    committed = (REPO_ROOT / "results").resolve()
    if out is None:
        return PARTIAL_OUT if limit is not None else Path("results")
    if limit is not None and Path(out).resolve() == committed:
        raise click.UsageError(f"--limit makes a partial run, which never writes into {committed}; give another --out")
    problem = out_problem(out)
    if problem:
        raise click.UsageError(problem)
    return out


def instances_for(tasks: tuple[str, ...], all_: bool) -> list:
    """The named tasks' instances (each must be built), or, with ``all_``, every built instance of the suite."""
    try:
        if all_:
            found = built_instances()
            if not found:
                raise click.ClickException("no task instance is built (halbench tasks build --all)")
            return found
        return [i for name in tasks for i in resolve_instances(name)]
    except UnknownTaskError as exc:
        raise click.ClickException(str(exc)) from None


def sweep_options(f):
    """Options shared by ``eval`` and ``submit``: where, how much, on what."""
    options = [
        click.option("--task", "tasks", multiple=True, help="task, task/model or instance folder (repeatable)"),
        click.option("--all", "all_", is_flag=True, help="every built task instance"),
        click.option("--split", type=click.Choice(["test", "dev"]), default="test", show_default=True),
        click.option("--limit", type=click.IntRange(min=0), help="only the first N cases of each instance's split"),
        click.option(
            "--budget",
            "budgets",
            type=click.IntRange(min=1),
            multiple=True,
            help="model rows per case (repeatable; default 16 64 256)",
        ),
        click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N"),
        click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True),
        click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True),
        click.option("--workers", type=click.IntRange(min=1), help="worker processes (local) or CPUs (local Ray)"),
        click.option("--address", help="address of an existing Ray cluster (with --executor ray)"),
        click.option("--progress/--no-progress", default=True),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def run_jobs(
    instances, jobs, split, limit, seed, out, device, executor, workers, address, progress, trust=False, lm_refills=0
):
    """Run a sweep and return its summaries; every refusal becomes one readable message."""
    from halbench.executors import make_executor
    from halbench.records import RecordError
    from halbench.runtime import configure_threads
    from halbench.sweep import Sweep, run_sweep
    from halbench.tasks.artifacts import ManifestError

    configure_threads()
    sweep = Sweep(instances, jobs, split, limit, seed, out=out, device=device, trust=trust, lm_refills=lm_refills)
    try:
        run = make_executor(executor, workers, address, gpu=device.startswith("cuda"))
        return run_sweep(sweep, run, progress=progress, echo=lambda m: click.secho(m, fg="yellow", err=True))
    except (RecordError, ManifestError, RuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        click.secho("\ninterrupted: every finished case is saved; run the same command again to resume", err=True)
        raise SystemExit(130) from None


@click.command("eval")
@click.option("--method", "method_names", multiple=True, help="a registered method (repeatable; halbench methods list)")
@click.option("--all-methods", is_flag=True, help="every built-in method, leak probes included")
@sweep_options
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="results folder (default results/; with --limit build/partial-results/)",
)
@click.option("--param", "params", multiple=True, help="method hyper-parameter KEY=VALUE (repeatable)")
@click.option(
    "--lm-refills", type=click.IntRange(min=0), default=0, show_default=True,
    help="also score s_rep_lm@* with this many model-filled refills per case (doubles the metric rows)",
)  # fmt: skip
def eval_(method_names, all_methods, tasks, all_, split, limit, budgets, device, seed, executor, workers, address,
          progress, out, params, lm_refills) -> None:  # fmt: skip
    """Run methods on task instances at each budget; resumes from earlier per-case results.

    The work is split into (instance, case shard) units with every pending (method, budget) job, so methods
    and budgets of a case share its metric rows, and any executor resumes a killed sweep.
    """
    from halbench.cli.render import table
    from halbench.sweep import make_job

    names = list(registered()) if all_methods else list(method_names)
    if not names:
        raise click.UsageError("give --method NAME or --all-methods")
    if params and len(names) > 1:
        raise click.UsageError("--param applies to one method; give a single --method with it")
    values = parse_params(params)
    try:
        for name in names:
            get_method(name, **values)
    except MethodError as exc:
        raise click.ClickException(str(exc)) from None
    instances = instances_for(tasks, all_)
    if not instances:
        raise click.UsageError("give --task NAME or --all")
    jobs = [make_job(name, values, budget) for name in names for budget in budgets or BUDGETS]
    target = output_folder(out, limit)
    summaries = run_jobs(
        instances, jobs, split, limit, seed, target, device, executor, workers, address, progress, lm_refills=lm_refills
    )
    click.echo(table(HEADERS, [summary_row(s) for s in summaries]))
    click.echo(f"results: {target}")


HEADERS = ["instance", "method", "budget", "cases", "failed", *SHOWN, "rows/case", "s/case"]


def summary_row(summary: dict) -> list[str]:
    def fmt(name: str) -> str:
        m = summary["metrics"].get(name)
        return "-" if m is None else f"{m['mean']:.3f} [{m['low']:.3f}, {m['high']:.3f}]"

    cost = summary["cost"]
    return [
        summary["instance"],
        summary["method"],
        str(summary["budget"]),
        str(summary["cases"]),
        str(summary["failed"]),
        *(fmt(n) for n in SHOWN),
        f"{cost['rows']:.0f}",
        f"{cost['seconds']:.3f}",
    ]


@click.group()
def methods() -> None:
    """Registered attribution methods."""


@methods.command("list")
def methods_list() -> None:
    from halbench.cli.render import table

    rows = [
        [name, cls.kind, textwrap.shorten(cls.description, 90, placeholder=" ...")]
        for name, cls in registered().items()
    ]
    click.echo(table(["method", "kind", "description"], rows))


@methods.command("show")
@click.argument("name")
def methods_show(name: str) -> None:
    try:
        method = get_method(name)
    except MethodError as exc:
        raise click.ClickException(str(exc)) from None
    click.secho(f"{method.name} ({method.kind})", bold=True)
    click.echo(click.wrap_text(method.description, initial_indent="  ", subsequent_indent="  "))
    for key, value in method.params.items():
        click.echo(f"  {key} = {value!r}")
