"""Metric metadata as data, so reports and sites sort and filter metrics without special cases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower"]


@dataclass(frozen=True)
class MetricInfo:
    """What a metric means: which way is better, its range, and whether it needs planted causes."""

    name: str
    direction: Direction
    low: float
    high: float
    needs_ground_truth: bool
    description: str

    def __post_init__(self) -> None:
        if self.direction not in ("higher", "lower"):
            raise ValueError(f"metric {self.name!r}: direction must be 'higher' or 'lower', got {self.direction!r}")
        if not self.low <= self.high:
            raise ValueError(f"metric {self.name!r}: low ({self.low}) must not exceed high ({self.high})")

    @property
    def sign(self) -> int:
        """+1 when higher is better, -1 when lower is better: multiply by it to sort best-first descending."""
        return 1 if self.direction == "higher" else -1


METRICS: dict[str, MetricInfo] = {}


def register_metric(info: MetricInfo) -> MetricInfo:
    """Add ``info`` to :data:`METRICS`; a second metric under the same name is an error, never a silent override."""
    if info.name in METRICS:
        raise ValueError(f"metric {info.name!r} is already registered")
    METRICS[info.name] = info
    return info


_BEST_ALT = " Scored against the best-matching alternative cause; ties are broken against the method."

for _info in (
    MetricInfo(
        "average_precision",
        "higher",
        0.0,
        1.0,
        True,
        "Average precision of the scores at retrieving the cause positions among editable positions." + _BEST_ALT,
    ),
    MetricInfo(
        "auroc",
        "higher",
        0.0,
        1.0,
        True,
        "Probability that a cause position outscores a non-cause editable position." + _BEST_ALT,
    ),
    MetricInfo(
        "precision_at_k",
        "higher",
        0.0,
        1.0,
        True,
        "Fraction of the k top-scored editable positions that are causes, k = size of the cause." + _BEST_ALT,
    ),
    MetricInfo(
        "hit_at_k",
        "higher",
        0.0,
        1.0,
        True,
        "1 if the k top-scored editable positions are exactly the cause, k = size of the cause, else 0." + _BEST_ALT,
    ),
):
    register_metric(_info)
