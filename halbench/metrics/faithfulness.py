"""Model-based metrics that need no ground truth: the paper's reproducibility rate, ERASER's pair.

Every method is scored on the same seeded refills: the replacement draws for
a case depend only on the case and the seed, never on the method, so two
methods that keep the same positions get the same number.
"""

from __future__ import annotations

import zlib

import numpy as np

from halbench.metrics.info import MetricInfo, register_metric
from halbench.metrics.selection import top_fraction_positions
from halbench.scoring import Scorer

ALPHAS = (0.25, 0.5, 0.75)
ERASER_FRACTION = 0.25

for _alpha in ALPHAS:
    register_metric(
        MetricInfo(
            f"s_rep@{_alpha}",
            "higher",
            0.0,
            1.0,
            False,
            f"Reproducibility: mean target probability when the top {_alpha:.0%} of editable positions are kept and "
            "every other editable position is refilled (same seeded refills for every method).",
        )
    )
register_metric(
    MetricInfo(
        "comprehensiveness",
        "higher",
        -1.0,
        1.0,
        False,
        f"Drop in target probability when the top {ERASER_FRACTION:.0%} of editable positions are refilled.",
    )
)
register_metric(
    MetricInfo(
        "sufficiency",
        "lower",
        -1.0,
        1.0,
        False,
        f"Drop in target probability when only the top {ERASER_FRACTION:.0%} of editable positions are kept.",
    )
)


def case_draws(evaluator: Scorer, refills: int, seed: int) -> np.ndarray:
    """``[refills, L]`` replacement draws for every position, fixed by the case id and the seed."""
    rng = np.random.default_rng([seed, zlib.crc32(evaluator.case.id.encode())])
    mask = np.ones((refills, evaluator.case.length), dtype=bool)
    return evaluator.replacements.sample(rng, evaluator.prompt, mask)


def _keep_only(evaluator: Scorer, draws: np.ndarray, kept: list[int]) -> np.ndarray:
    keep = np.ones(evaluator.case.length, dtype=bool)
    keep[list(evaluator.case.editable)] = False
    keep[kept] = True
    return np.where(keep[None, :], evaluator.prompt[None, :], draws)


def faithfulness_metrics(
    scores: np.ndarray, evaluator: Scorer, draws: np.ndarray, memo: dict | None = None
) -> dict[str, float]:
    """S_rep at each alpha, comprehensiveness and sufficiency for one case's scores.

    Each distinct kept set is one model call of exactly ``len(draws)`` rows, so its number never
    depends on what else was scored with it; that is what makes ``memo`` exact. ``memo`` (one per
    case, seed and refill count, shared across methods and budgets) skips kept sets already scored:
    methods often agree on their top positions, and budget-independent methods repeat every set.
    """
    memo = {} if memo is None else memo
    editable = list(evaluator.case.editable)
    fractions = sorted({*ALPHAS, ERASER_FRACTION})
    kept = {f: top_fraction_positions(scores, editable, f) for f in fractions}
    top = set(kept[ERASER_FRACTION])
    sets = {f: tuple(sorted(kept[f])) for f in fractions}
    sets["rest"] = tuple(p for p in editable if p not in top)
    if "base" not in memo:
        memo["base"] = float(evaluator.target_prob(evaluator.prompt[None, :])[0])
    for key in sets.values():
        if key not in memo:
            memo[key] = float(evaluator.target_prob(_keep_only(evaluator, draws, list(key))).mean())
    base = memo["base"]
    out = {f"s_rep@{a}": memo[sets[a]] for a in ALPHAS}
    out["comprehensiveness"] = base - memo[sets["rest"]]
    out["sufficiency"] = base - memo[sets[ERASER_FRACTION]]
    return out
