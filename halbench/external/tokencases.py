"""Token-level cases: prompt and target as token ids, with the causes when they are known.

The format is halbench's own case record (a ``cases.jsonl`` of a built instance loads as is), with
every field but ``id``, ``prompt_ids`` and ``target_ids`` optional: ``split`` defaults to test,
``editable`` to every non-special position, ``causes`` to none (then only the ground-truth-free
metrics are scored). Unknown keys are errors, so a misspelt ``cause`` cannot silently drop the ground
truth. Every problem of every line is reported at once, with file, line and field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from halbench.external.jsonl import duplicate_ids, raise_problems, valid_lines
from halbench.external.textcases import FAMILY

Id = Annotated[int, Field(strict=True, ge=0)]


class TokenCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(min_length=1)] | Annotated[int, Field(strict=True)]
    prompt_ids: Annotated[list[Id], Field(min_length=1)]
    target_ids: Annotated[list[Id], Field(min_length=1)]
    split: Literal["dev", "test"] = "test"
    causes: list[Annotated[list[Id], Field(min_length=1)]] = []
    editable: list[Id] | None = None
    prompt_tokens: list[str] | None = None
    target_text: str | None = None
    faithful_ids: list[Id] | None = None
    decoys: list[Id] = []
    entity: list[Id] = []
    family: str = FAMILY
    # carried through unchanged from halbench's own records
    model: Any = None
    mechanisms: Any = None
    target_tokens: Any = None
    faithful_tokens: Any = None
    slots: Any = None
    verification: Any = None
    verify_seed: Any = None


def read_token_cases(path: Path, vocab: int, special: set[int]) -> list[dict]:
    """Validated records with defaults filled in; raises :class:`ManifestError` listing every problem."""
    records, problems = [], []
    for n, case in valid_lines(path, TokenCase, problems):
        record = _record(case, special)
        problems += [f"{path}:{n}: {p}" for p in position_problems(record, vocab)]
        records.append(record)
    raise_problems(path, problems + duplicate_ids(path, [r["id"] for r in records]))
    return records


def _record(case: TokenCase, special: set[int]) -> dict:
    record = case.model_dump()
    record["id"] = str(case.id)
    if case.editable is None:
        record["editable"] = [p for p, t in enumerate(case.prompt_ids) if t not in special]
    record["verification"] = case.verification if case.verification is not None else {}
    return record


def position_problems(record: dict, vocab: int) -> list[str]:
    """Positions outside the prompt, causes outside the editable positions, ids outside the vocabulary."""
    n, editable, out = len(record["prompt_ids"]), set(record["editable"]), []
    if not editable:
        out.append("field `editable`: no editable position")
    for field in ("editable", "decoys", "entity"):
        bad = sorted(p for p in record[field] if p >= n)
        if bad:
            out.append(f"field `{field}`: positions {bad} lie outside the prompt of {n} tokens")
    for a, alt in enumerate(record["causes"]):
        bad = sorted(p for p in alt if p not in editable)
        if bad:
            out.append(f"field `causes.{a}`: positions {bad} are not editable prompt positions")
    for field in ("prompt_ids", "target_ids", "faithful_ids"):
        bad = sorted({i for i in record[field] or () if i >= vocab})
        if bad:
            out.append(f"field `{field}`: token ids {bad[:5]} are outside the model's vocabulary of {vocab}")
    if record["prompt_tokens"] is not None and len(record["prompt_tokens"]) != n:
        out.append(f"field `prompt_tokens`: {len(record['prompt_tokens'])} tokens for {n} prompt ids")
    return out
