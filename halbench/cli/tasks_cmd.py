"""``halbench tasks list|show|build|verify`` and ``halbench models list``."""

from __future__ import annotations

from pathlib import Path

import click

from halbench.cli.paths import out_problem
from halbench.tasks.registry import (
    MODELS,
    TaskRef,
    UnknownTaskError,
    cache_root,
    model_names,
    resolve,
    resolve_instances,
    resolve_model,
    task_names,
    tasks_root,
)
from halbench.tasks.spec import TaskSpecError


@click.group()
def tasks() -> None:
    """Task definitions and their built instances (a task's cases on each of its models)."""


def _refs(names: tuple[str, ...], all_: bool) -> list[TaskRef]:
    if all_ == bool(names):
        raise click.UsageError("give task names or --all (not both)")
    try:
        return [resolve(n) for n in (task_names() if all_ else names)]
    except UnknownTaskError as exc:
        raise click.ClickException(str(exc)) from None


def _span(length: dict) -> str:
    return f"{length['min']}" if length["min"] == length["max"] else f"{length['min']}-{length['max']}"


@tasks.command("list")
def list_() -> None:
    """Every task on every model: family, cases, prompt length, model, hash."""
    from halbench.cli.render import table

    rows = []
    for name in task_names():
        ref = resolve(name)
        instances = ref.instances()
        if not instances:
            try:
                rows.append([name, ref.spec().family, "-", "not built", "-", "-", "-"])
            except TaskSpecError as exc:
                raise click.ClickException(str(exc)) from None
            continue
        for inst in instances:
            m = inst.manifest()
            model = m.get("model") or {}
            params = f"{model.get('arch', '?')} {model.get('parameters', 0) / 1e6:.2f}M"
            counts = m.get("counts", {})
            cases = f"{counts.get('test', 0)} test / {counts.get('dev', 0)} dev"
            length = m.get("prompt_length") or {"min": 0, "max": 0}
            rows.append([name, m.get("family", "?"), inst.model, cases, _span(length), params, m["content_hash"][:12]])
    if not rows:
        raise click.ClickException(f"no tasks found in {tasks_root()}")
    click.echo(table(["task", "family", "model", "cases", "prompt length", "arch, size", "hash"], rows))


@tasks.command()
@click.argument("name")
@click.option("-n", "--cases", "n", default=3, show_default=True, help="how many cases to show")
@click.option("--split", type=click.Choice(["dev", "test"]), default="dev", show_default=True)
@click.option("--model", help="which model's cases (default: the first built)")
def show(name: str, n: int, split: str, model: str | None) -> None:
    """Describe a task and decode a few cases, the cause marked [[like this]]."""
    from halbench.cli.render import describe_case
    from halbench.tasks.artifacts import CASES, ManifestError, read_cases

    ref = _one(name)
    spec = ref.spec()
    click.secho(ref.name, bold=True)
    click.echo(f"family: {spec.family}   version: {spec.version}   models: {', '.join(spec.models)}")
    click.echo(click.wrap_text(spec.description.strip(), initial_indent="  ", subsequent_indent="  "))
    instances = [i for i in ref.instances() if model in (None, i.model)]
    if not instances:
        click.echo(f"\nnot built yet: run `halbench tasks build {ref.name}`")
        return
    inst = instances[0]
    m = inst.manifest()
    click.echo(
        f"\non {inst.model}: hash {m['content_hash'][:12]}, {m['model']['parameters']:,} parameters, "
        f"mining pass rate {m['mining']['verification_pass_rate']:.0%}"
    )
    click.echo("legend: [[cause]] (alternatives numbered), ~inert distractor~, <fixed marker>\n")
    try:
        records = [r for r in read_cases(inst.folder / CASES) if r["split"] == split][:n]
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    for record in records:
        click.echo(describe_case(record) + "\n")


def _one(name: str) -> TaskRef:
    try:
        return resolve(name)
    except UnknownTaskError as exc:
        raise click.ClickException(str(exc)) from None


@tasks.command()
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="build every task")
@click.option("--quick", is_flag=True, help="a tiny version for tests (applies the quick: overrides)")
@click.option("--model", "only_models", multiple=True, help="only these models of each task (repeatable)")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="artifact root (default: the tasks folder; for --quick, build/quick/)",
)
@click.option("--cache", type=click.Path(path_type=Path, file_okay=False), help="where trained models are cached")
@click.option("--progress/--no-progress", default=True)
def build(names, all_, quick, only_models, out, cache, progress) -> None:
    """Train each task's models (once, shared) and mine and verify its cases on each."""
    from halbench.tasks.build import BuildError

    problem = None if out is None else out_problem(out)
    if problem:
        raise click.UsageError(problem)
    root = out if out is not None else (Path("build") / "quick" if quick else tasks_root())
    failures = []
    for ref in _refs(names, all_):
        try:
            spec = ref.spec(quick=quick)
            models = [m for m in spec.models if not only_models or m in only_models]
        except (TaskSpecError, UnknownTaskError) as exc:
            raise click.ClickException(str(exc)) from None
        for model in models:
            try:
                _build_one(ref.name, spec, model, root, quick, cache, progress)
            except (TaskSpecError, BuildError, UnknownTaskError) as exc:
                failures.append(str(exc))  # one instance that yields too few cases must not stop the suite
                click.secho(f"  FAILED: {exc}", fg="red", err=True)
    if failures:
        raise click.ClickException(f"{len(failures)} instance(s) failed to build:\n" + "\n".join(failures))


def _build_one(task: str, spec, model: str, root: Path, quick: bool, cache: Path | None, progress: bool) -> None:
    from halbench.tasks.build import build_instance, build_model

    recipe = resolve_model(model).recipe(quick=quick)
    dest = root / MODELS / model
    click.echo(f"model {model}{' (quick)' if quick else ''} -> {dest}")
    mm = build_model(recipe, dest, cache or cache_root(), quick=quick, progress=progress)
    click.echo(f"  {mm['arch']}, {mm['parameters']:,} params, trained in {mm['training']['seconds']}s")
    target = root / task / model
    click.echo(f"task {task} on {model} -> {target}")
    m = build_instance(spec, recipe, dest, target, quick=quick, progress=progress)
    click.echo(
        f"  {m['counts']['test']} test + {m['counts']['dev']} dev cases from {len(m['mechanisms'])} mechanisms, "
        f"pass rate {m['mining']['verification_pass_rate']:.0%}, hash {m['content_hash'][:12]}"
    )


@tasks.command("verify")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="verify every built instance")
@click.option("--sample", default=32, show_default=True, help="cases to re-verify per instance")
@click.option("--seed", default=0, show_default=True)
def verify_(names: tuple[str, ...], all_: bool, sample: int, seed: int) -> None:
    """Check hashes and re-verify a seeded sample of cases; exit 1 on any mismatch."""
    from halbench.tasks.check import check_instance

    if all_ == bool(names):
        raise click.UsageError("give task names or --all (not both)")
    failed = 0
    try:
        if all_:  # the whole suite: every built instance; the unbuilt ones are listed, not failed
            refs = [r.instance(m) for r in map(resolve, task_names()) for m in r.spec().models]
            instances = [i for i in refs if i.built]
            for i in refs:
                if not i.built:
                    click.secho(f"--   {i.name}: not built (halbench tasks build {i.task} --model {i.model})")
            if not instances:
                raise click.ClickException("no task instance is built (halbench tasks build --all)")
        else:
            instances = [i for n in names for i in resolve_instances(n)]
    except (UnknownTaskError, TaskSpecError) as exc:
        raise click.ClickException(str(exc)) from None
    for inst in instances:
        report = check_instance(inst, sample=sample, seed=seed)
        if report.ok:
            click.secho(f"ok   {inst.name}: hashes match, {report.sampled} cases re-verified", fg="green")
        else:
            failed += 1
            click.secho(f"FAIL {inst.name}: {len(report.problems)} problem(s)", fg="red")
            for problem in report.problems[:20]:
                click.echo(f"     {problem}")
    if failed:
        raise SystemExit(1)


@click.group()
def models() -> None:
    """Model recipes and the models built from them."""


@models.command("list")
def models_list() -> None:
    """Every model recipe: architecture, size, world, training time."""
    from halbench.cli.render import table

    rows = []
    for name in model_names():
        ref = resolve_model(name)
        recipe = ref.recipe()
        if ref.built:
            m = ref.manifest()
            rows.append(
                [name, recipe.model.arch, f"{m['parameters']:,}", recipe.world.kind, f"{m['training']['seconds']}s"]
            )
        else:
            rows.append([name, recipe.model.arch, "not built", recipe.world.kind, "-"])
    click.echo(table(["model", "arch", "parameters", "world", "trained in"], rows))
