"""Finding task definitions and their built artifacts on disk.

A task is a folder holding ``task.yaml``; folders whose names start with ``_``
or ``.`` hold shared includes and are not tasks. The root is ``$HALBENCH_TASKS``
or the repository's ``tasks/`` folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from halbench.tasks.artifacts import MANIFEST, read_manifest
from halbench.tasks.spec import TaskSpec, load_spec

REPO_ROOT = Path(__file__).resolve().parents[2]


class UnknownTaskError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def tasks_root() -> Path:
    env = os.environ.get("HALBENCH_TASKS")
    return Path(env) if env else REPO_ROOT / "tasks"


def cache_root() -> Path:
    env = os.environ.get("HALBENCH_CACHE")
    return Path(env) if env else REPO_ROOT / ".cache" / "halbench"


def task_names(root: Path | None = None) -> list[str]:
    root = root or tasks_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "task.yaml").is_file() and p.name[0] not in "._")


@dataclass
class TaskRef:
    """A task definition and where its artifacts live."""

    name: str
    definition: Path | None  # task.yaml, None for a bare artifact folder
    artifacts: Path

    def spec(self, quick: bool = False) -> TaskSpec:
        if self.definition is None:
            raise UnknownTaskError(f"{self.artifacts}: no task.yaml to build from")
        return load_spec(self.definition, quick=quick)

    @property
    def built(self) -> bool:
        return (self.artifacts / MANIFEST).is_file()

    def manifest(self) -> dict:
        return read_manifest(self.artifacts)


def resolve(name_or_path: str, root: Path | None = None) -> TaskRef:
    """A task by registered name, or an artifact/task folder given as a path."""
    root = root or tasks_root()
    if (root / name_or_path / "task.yaml").is_file() and name_or_path[0] not in "._":
        folder = root / name_or_path
        return TaskRef(name_or_path, folder / "task.yaml", folder)
    path = Path(name_or_path)
    if path.is_dir() and ((path / MANIFEST).is_file() or (path / "task.yaml").is_file()):
        definition = path / "task.yaml" if (path / "task.yaml").is_file() else None
        name = read_manifest(path)["task"] if (path / MANIFEST).is_file() else path.name
        return TaskRef(name, definition, path)
    known = ", ".join(task_names(root)) or "none"
    raise UnknownTaskError(f"unknown task {name_or_path!r} (known tasks in {root}: {known})")
