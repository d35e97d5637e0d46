"""Metrics for hallucination-cause attribution: localization per case, and aggregation across cases.

Model-based metrics (reproducibility, sufficiency) live elsewhere; this package is pure numpy/scikit-learn.
"""

from halbench.metrics.aggregate import bootstrap_ci, paired_difference_ci, rank_with_ties
from halbench.metrics.info import METRICS, MetricInfo, register_metric
from halbench.metrics.localization import (
    LOCALIZATION_METRICS,
    auroc,
    average_precision,
    hit_at_k,
    localization_metrics,
    precision_at_k,
)
from halbench.metrics.selection import top_fraction_positions
from halbench.metrics.validation import MetricInputError

__all__ = [
    "LOCALIZATION_METRICS",
    "METRICS",
    "MetricInfo",
    "MetricInputError",
    "auroc",
    "average_precision",
    "bootstrap_ci",
    "hit_at_k",
    "localization_metrics",
    "paired_difference_ci",
    "precision_at_k",
    "rank_with_ties",
    "register_metric",
    "top_fraction_positions",
]
