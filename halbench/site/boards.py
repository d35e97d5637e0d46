"""Which boards the site and the CLI show: per scope, the headline view and one view per budget.

The headline averages AP over the suite's budgets (16, 64, 256) that have any results; a suite budget
with no results at all is named on the page rather than silently making every entry incomplete.
A budget view ranks on AP at that budget alone and shows the other metrics there.
"""

from __future__ import annotations

from dataclasses import dataclass

from halbench.leaderboard import BUDGETS, HEADLINE, Board, build_board
from halbench.site.inputs import Inputs

HEADLINE_VIEW = "headline"
PAIR = ("s_rep@0.5", "p_rep@0.5")  # the paper's reproducibility beside its probability variant
DETAIL = ("average_precision", "auroc", "precision_at_k", "hit_at_k", *PAIR, "s_rep_lm@0.5", "comprehensiveness")
LABELS = {  # what a column is, in a few words, under its name
    "average_precision": "AP",
    "s_rep@0.5": "the paper's reproducibility (greedy rate)",
    "p_rep@0.5": "probability variant (mean p)",
    "s_rep_lm@0.5": "reproducibility, model refills",
    "comprehensiveness": "ERASER",
}


@dataclass(frozen=True)
class Views:
    headline: tuple[int, ...]  # budgets averaged by the headline
    missing: tuple[int, ...]  # suite budgets with no results at all
    budgets: tuple[int, ...]  # every budget with results: one view each

    @property
    def names(self) -> list[str]:
        return [HEADLINE_VIEW, *map(str, self.budgets)]

    @property
    def pair_budget(self) -> int | None:
        """The budget at which the headline view shows s_rep and p_rep: the largest headline budget."""
        return max(self.headline) if self.headline else None


def views(inputs: Inputs) -> Views:
    present = set(inputs.store.budgets)
    headline = tuple(b for b in BUDGETS if b in present)
    missing = tuple(b for b in BUDGETS if b not in present)
    return Views(headline, missing, tuple(sorted(present)))


def board(inputs: Inputs, scope: str, view: str, shown: Views, n_boot: int = 1000) -> Board:
    """The board of ``scope`` ("all" or a task) in ``view`` ("headline" or a budget as text)."""
    if view == HEADLINE_VIEW:
        budgets, metrics = shown.headline, (HEADLINE, *PAIR)
    else:
        budgets, metrics = (int(view),), DETAIL
    if not budgets:
        return Board(scope, (), inputs.index.instances(scope), 0, [])
    return build_board(inputs.store, inputs.index, scope, inputs.statuses, budgets, metrics, n_boot)


def all_boards(inputs: Inputs, shown: Views, n_boot: int = 1000) -> dict[tuple[str, str], Board]:
    """Every (scope, view) board; scopes are "all" and each task with a built instance."""
    scopes = ["all", *inputs.tasks]
    return {(s, v): board(inputs, s, v, shown, n_boot) for s in scopes for v in shown.names}
