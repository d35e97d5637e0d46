"""``task.yaml`` of kind ``external``: a model folder and a cases file, no generator recipe.

Validation is strict like :mod:`halbench.tasks.spec` (unknown keys are errors) and reports every
problem at once, each with the file and the field, so a typo never silently falls back to a default::

    kind: external
    model: model            # a transformers folder (or a halbench model folder), relative to this file
    cases: cases.jsonl      # token-level cases, or text prompts with their hallucinations
    # optional: name, model_name, description, format (tokens | text), verification
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from halbench.external.modelfolder import ModelFolderError, ModelLocation, locate_model
from halbench.tasks.artifacts import TASK_FILE
from halbench.tasks.spec import TaskSpecError, format_errors, read_raw

KIND = "external"
Rate = Annotated[float, Field(ge=0.0, le=1.0)]
Name = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")]
Family = Literal["corpus", "mask"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExternalVerification(_Strict):
    """How ``tasks verify`` re-checks token cases with causes, under refill families any model has.

    ``corpus``: tokens drawn by the training corpus's unigram counts when the model ships them, else
    uniformly from the vocabulary; ``mask``: the tokenizer's mask (or unk) token, else uniform draws.
    """

    refills: Annotated[int, Field(ge=4, le=1024)] = 16
    necessity: Rate = Field(0.75, description="share of rows with the causes refilled that lose the target")
    sufficiency: Rate = Field(0.75, description="share of rows with only the causes kept that keep the target")
    families: Annotated[list[Family], Field(min_length=1)] = ["corpus", "mask"]


class ExternalSpec(_Strict):
    kind: Literal["external"]
    model: Annotated[str, Field(min_length=1, description="model folder, relative to task.yaml or absolute")]
    cases: Annotated[str, Field(min_length=1, description="cases file (JSONL), relative to task.yaml or absolute")]
    name: Name | None = Field(None, description="task name (default: the folder's name)")
    model_name: Name | None = Field(None, description="model name in results (default: from the model folder)")
    description: str = ""
    format: Literal["tokens", "text"] | None = Field(None, description="cases format (default: from the first case)")
    verification: ExternalVerification = ExternalVerification()


class ExternalTask:
    """A validated external task: its spec and the resolved paths of its files."""

    def __init__(self, folder: Path, spec: ExternalSpec, location: ModelLocation, cases: Path):
        self.folder, self.spec, self.location, self.cases = folder, spec, location, cases

    @property
    def definition(self) -> Path:
        return self.folder / TASK_FILE

    @property
    def name(self) -> str:
        return self.spec.name or safe_name(self.folder.resolve().name)

    @property
    def model_name(self) -> str:
        if self.spec.model_name:
            return self.spec.model_name
        weights = self.location.weights
        return safe_name(weights.name if weights.name != "model" else self.location.model_type)


def safe_name(text: str) -> str:
    """A name usable as a path segment and in results: lower case, ``[a-z0-9_.-]``."""
    cleaned = re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.") or "external"
    return cleaned if cleaned[0].isalnum() else f"x{cleaned}"


def declares_external(folder: Path) -> bool:
    """Whether ``folder/task.yaml`` has a top-level ``kind`` (only external tasks do).

    Any ``kind`` routes the file here, so ``kind: externl`` is reported as a wrong kind rather than as a
    generator recipe with twenty missing fields.
    """
    path = Path(folder) / TASK_FILE
    if not path.is_file():
        return False
    try:
        raw = read_raw(path)
    except TaskSpecError:
        return False
    return "kind" in raw


def load_external(folder: Path) -> ExternalTask:
    """Validate ``folder/task.yaml`` and the paths it names; every problem in one :class:`TaskSpecError`."""
    folder = Path(folder)
    path = folder / TASK_FILE
    raw = read_raw(path)
    try:
        spec = ExternalSpec.model_validate(raw)
    except ValidationError as exc:
        raise TaskSpecError(format_errors(str(path), exc)) from None
    problems, location = [], None
    try:
        location = locate_model(_under(folder, spec.model))
    except ModelFolderError as exc:
        problems.append(f"  - field `model`: {exc}")
    cases = _under(folder, spec.cases)
    if not cases.is_file():
        problems.append(f"  - field `cases`: {cases} is not a file")
    if problems:
        raise TaskSpecError(f"{path}: {len(problems)} problem(s) in the definition:\n" + "\n".join(problems))
    return ExternalTask(folder, spec, location, cases.resolve())


def _under(folder: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else folder / path
