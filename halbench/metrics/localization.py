"""Per-case localization metrics: how well a method's scores single out the planted cause.

Two rules apply to every metric here:

* **Best-matching alternative.** ``causes`` lists alternative causes, each sufficient alone; a method that finds
  any one of them has localized the cause. Each metric is computed against every alternative and the highest
  value is reported (each metric picks its own best alternative).
* **Ties go against the method.** Positions are ranked by score, highest first, and among equal scores the
  non-cause positions rank above the cause positions. A constant score therefore earns the same value as a
  fully reversed ranking (the worst value possible), never credit for an order it did not express.

Only editable positions count: fixed markers are dropped before ranking, however they score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from halbench.metrics.validation import Case, MetricInputError, validate_case

Scores = Sequence[float] | np.ndarray
Causes = Sequence[Sequence[int]]
Kernel = Callable[[np.ndarray, np.ndarray], float]


def pessimistic_order(scores: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Indices best-first by score, with negatives ahead of positives among equal scores (ties against the method)."""
    return np.lexsort((positive, -scores))


def _strict_scores(scores: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """Untied scores (n for the top, 1 for the bottom) that encode the pessimistic ranking, for sklearn."""
    strict = np.empty(scores.shape[0], dtype=float)
    strict[pessimistic_order(scores, positive)] = np.arange(scores.shape[0], 0, -1)
    return strict


def _average_precision(scores: np.ndarray, positive: np.ndarray) -> float:
    return float(average_precision_score(positive, _strict_scores(scores, positive)))


def _auroc(scores: np.ndarray, positive: np.ndarray) -> float:
    if positive.all():
        raise MetricInputError("AUROC is undefined when a cause covers every editable position (no negatives)")
    return float(roc_auc_score(positive, _strict_scores(scores, positive)))


def _precision_at_k(scores: np.ndarray, positive: np.ndarray) -> float:
    k = int(positive.sum())
    return float(positive[pessimistic_order(scores, positive)[:k]].sum() / k)


def _hit_at_k(scores: np.ndarray, positive: np.ndarray) -> float:
    k = int(positive.sum())
    return float(positive[pessimistic_order(scores, positive)[:k]].all())


def _best(case: Case, kernel: Kernel) -> float:
    """The value against the best-matching alternative cause."""
    return max(kernel(case.scores, alternative) for alternative in case.alternatives)


def average_precision(scores: Scores, causes: Causes, editable: Sequence[int], *, length: int | None = None) -> float:
    """Average precision (scikit-learn's) of the scores at retrieving the best-matching alternative cause.

    Ties go against the method, so constant scores get the minimum AP for the case, e.g. 1/3 for one cause among
    three editable positions.
    """
    return _best(validate_case(scores, causes, editable, length), _average_precision)


def auroc(scores: Scores, causes: Causes, editable: Sequence[int], *, length: int | None = None) -> float:
    """Area under the ROC curve for the best-matching alternative cause; ties go against the method.

    Constant scores rank every cause below every non-cause and get 0.0 (not the 0.5 of averaged ties), so a method
    must express an order to earn credit. Raises :class:`MetricInputError` if a cause covers all editable positions.
    """
    return _best(validate_case(scores, causes, editable, length), _auroc)


def precision_at_k(scores: Scores, causes: Causes, editable: Sequence[int], *, length: int | None = None) -> float:
    """|top-k ∩ cause| / k with k the size of the alternative, for the best-matching alternative; ties against."""
    return _best(validate_case(scores, causes, editable, length), _precision_at_k)


def hit_at_k(scores: Scores, causes: Causes, editable: Sequence[int], *, length: int | None = None) -> float:
    """1.0 if the top-k editable positions are exactly some alternative cause (k = its size), else 0.0; ties against."""
    return _best(validate_case(scores, causes, editable, length), _hit_at_k)


LOCALIZATION_METRICS: dict[str, Kernel] = {
    "average_precision": _average_precision,
    "auroc": _auroc,
    "precision_at_k": _precision_at_k,
    "hit_at_k": _hit_at_k,
}


def localization_metrics(
    scores: Scores, causes: Causes, editable: Sequence[int], *, length: int | None = None
) -> dict[str, float]:
    """All localization metrics of one case, validating the inputs once; keys match :data:`METRICS`."""
    case = validate_case(scores, causes, editable, length)
    return {name: _best(case, kernel) for name, kernel in LOCALIZATION_METRICS.items()}
