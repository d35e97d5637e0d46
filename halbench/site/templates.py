"""The jinja2 environment: autoescaping always on, undefined names are errors, a few number filters.

Autoescaping is what makes hostile submission text (names, descriptions, authors) inert; nothing is
marked safe except the SVG plots matplotlib writes from our own numbers and safe-charset names.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from halbench import __version__
from halbench.leaderboard import HEADLINE
from halbench.metrics import METRICS
from halbench.site.boards import DETAIL, HEADLINE_VIEW, LABELS, PAIR
from halbench.site.casesview import mechanism_text
from halbench.site.sanity import TOLERANCE
from halbench.tasks.registry import REPO_ROOT

SOURCES = REPO_ROOT / "site"  # templates/ and static/


def num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def rank_text(row) -> str:
    """ "3" or "3=" (tied: the paired interval of the difference with the group leader contains zero)."""
    return f"{row.rank}{'=' if row.tied else ''}"


def human_int(value: int | None) -> str:
    """1234567 -> "1.23M" (parameter counts)."""
    if value is None:
        return "–"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= div:
            return f"{value / div:.3g}{unit}"
    return str(value)


def environment(templates: Path = SOURCES / "templates") -> Environment:
    env = Environment(
        loader=FileSystemLoader(templates),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(num=num, rank=rank_text, human=human_int, mechanism=mechanism_text)
    env.globals.update(
        METRICS=METRICS,
        HEADLINE=HEADLINE,
        HEADLINE_VIEW=HEADLINE_VIEW,
        PAIR=PAIR,
        DETAIL=DETAIL,
        LABELS=LABELS,
        TOLERANCE=TOLERANCE,
        version=__version__,
    )
    return env
