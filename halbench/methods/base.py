"""The attribution contract: ``Method.attribute(case, scorer, rng) -> Attribution``.

Like captum, every method answers the same call; like inseq, a method is
registered by subclassing with a ``name``. A method sees a :class:`PublicCase`
(no ground truth) and reaches the model only through the :class:`Scorer`, whose
budget it may read (``scorer.remaining``) to size itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from halbench.case import DevCase, PublicCase
from halbench.scoring import Scorer

KINDS = ("baseline", "perturbation", "gradient", "attention", "tracer", "probe")
_REGISTRY: dict[str, type[Method]] = {}


class MethodError(ValueError):
    """Unknown method, bad hyper-parameter, or an invalid attribution."""


@dataclass
class Attribution:
    """One score per prompt position (higher = more causal); optionally the subsequence a tracer returns."""

    scores: np.ndarray
    subsequence: tuple[int, ...] | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def validate(self, case: PublicCase) -> None:
        scores = np.asarray(self.scores)
        if scores.shape != (case.length,):
            raise MethodError(f"scores must have shape ({case.length},), got {scores.shape}")
        if not np.issubdtype(scores.dtype, np.number) or not np.all(np.isfinite(scores)):
            raise MethodError("scores must be finite numbers (NaN or inf found)")
        if self.subsequence is not None and not set(self.subsequence) <= set(case.editable):
            raise MethodError("subsequence positions must be editable prompt positions")


class Method(ABC):
    """Base class; subclasses set ``name``, ``description``, ``kind`` and ``defaults`` and are registered."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[str]
    defaults: ClassVar[dict[str, Any]] = {}
    paper: ClassVar[str | None] = None  # where the algorithm is described (a URL), for the leaderboard
    code: ClassVar[str | None] = None  # an upstream implementation, where there is one
    uses_dev: ClassVar[bool] = False  # True: ``fit`` receives the instance's dev cases before any test case

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            return
        if cls.kind not in KINDS:
            raise MethodError(f"method {cls.name}: kind must be one of {KINDS}")
        if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
            raise MethodError(f"a method named {cls.name!r} is already registered")
        _REGISTRY[cls.name] = cls

    def __init__(self, **params: Any):
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise MethodError(
                f"method {self.name}: unknown hyper-parameters {unknown} (known: {sorted(self.defaults)})"
            )
        self.params = {**self.defaults, **params}

    @abstractmethod
    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        """Score every prompt position for causing ``case``'s target."""

    def fit(self, dev: list[DevCase], vocabulary: list[str], unigram: np.ndarray | None) -> None:  # noqa: B027
        """Learn from the instance's public dev split (called once per instance when ``uses_dev``).

        ``vocabulary`` holds the token strings by id, ``unigram`` the corpus counts by id (None if unknown).
        Most methods learn nothing, hence a no-op rather than an abstract method.
        """


def registered() -> dict[str, type[Method]]:
    """All registered methods by name (built-ins and any loaded plug-ins)."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def get_method(name: str, **params: Any) -> Method:
    methods = registered()
    if name not in methods:
        raise MethodError(f"unknown method {name!r} (available: {', '.join(methods)})")
    return methods[name](**params)


def editable_mask(case: PublicCase) -> np.ndarray:
    mask = np.zeros(case.length, dtype=bool)
    mask[list(case.editable)] = True
    return mask


def masked_scores(values: np.ndarray, case: PublicCase) -> np.ndarray:
    """Scores with fixed positions pushed below every editable one (they can never be causes)."""
    values = np.asarray(values, dtype=np.float64)
    mask = editable_mask(case)
    floor = values[mask].min() - 1.0 if mask.any() else 0.0
    return np.where(mask, values, floor)


def _load_builtins() -> None:
    from halbench.methods import builtins  # noqa: F401  (registers on import)
