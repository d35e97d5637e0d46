"""Where a causal LM's files are: a plain transformers folder, or a halbench model folder around one.

Why both: ``halbench trace --model`` and an external ``task.yaml`` should accept what a user has (any
local Hugging Face checkpoint folder) and what halbench builds (``tasks/_models/<model>/``, whose
``model/`` holds the checkpoint and whose ``unigram.json`` holds the training corpus's token counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from halbench.tasks.artifacts import MODEL_DIR, UNIGRAM

CONFIG = "config.json"


class ModelFolderError(ValueError):
    """The path holds no causal LM checkpoint."""


@dataclass(frozen=True)
class ModelLocation:
    weights: Path  # the transformers folder (config.json, weights, tokenizer)
    unigram: Path | None  # corpus token counts, when shipped

    @property
    def model_type(self) -> str:
        import json

        try:
            return str(json.loads((self.weights / CONFIG).read_text(encoding="utf-8")).get("model_type") or "model")
        except (OSError, ValueError):
            return "model"


def locate_model(path: Path | str) -> ModelLocation:
    """The checkpoint at ``path`` (a transformers folder, or a folder with ``model/`` inside) and its unigram.

    ``unigram.json`` is looked for in the checkpoint folder, then beside it (halbench's layout).
    """
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ModelFolderError(f"{path}: not a folder")
    if (path / CONFIG).is_file():
        weights = path
    elif (path / MODEL_DIR / CONFIG).is_file():
        weights = path / MODEL_DIR
    else:
        raise ModelFolderError(f"{path}: no {CONFIG} here or in {path / MODEL_DIR} (not a transformers model folder)")
    for candidate in (weights / UNIGRAM, weights.parent / UNIGRAM):
        if candidate.is_file():
            return ModelLocation(weights.resolve(), candidate.resolve())
    return ModelLocation(weights.resolve(), None)
