"""The ``halbench`` command line: one click group, one module per subcommand group."""

from __future__ import annotations

import click

from halbench import __version__
from halbench.cli.eval_cmd import eval_, methods
from halbench.cli.site_cmd import leaderboard, site
from halbench.cli.tasks_cmd import models, tasks


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="halbench")
def cli() -> None:
    """halbench: benchmark hallucination-cause attribution on planted, verified causes."""


for command in (tasks, models, eval_, methods, leaderboard, site):
    cli.add_command(command)


def main() -> None:
    cli()
