"""Aggregating per-case metric values: bootstrap confidence intervals and a leaderboard that admits ties.

All resampling is a percentile bootstrap over cases with a fixed seed, so a report is reproducible bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from halbench.metrics.info import Direction
from halbench.metrics.validation import MetricInputError

Values = Sequence[float] | np.ndarray


def _as_values(values: Values, what: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise MetricInputError(f"{what} must be numbers: {exc}") from exc
    if array.ndim != 1 or array.shape[0] == 0:
        raise MetricInputError(f"{what} must be a non-empty 1-D list of per-case values, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise MetricInputError(f"{what} must be finite; found NaN or inf")
    return array


def bootstrap_ci(values: Values, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the sample mean and its percentile-bootstrap interval at ``level``.

    One ``(n_boot, n)`` index matrix is drawn from ``numpy.random.default_rng(seed)``, so equal inputs and seed give
    equal intervals.
    """
    array = _as_values(values, "values")
    if n_boot < 1:
        raise MetricInputError(f"n_boot must be at least 1, got {n_boot}")
    if not 0.0 < level < 1.0:
        raise MetricInputError(f"level must lie in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    index = rng.integers(0, array.shape[0], size=(n_boot, array.shape[0]), dtype=np.int32)
    means = array[index].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(array.mean()), float(low), float(high)


def paired_difference_ci(
    a: Values, b: Values, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """Bootstrap interval of mean(a - b) for two methods scored on the same cases (resampling cases, kept paired)."""
    first, second = _as_values(a, "a"), _as_values(b, "b")
    if first.shape != second.shape:
        raise MetricInputError(f"paired values need the same cases: {first.shape[0]} vs {second.shape[0]} values")
    return bootstrap_ci(first - second, n_boot=n_boot, seed=seed, level=level)


def rank_with_ties(
    means_by_method: dict[str, Values],
    direction: Direction,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, int]:
    """Rank methods by mean per-case value, sharing a rank where the difference is not significant.

    ``means_by_method`` maps each method to its per-case values, all on the same cases in the same order. Rule
    (consecutive grouping from the top, no chaining): methods are sorted best mean first (name breaks exact ties).
    The first method leads group 1. Each next method joins the current group, taking the leader's rank, when the
    paired bootstrap interval of its difference to the group's *leader* contains zero; otherwise it leads a new
    group whose rank is 1 + the number of methods above it (competition ranking: 1, 1, 3). Every method thus
    shares a rank only with a leader it is indistinguishable from, and a long chain of small steps cannot drag a
    clearly worse method up to rank 1. Returns ``{method: rank}`` in rank order.
    """
    if direction not in ("higher", "lower"):
        raise MetricInputError(f"direction must be 'higher' or 'lower', got {direction!r}")
    values = {name: _as_values(v, f"values of {name!r}") for name, v in means_by_method.items()}
    sign = 1.0 if direction == "higher" else -1.0
    order = sorted(values, key=lambda name: (-sign * values[name].mean(), name))
    ranks: dict[str, int] = {}
    leader = None
    for position, name in enumerate(order):
        if leader is not None and _indistinguishable(values[leader], values[name], n_boot, seed, level):
            ranks[name] = ranks[leader]
        else:
            leader, ranks[name] = name, position + 1
    return ranks


def _indistinguishable(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int, level: float) -> bool:
    """Whether the paired bootstrap interval of mean(a - b) contains zero."""
    _, low, high = paired_difference_ci(a, b, n_boot=n_boot, seed=seed, level=level)
    return low <= 0.0 <= high
