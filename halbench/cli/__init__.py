"""The ``halbench`` command line: one click group, one module per subcommand group."""

from __future__ import annotations

import click

from halbench import __version__
from halbench.cli.eval_cmd import eval_, methods
from halbench.cli.import_cmd import import_
from halbench.cli.site_cmd import leaderboard, site
from halbench.cli.submit_cmd import submit, verify
from halbench.cli.tasks_cmd import models, tasks
from halbench.cli.trace_cmd import trace


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="halbench")
def cli() -> None:
    """halbench: benchmark hallucination-cause attribution on planted, verified causes."""


for command in (tasks, models, eval_, methods, submit, verify, leaderboard, site, trace, import_):
    cli.add_command(command)


def main() -> None:
    cli()
