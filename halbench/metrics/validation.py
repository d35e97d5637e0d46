"""Input checks shared by the metrics: a bad input raises a clear error instead of yielding a silent number."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


class MetricInputError(ValueError):
    """Scores, positions or causes given to a metric are malformed (wrong length, non-finite, out of range)."""


@dataclass(frozen=True)
class Case:
    """One validated case restricted to editable positions: ``scores[i]`` belongs to position ``editable[i]``."""

    editable: np.ndarray  # int positions, in the caller's order
    scores: np.ndarray  # float scores of those positions
    alternatives: tuple[np.ndarray, ...]  # one boolean cause indicator over ``editable`` per alternative


def as_scores(scores: Sequence[float] | np.ndarray, length: int | None = None) -> np.ndarray:
    """Scores as a 1-D float array of finite values (and of ``length`` entries when given)."""
    try:
        array = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as exc:
        raise MetricInputError(f"scores must be numbers: {exc}") from exc
    if array.ndim != 1:
        raise MetricInputError(f"scores must be one float per prompt position (1-D), got shape {array.shape}")
    if length is not None and array.shape[0] != length:
        raise MetricInputError(f"scores has {array.shape[0]} entries but the prompt has {length} positions")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise MetricInputError(f"scores must be finite; NaN or inf at positions {bad[:10].tolist()}")
    return array


def as_positions(positions: Sequence[int], what: str, length: int) -> np.ndarray:
    """Distinct integer positions in ``[0, length)``, as an int array in the given order."""
    try:
        values = [operator.index(p) for p in positions]
    except TypeError as exc:
        raise MetricInputError(f"{what} must be integer positions: {exc}") from exc
    if not values:
        raise MetricInputError(f"{what} is empty")
    if len(set(values)) != len(values):
        raise MetricInputError(f"{what} repeats a position: {values}")
    outside = [p for p in values if not 0 <= p < length]
    if outside:
        raise MetricInputError(f"{what} has positions outside the prompt (length {length}): {outside}")
    return np.asarray(values, dtype=np.int64)


def validate_case(
    scores: Sequence[float] | np.ndarray,
    causes: Sequence[Sequence[int]],
    editable: Sequence[int],
    length: int | None = None,
) -> Case:
    """Check one case and restrict it to editable positions; every cause position must be editable."""
    array = as_scores(scores, length)
    positions = as_positions(editable, "editable", array.shape[0])
    if len(causes) == 0:
        raise MetricInputError("causes is empty: a localization metric needs at least one alternative cause")
    index = {int(p): i for i, p in enumerate(positions)}
    alternatives = []
    for n, alternative in enumerate(causes):
        cause = as_positions(alternative, f"causes[{n}]", array.shape[0])
        fixed = [int(p) for p in cause if int(p) not in index]
        if fixed:
            raise MetricInputError(f"causes[{n}] has positions that are not editable: {fixed}")
        indicator = np.zeros(positions.shape[0], dtype=bool)
        indicator[[index[int(p)] for p in cause]] = True
        alternatives.append(indicator)
    return Case(editable=positions, scores=array[positions], alternatives=tuple(alternatives))
