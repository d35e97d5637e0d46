"""The views of a case that attribution methods get: the prompt and target, never a test case's cause.

``PublicCase`` is all a method sees of the case it attributes. ``DevCase`` adds
the cause, and exists only for the dev split, which is public by design: a
method may learn from it (tune itself, fit a model) before it sees any test
case. Suite v2 makes dev and test use disjoint mechanisms, so what a method
learns from dev causes cannot be looked up on test.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PublicCase:
    """Everything a method may see. Ground truth (causes, decoys, entity, roles) is deliberately absent."""

    id: str
    prompt_ids: tuple[int, ...]
    target_ids: tuple[int, ...]
    editable: tuple[int, ...]
    prompt_tokens: tuple[str, ...] = ()
    target_text: str | None = None  # the hallucinated string, for text models (substring matching)

    @property
    def length(self) -> int:
        return len(self.prompt_ids)

    @classmethod
    def from_record(cls, record: dict) -> PublicCase:
        return cls(
            id=str(record["id"]),
            prompt_ids=tuple(int(i) for i in record["prompt_ids"]),
            target_ids=tuple(int(i) for i in record["target_ids"]),
            editable=tuple(int(p) for p in record["editable"]),
            prompt_tokens=tuple(str(t) for t in record.get("prompt_tokens") or ()),
            target_text=record.get("target_text"),
        )

    def as_record(self) -> dict:
        return {
            "id": self.id,
            "prompt_ids": list(self.prompt_ids),
            "target_ids": list(self.target_ids),
            "editable": list(self.editable),
            "prompt_tokens": list(self.prompt_tokens),
            "target_text": self.target_text,
        }


@dataclass(frozen=True)
class DevCase(PublicCase):
    """A dev-split case with its cause alternatives (public: the dev split is for tuning)."""

    causes: tuple[tuple[int, ...], ...] = ()

    @classmethod
    def from_record(cls, record: dict) -> DevCase:
        base = PublicCase.from_record(record)
        causes = tuple(tuple(int(p) for p in alt) for alt in record.get("causes") or ())
        return cls(**{**base.__dict__, "causes": causes})

    def as_record(self) -> dict:
        return {**super().as_record(), "causes": [list(a) for a in self.causes]}
