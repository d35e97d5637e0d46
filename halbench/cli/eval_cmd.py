"""``halbench eval`` and ``halbench methods list|show``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from halbench.methods.base import MethodError, get_method, registered
from halbench.tasks.registry import UnknownTaskError, resolve, task_names

BUDGETS = (64, 256, 1024)
SHOWN = ("average_precision", "hit_at_k", "s_rep@0.5")


def _param(values: tuple[str, ...]) -> dict:
    out = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--param")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


@click.command("eval")
@click.option("--method", "method_names", multiple=True, help="a registered method (repeatable; halbench methods list)")
@click.option("--all-methods", is_flag=True, help="every registered method")
@click.option("--task", "tasks", multiple=True, help="task name or folder (repeatable)")
@click.option("--all", "all_", is_flag=True, help="every task")
@click.option("--split", type=click.Choice(["test", "dev"]), default="test", show_default=True)
@click.option("--limit", type=int, help="only the first N cases of the split")
@click.option("--budget", "budgets", type=int, multiple=True, help="rows per case (repeatable; default 64 256 1024)")
@click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda")
@click.option("--out", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--param", "params", multiple=True, help="method hyper-parameter KEY=VALUE (repeatable)")
@click.option("--progress/--no-progress", default=True)
def eval_(method_names, all_methods, tasks, all_, split, limit, budgets, device, out, seed, params, progress) -> None:
    """Run methods on tasks at each budget; resumes from earlier per-case results.

    Methods and budgets of one task share its metric rows (each kept set is scored once).
    """
    from halbench.cli.render import table
    from halbench.runner import EvalConfig, MetricMemo, evaluate
    from halbench.tasks.bundle import load_bundle

    names = list(registered()) if all_methods else list(method_names)
    if not names:
        raise click.UsageError("give --method NAME or --all-methods")
    if params and len(names) > 1:
        raise click.UsageError("--param applies to one method; give a single --method with it")
    try:
        for name in names:
            get_method(name, **_param(params))
        refs = [resolve(t) for t in (task_names() if all_ else tasks)]
    except (MethodError, UnknownTaskError) as exc:
        raise click.ClickException(str(exc)) from None
    if not refs:
        raise click.UsageError("give --task NAME or --all")
    rows = []
    for ref in refs:
        bundle, memo = load_bundle(ref.artifacts, device=device), MetricMemo()
        for name in names:
            for budget in budgets or BUDGETS:
                config = EvalConfig(name, _param(params), split, limit, budget, seed, out=out)
                rows.append(_row(evaluate(bundle, config, progress=progress, memo=memo)))
    click.echo(table(["task", "method", "budget", "cases", "failed", *SHOWN, "rows/case", "s/case"], rows))


def _row(summary: dict) -> list[str]:
    def fmt(name: str) -> str:
        m = summary["metrics"].get(name)
        return "-" if m is None else f"{m['mean']:.3f} [{m['low']:.3f}, {m['high']:.3f}]"

    cost = summary["cost"]
    return [
        summary["task"],
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

    rows = [[name, cls.kind, cls.description[:80]] for name, cls in registered().items()]
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
