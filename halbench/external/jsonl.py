"""Reading a user's JSONL cases file: each problem named by file, line and field, all of them at once.

Why its own module: text and token cases share the reading and the wording of their errors, so a
user fixing a file gets the same kind of message whichever format it holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from halbench.tasks.artifacts import ManifestError

M = TypeVar("M", bound=BaseModel)
SHOWN = 50  # problems listed in one message; the count says how many there were


def json_lines(path: Path) -> Iterator[tuple[int, object]]:
    """``(line number, value)`` of every non-blank line; invalid JSON stops with its file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except FileNotFoundError:
        raise ManifestError(f"{path}: file not found") from None
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ManifestError(f"{path}:{n}: not valid JSON ({exc.msg})") from None


def valid_lines(path: Path, model: type[M], problems: list[str]) -> Iterator[tuple[int, M]]:
    """``(line number, case)`` of every line that validates as ``model``; the others go to ``problems``."""
    for n, raw in json_lines(path):
        if not isinstance(raw, dict):
            problems.append(f"{path}:{n}: a case must be a JSON object")
            continue
        try:
            yield n, model.model_validate(raw)
        except ValidationError as exc:
            problems += field_problems(path, n, exc)


def field_problems(path: Path, line: int, exc: ValidationError) -> list[str]:
    """One message per invalid field of one line."""
    words = {"extra_forbidden": "unknown key", "missing": "required field is missing"}
    return [
        f"{path}:{line}: field `{'.'.join(str(p) for p in err['loc']) or '(line)'}`: "
        f"{words.get(err['type'], err['msg'])}"
        for err in exc.errors()
    ]


def duplicate_ids(path: Path, ids: list[str]) -> list[str]:
    seen, out = set(), []
    for cid in ids:
        if cid in seen:
            out.append(f"{path}: case id {cid!r} appears twice")
        seen.add(cid)
    return out


def raise_problems(path: Path, problems: list[str]) -> None:
    if problems:
        listed = "\n  ".join(problems[:SHOWN])
        more = f"\n  ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        raise ManifestError(f"{path}: {len(problems)} problem(s):\n  {listed}{more}")
