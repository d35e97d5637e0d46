"""The sanity panel: leak probes beside ``random``.

A probe scores positions from what a leak would expose (dev causes, token surface forms) and uses no
model rows; on a sound suite it scores like ``random``. The verdict is the suite's own target: within
:data:`TOLERANCE` AP of ``random`` on the headline, or not.
"""

from __future__ import annotations

from dataclasses import dataclass

from halbench.leaderboard import Board
from halbench.metrics.hierarchical import Interval

TOLERANCE = 0.05
REFERENCE = "random"


@dataclass(frozen=True)
class Verdict:
    scope: str
    probe: str
    probe_ap: Interval | None
    random_ap: Interval | None
    complete: bool  # the probe and random both cover every case of the scope

    @property
    def gap(self) -> float | None:
        if self.probe_ap is None or self.random_ap is None:
            return None
        return self.probe_ap.mean - self.random_ap.mean

    @property
    def at_chance(self) -> bool | None:
        """True within the tolerance, False beyond it, None when there is nothing to compare."""
        return None if self.gap is None else abs(self.gap) <= TOLERANCE

    @property
    def text(self) -> str:
        if self.at_chance is None:
            return "no verdict: no random results to compare"
        if self.at_chance:
            verdict = f"at chance (within {TOLERANCE} AP of random)"
        elif self.gap > 0:
            verdict = f"NOT at chance: {self.gap:.3f} AP above random (a leak?)"
        else:
            verdict = f"NOT at chance: {-self.gap:.3f} AP below random"
        return verdict if self.complete else verdict + "; incomplete results"


def verdicts(board: Board) -> list[Verdict]:
    """One verdict per probe on ``board`` (a headline board of one scope)."""
    reference = next((r for r in board.rows if r.method == REFERENCE), None)
    out = []
    for probe in board.probes:
        complete = all(c == 1.0 for c in probe.coverage.values())
        if reference is not None:
            complete = complete and all(c == 1.0 for c in reference.coverage.values())
        out.append(Verdict(board.scope, probe.method, probe.headline, reference and reference.headline, complete))
    return out
