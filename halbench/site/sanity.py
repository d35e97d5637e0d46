"""The sanity panel: leak probes beside ``random``, and the recurrence probe over the case files.

A probe scores positions from what a leak would expose (dev causes, token surface forms) and uses no
model rows; on a sound suite it scores like ``random``. The verdict is the suite's own target: within
:data:`TOLERANCE` AP of ``random`` on the headline, or not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from halbench.leaderboard import Board
from halbench.metrics import average_precision
from halbench.metrics.hierarchical import Interval
from halbench.tasks.recurrence import expected_random_ap, recurrence_scores, repeated_causes, uniqueness_scores

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


@dataclass(frozen=True)
class Recurrence:
    """The transductive probes on one scope, from the case files: tokens recurring across a model's public test
    prompts (:func:`~halbench.tasks.recurrence.recurrence_scores`) and tokens seen in no other one
    (:func:`~halbench.tasks.recurrence.uniqueness_scores`). They need every test prompt at once, so they are
    no methods and have no results: each is compared with the expected AP of a random order on the same cases.
    """

    scope: str
    cases: int
    probe_ap: float  # recurrence
    unique_ap: float  # uniqueness
    random_ap: float
    repeated: int  # cause tokens that cause more than one public test case of their model

    @property
    def gap(self) -> float:
        return max(self.probe_ap, self.unique_ap) - self.random_ap

    @property
    def at_chance(self) -> bool:
        return abs(self.probe_ap - self.random_ap) <= TOLERANCE and self.gap <= TOLERANCE and not self.repeated

    @property
    def text(self) -> str:
        if self.at_chance:
            return f"at chance (within {TOLERANCE} AP of random; no cause token causes two test cases)"
        repeated = f"; {self.repeated} cause token(s) cause several test cases of a model" if self.repeated else ""
        return (
            f"NOT at chance: recurrence {self.probe_ap - self.random_ap:+.3f}, uniqueness "
            f"{self.unique_ap - self.random_ap:+.3f} AP against random{repeated}"
        )


def recurrence(cases: dict[str, list[dict]], draws: int = 64) -> list[Recurrence]:
    """One verdict for all instances, then one per task, over ``cases`` (instance name -> its test cases).

    Each instance weighs the same in a scope, as in the headline; a model's pool is all of its instances.
    """
    pools: dict[str, list[dict]] = {}
    for name, records in cases.items():
        pools.setdefault(name.split("/")[1], []).extend(records)
    per_instance = {}
    for name, records in cases.items():
        if records:
            per_instance[name] = (*_instance_means(records, pools[name.split("/")[1]], draws), len(records))
    repeated = {model: len(repeated_causes(pool)) for model, pool in pools.items()}
    scopes = {"all": list(per_instance)}
    for name in per_instance:
        scopes.setdefault(name.split("/")[0], []).append(name)
    out = []
    for scope, names in scopes.items():
        if names:
            means = np.mean([per_instance[n][:3] for n in names], axis=0)
            models = {n.split("/")[1] for n in names}
            count = sum(per_instance[n][3] for n in names)
            out.append(Recurrence(scope, count, *map(float, means), sum(repeated[m] for m in models)))
    return out


def _instance_means(records: list[dict], pool: list[dict], draws: int) -> tuple[float, float, float]:
    """Mean AP of the recurrence probe, the uniqueness probe and a random order (expected) on ``records``."""
    probe, unique, chance = [], [], []
    for r in records:
        probe.append(average_precision(recurrence_scores(r, pool), r["causes"], r["editable"]))
        unique.append(average_precision(uniqueness_scores(r, pool), r["causes"], r["editable"]))
        chance.append(expected_random_ap(r, draws))
    return float(np.mean(probe)), float(np.mean(unique)), float(np.mean(chance))
