"""The board as text for ``halbench leaderboard``: the site's board, the same numbers, in a terminal or Markdown.

Ranked rows first; then the entries that are not ranked, with the reason; then the leak probes with
the sanity verdict.
"""

from __future__ import annotations

from collections.abc import Callable

from halbench.leaderboard import HEADLINE, Board, Row
from halbench.metrics.hierarchical import Interval
from halbench.site.boards import DETAIL, HEADLINE_VIEW, PAIR
from halbench.site.sanity import verdicts


def interval(c: Interval | None) -> str:
    return "-" if c is None else f"{c.mean:.3f} [{c.low:.3f}, {c.high:.3f}]"


def rank(row: Row) -> str:
    return f"{row.rank}{'=' if row.tied else ''}" if row.ranked else "-"


def columns(board: Board, view: str) -> tuple[list[str], Callable[[Row], list[str]]]:
    """Headers and a function that turns a row into its cells, for ``view``."""
    if view == HEADLINE_VIEW:
        top = max(board.budgets)
        headers = ["rank", "method", "kind", "status", f"headline AP (mean {'/'.join(map(str, board.budgets))})"]
        headers += [f"AP@{b} (rows spent)" for b in board.budgets] + [f"{m}@{top}" for m in PAIR] + ["failed"]

        def cells(r: Row) -> list[str]:
            per = [f"{interval(r.metrics[b].get(HEADLINE))} ({r.rows[b]:.1f})" for b in board.budgets]
            pair = [interval(r.metrics[top].get(m)) for m in PAIR]
            return [rank(r), r.method, r.kind, r.status, interval(r.headline), *per, *pair, str(sum(r.failed.values()))]

        return headers, cells
    (budget,) = board.budgets
    headers = ["rank", "method", "kind", "status", *DETAIL, "rows spent", "failed"]

    def cells(r: Row) -> list[str]:
        values = [interval(r.metrics[budget].get(m)) for m in DETAIL]
        return [rank(r), r.method, r.kind, r.status, *values, f"{r.rows[budget]:.1f}", str(r.failed[budget])]

    return headers, cells


def markdown(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows])


def render(board: Board, view: str, as_markdown: bool = False) -> str:
    """The ranked table, the unranked entries with reasons, and the sanity verdicts."""
    from halbench.cli.render import table

    fmt = markdown if as_markdown else table
    headers, cells = columns(board, view)
    what = (
        f"headline (AP averaged over {'/'.join(map(str, board.budgets))} rows)"
        if view == HEADLINE_VIEW
        else (f"{view} rows per case")
    )
    scope = "all tasks" if board.scope == "all" else board.scope
    out = [f"{scope}, {what}: {board.cases} cases on {len(board.instances)} task instance(s)", ""]
    out.append(fmt(headers, [cells(r) for r in board.ranked]) if board.ranked else "(no complete, trusted entry)")
    if board.unranked:
        out += ["", "Not ranked:"]
        out.append(
            fmt(["method", "kind", "status", "why"], [[r.method, r.kind, r.status, r.reason] for r in board.unranked])
        )
    checks = verdicts(board)
    if checks:
        out += ["", "Sanity (leak probes beside random):"]
        rows = [[v.probe, interval(v.probe_ap), interval(v.random_ap), v.text] for v in checks]
        out.append(fmt(["probe", "probe AP", "random AP", "verdict"], rows))
    return "\n".join(out)
