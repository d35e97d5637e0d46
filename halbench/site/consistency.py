"""Does a ranking carry from one model to another? Per-model headlines, rankings, and Kendall tau between them.

A board that pools models can hide that methods win on one model and lose on the next; this page
shows each model's own headline for every method (the spread), each model's ranking, and the
agreement of every pair of rankings.
"""

from __future__ import annotations

from dataclasses import dataclass

from halbench.leaderboard import PROBE_KIND, TRUSTED, Board, model_agreement, per_model_headline
from halbench.site.catalog import ModelInfo
from halbench.site.inputs import Inputs


@dataclass
class Consistency:
    models: list[ModelInfo]
    methods: list[str]  # every non-probe method complete on some model, in overall board order
    headline: dict[str, dict[str, float]]  # model -> method -> headline on that model (complete entries)
    ranks: dict[str, dict[str, int]]  # model -> trusted method -> rank on that model (1 = best; ties share)
    tau: dict[tuple[str, str], float | None]  # both orders of every pair of models

    def spread(self, method: str) -> float | None:
        values = [self.headline[m][method] for m in self.headline if method in self.headline[m]]
        return max(values) - min(values) if len(values) > 1 else None


def competition_ranks(values: dict[str, float]) -> dict[str, int]:
    """1 for the best; equal values share a rank ("1, 1, 3")."""
    ordered = sorted(values.values(), reverse=True)
    return {m: ordered.index(v) + 1 for m, v in values.items()}


def consistency(inputs: Inputs, overall: Board, models: dict[str, ModelInfo], budgets: tuple[int, ...]) -> Consistency:
    """Per-model numbers for the non-probe methods of ``overall`` (the headline board of all tasks).

    Rankings and tau use trusted methods only (built-in or verified), as the board does.
    """
    methods = [r.method for r in overall.rows if r.kind != PROBE_KIND]
    headline = per_model_headline(inputs.store, inputs.index, methods, budgets) if budgets else {}
    trusted = {
        model: {m: v for m, v in values.items() if inputs.statuses.get(m) in TRUSTED}
        for model, values in headline.items()
    }
    ranks = {model: competition_ranks(values) for model, values in trusted.items()}
    pairs = model_agreement(trusted)
    tau = {**pairs, **{(b, a): t for (a, b), t in pairs.items()}}
    shown = [models[m] for m in sorted(headline) if m in models]
    return Consistency(shown, [m for m in methods if any(m in v for v in headline.values())], headline, ranks, tau)
