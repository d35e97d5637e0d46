"""Choosing the top-scored positions, for model-based metrics that edit or keep a fraction of the prompt."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from halbench.metrics.validation import MetricInputError, as_positions, as_scores


def top_fraction_positions(scores: Sequence[float] | np.ndarray, editable: Sequence[int], alpha: float) -> list[int]:
    """The ``ceil(alpha * len(editable))`` top-scored editable positions, best first.

    The causes are not known here, so ties cannot be broken against the method; instead equal scores are broken by
    position, lowest first, which is deterministic and independent of the method. ``alpha * n`` is rounded to 9
    decimals before the ceiling so that float noise (0.28 * 25 = 7.000000000000001) does not add a position.
    """
    if not 0.0 <= alpha <= 1.0:
        raise MetricInputError(f"alpha must lie in [0, 1], got {alpha}")
    array = as_scores(scores)
    positions = as_positions(editable, "editable", array.shape[0])
    k = math.ceil(round(alpha * positions.shape[0], 9))
    order = np.lexsort((positions, -array[positions]))
    return [int(p) for p in positions[order[:k]]]
