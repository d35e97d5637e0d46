"""The view of a case that attribution methods get: the prompt and target, never the cause."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PublicCase:
    """Everything a method may see. Ground truth (``causes``, ``decoys``, ``entity``) is deliberately absent."""

    id: str
    prompt_ids: tuple[int, ...]
    target_ids: tuple[int, ...]
    editable: tuple[int, ...]
    prompt_tokens: tuple[str, ...] = ()

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
            prompt_tokens=tuple(record.get("prompt_tokens") or ()),
        )
