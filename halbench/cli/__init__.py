"""The ``halbench`` command line: one click group, one module per subcommand group."""

from __future__ import annotations

import click

from halbench import __version__
from halbench.cli.tasks_cmd import tasks


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="halbench")
def cli() -> None:
    """halbench: benchmark hallucination-cause attribution on planted, verified causes."""


cli.add_command(tasks)


def main() -> None:
    cli()
