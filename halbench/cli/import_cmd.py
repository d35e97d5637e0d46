"""``halbench import halogen``: bring hallucinations found elsewhere in as text cases."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("import")
def import_() -> None:
    """Convert outside results into halbench case files."""


@import_.command("halogen")
@click.argument("csv_path", metavar="CSV", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="cases file to write")
@click.option(
    "--chat-template/--no-chat-template",
    default=True,
    show_default=True,
    help="wrap each prompt in the model's chat template (HALoGEN prompts were posed to chat models)",
)
def halogen(csv_path: Path, out: Path, chat_template: bool) -> None:
    """A SAT reference HALoGEN result CSV (prompt, response, hallucinated_atomic_units) as text cases.

    Each row becomes one case whose hallucination is its first hallucinated atom found in the response.
    Point an external task.yaml at the written file (see examples/own-model/README.md).
    """
    from halbench.external.halogen import HalogenError, read_halogen, write_text_cases

    try:
        report = read_halogen(csv_path, chat_template=chat_template)
    except HalogenError as exc:
        raise click.ClickException(str(exc)) from None
    if not report.cases:
        raise click.ClickException(f"{csv_path}: no row has a hallucinated atom ({_skips(report.skipped)})")
    write_text_cases(out, report.cases)
    click.echo(f"wrote {len(report.cases)} case(s) to {out}")
    if report.skipped_rows:
        click.echo(f"skipped {report.skipped_rows} row(s): {_skips(report.skipped)}")


def _skips(skipped) -> str:
    return ", ".join(f"{count} {reason}" for reason, count in skipped.most_common()) or "no rows"
