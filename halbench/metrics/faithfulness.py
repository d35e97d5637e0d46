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


def faithfulness_metrics(scores: np.ndarray, evaluator: Scorer, draws: np.ndarray) -> dict[str, float]:
    """S_rep at each alpha, comprehensiveness and sufficiency for one case's scores, in one batched call."""
    editable = list(evaluator.case.editable)
    fractions = sorted({*ALPHAS, ERASER_FRACTION})  # each kept set is scored once
    kept = {f: top_fraction_positions(scores, editable, f) for f in fractions}
    top = set(kept[ERASER_FRACTION])
    blocks = [_keep_only(evaluator, draws, kept[f]) for f in fractions]
    blocks.append(_keep_only(evaluator, draws, [p for p in editable if p not in top]))
    probs = evaluator.target_prob(np.concatenate([evaluator.prompt[None, :], *blocks]))
    base, means = probs[0], probs[1:].reshape(len(blocks), -1).mean(1)
    kept_mean = dict(zip(fractions, means[:-1], strict=True))
    out = {f"s_rep@{a}": float(kept_mean[a]) for a in ALPHAS}
    out["comprehensiveness"] = float(base - means[-1])
    out["sufficiency"] = float(base - kept_mean[ERASER_FRACTION])
    return out
