"""``halbench tasks list|show|build|verify``."""

from __future__ import annotations

from pathlib import Path

import click

from halbench.tasks.registry import TaskRef, UnknownTaskError, cache_root, resolve, task_names, tasks_root
from halbench.tasks.spec import TaskSpecError


@click.group()
def tasks() -> None:
    """Task definitions and their built artifacts."""


def _refs(names: tuple[str, ...], all_: bool) -> list[TaskRef]:
    if all_ == bool(names):
        raise click.UsageError("give task names or --all (not both)")
    try:
        return [resolve(n) for n in (task_names() if all_ else names)]
    except UnknownTaskError as exc:
        raise click.ClickException(str(exc)) from None


@tasks.command("list")
def list_() -> None:
    """Every task: family, cases, prompt length, model size and content hash."""
    from halbench.cli.render import table

    rows = []
    for name in task_names():
        ref = resolve(name)
        if not ref.built:
            spec = ref.spec()
            rows.append([name, spec.family, "not built", "-", "-", "-"])
            continue
        m = ref.manifest()
        length = m["prompt_length"]
        span = f"{length['min']}" if length["min"] == length["max"] else f"{length['min']}-{length['max']}"
        params = f"{m['model']['parameters'] / 1e6:.2f}M"
        cases = f"{m['counts']['test']} test / {m['counts']['dev']} dev"
        rows.append([name, m["family"], cases, span, params, m["content_hash"][:12]])
    if not rows:
        raise click.ClickException(f"no tasks found in {tasks_root()}")
    click.echo(table(["task", "family", "cases", "prompt length", "model", "hash"], rows))


@tasks.command()
@click.argument("name")
@click.option("-n", "--cases", "n", default=3, show_default=True, help="how many cases to show")
@click.option("--split", type=click.Choice(["dev", "test"]), default="dev", show_default=True)
def show(name: str, n: int, split: str) -> None:
    """Describe a task and decode a few cases, the cause marked [[like this]]."""
    from halbench.cli.render import describe_case
    from halbench.tasks.artifacts import CASES, read_cases

    ref = _one(name)
    spec = ref.spec() if ref.definition else None
    click.secho(f"{ref.name}", bold=True)
    if spec is not None:
        click.echo(f"family: {spec.family}   version: {spec.version}")
        click.echo(click.wrap_text(spec.description.strip(), initial_indent="  ", subsequent_indent="  "))
    if not ref.built:
        click.echo("\nnot built yet: run `halbench tasks build " + ref.name + "`")
        return
    m = ref.manifest()
    click.echo(
        f"hash {m['content_hash'][:12]}  model {m['model']['parameters']:,} parameters  "
        f"mining pass rate {m['mining']['verification_pass_rate']:.0%}"
    )
    click.echo("legend: [[cause]] (alternatives numbered), ~decoy~, <fixed marker>\n")
    records = [r for r in read_cases(ref.artifacts / CASES) if r["split"] == split][:n]
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
@click.option("--quick", is_flag=True, help="a tiny version for tests (applies the task's quick: overrides)")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="artifact folder root (default: the task folder; for --quick, build/quick/)",
)
@click.option("--cache", type=click.Path(path_type=Path), help="where trained models are cached")
@click.option("--progress/--no-progress", default=True)
def build(
    names: tuple[str, ...], all_: bool, quick: bool, out: Path | None, cache: Path | None, progress: bool
) -> None:
    """Generate the corpus, train the model, mine and verify cases, write artifacts."""
    from halbench.tasks.build import BuildError, build_task

    for ref in _refs(names, all_):
        try:
            spec = ref.spec(quick=quick)
        except TaskSpecError as exc:
            raise click.ClickException(str(exc)) from None
        dest = _destination(ref, out, quick)
        click.echo(f"building {ref.name}{' (quick)' if quick else ''} -> {dest}")
        try:
            m = build_task(spec, dest, cache or cache_root(), quick=quick, progress=progress)
        except BuildError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(
            f"  {m['counts']['test']} test + {m['counts']['dev']} dev cases, "
            f"pass rate {m['mining']['verification_pass_rate']:.0%}, model {m['model']['parameters']:,} "
            f"params (trained in {m['training']['seconds']}s), hash {m['content_hash'][:12]}"
        )


def _destination(ref: TaskRef, out: Path | None, quick: bool) -> Path:
    if out is not None:
        return out / ref.name
    if quick:
        return Path("build") / "quick" / ref.name
    return ref.artifacts


@tasks.command("verify")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="verify every task")
@click.option("--sample", default=32, show_default=True, help="cases to re-verify per task")
@click.option("--seed", default=0, show_default=True)
def verify_(names: tuple[str, ...], all_: bool, sample: int, seed: int) -> None:
    """Check hashes and re-verify a seeded sample of cases; exit 1 on any mismatch."""
    from halbench.tasks.check import check_task

    failed = 0
    for ref in _refs(names, all_):
        if not ref.built:
            click.secho(f"FAIL {ref.name}: not built", fg="red")
            failed += 1
            continue
        report = check_task(ref, sample=sample, seed=seed)
        if report.ok:
            click.secho(f"ok   {ref.name}: hashes match, {report.sampled} cases re-verified", fg="green")
        else:
            failed += 1
            click.secho(f"FAIL {ref.name}: {len(report.problems)} problem(s)", fg="red")
            for problem in report.problems[:20]:
                click.echo(f"     {problem}")
    if failed:
        raise SystemExit(1)
