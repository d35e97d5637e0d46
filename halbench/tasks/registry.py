"""Finding definitions and built artifacts on disk.

Layout under the tasks root (``$HALBENCH_TASKS`` or the repository's ``tasks/``):

- ``_models/<model>/model.yaml``: a model recipe; once built, the same folder holds the model;
- ``<task>/task.yaml``: a task; once built, ``<task>/<model>/`` holds its cases on that model
  (a *task instance*, named ``<task>/<model>``);
- folders whose names start with ``_`` or ``.`` are not tasks (shared includes, models).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from halbench.tasks.artifacts import MANIFEST, MODELS_DIR, RECIPE, TASK_FILE, ManifestError, read_manifest
from halbench.tasks.spec import ModelRecipe, TaskSpec, TaskSpecError, load_recipe, load_spec

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS = MODELS_DIR


class UnknownTaskError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def tasks_root() -> Path:
    env = os.environ.get("HALBENCH_TASKS")
    return Path(env) if env else REPO_ROOT / "tasks"


def cache_root() -> Path:
    env = os.environ.get("HALBENCH_CACHE")
    return Path(env) if env else REPO_ROOT / ".cache" / "halbench"


def _listed(root: Path, marker: str) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / marker).is_file() and p.name[0] not in "._")


def task_names(root: Path | None = None) -> list[str]:
    return _listed(root or tasks_root(), TASK_FILE)


def model_names(root: Path | None = None) -> list[str]:
    return _listed((root or tasks_root()) / MODELS, RECIPE)


@dataclass(frozen=True)
class ModelRef:
    name: str
    folder: Path

    @property
    def definition(self) -> Path:
        return self.folder / RECIPE

    def recipe(self, quick: bool = False) -> ModelRecipe:
        return load_recipe(self.definition, quick=quick)

    @property
    def built(self) -> bool:
        return (self.folder / MANIFEST).is_file()

    def manifest(self) -> dict:
        return read_manifest(self.folder)


@dataclass(frozen=True)
class InstanceRef:
    """One task's cases on one model: the unit that is evaluated."""

    task: str
    model: str
    folder: Path

    @property
    def name(self) -> str:
        return f"{self.task}/{self.model}"

    @property
    def built(self) -> bool:
        return (self.folder / MANIFEST).is_file()

    def manifest(self) -> dict:
        return read_manifest(self.folder)

    @property
    def model_folder(self) -> Path:
        """Where the model lives: ``manifest.model.path`` (external tasks) or the sibling ``_models/<model>``."""
        try:
            path = (self.manifest().get("model") or {}).get("path")
        except ManifestError:
            path = None
        if path:
            return (self.folder / path).resolve()
        return self.folder.parent.parent / MODELS / self.model


@dataclass(frozen=True)
class TaskRef:
    """A task definition and where its instances live."""

    name: str
    definition: Path | None  # task.yaml
    folder: Path

    def spec(self, quick: bool = False) -> TaskSpec:
        if self.definition is None:
            raise UnknownTaskError(f"{self.folder}: no task.yaml")
        return load_spec(self.definition, quick=quick)

    def instance(self, model: str) -> InstanceRef:
        return InstanceRef(self.name, model, self.folder / model)

    def instances(self) -> list[InstanceRef]:
        """Built instances, by model name."""
        if not self.folder.is_dir():
            return []
        names = sorted(p.name for p in self.folder.iterdir() if (p / MANIFEST).is_file() and p.name[0] not in "._")
        return [self.instance(n) for n in names]


def resolve(name_or_path: str, root: Path | None = None) -> TaskRef:
    """A task by registered name, or a task folder given as a path."""
    root = root or tasks_root()
    if name_or_path and name_or_path[0] not in "._" and (root / name_or_path / TASK_FILE).is_file():
        folder = root / name_or_path
        return TaskRef(name_or_path, folder / TASK_FILE, folder)
    path = Path(name_or_path)
    if path.is_dir() and (path / TASK_FILE).is_file():
        return TaskRef(path.name, path / TASK_FILE, path)
    known = ", ".join(task_names(root)) or "none"
    raise UnknownTaskError(f"unknown task {name_or_path!r} (known tasks in {root}: {known})")


def resolve_model(name: str, root: Path | None = None) -> ModelRef:
    root = root or tasks_root()
    folder = root / MODELS / name
    if name and name[0] not in "._" and (folder / RECIPE).is_file():
        return ModelRef(name, folder)
    known = ", ".join(model_names(root)) or "none"
    raise UnknownTaskError(f"unknown model {name!r} (known models in {root / MODELS}: {known})")


def built_instances(root: Path | None = None) -> list[InstanceRef]:
    """Every built instance of the suite, task by task (unbuilt ones are left out, not errors)."""
    return [i for name in task_names(root) for i in resolve(name, root).instances()]


def resolve_instances(name: str, root: Path | None = None) -> list[InstanceRef]:
    """``task`` (every built instance of it), ``task/model``, or the path of an instance folder."""
    root = root or tasks_root()
    external = _external_instances(name, root)
    if external is not None:
        return external
    task, sep, model = name.partition("/")
    if sep and "/" not in model and (root / task / TASK_FILE).is_file():
        ref = resolve(task, root).instance(model)
        if not ref.built:
            raise UnknownTaskError(f"{name}: not built (halbench tasks build {task})")
        return [ref]
    path = Path(name)
    if path.is_dir() and (path / MANIFEST).is_file():
        try:
            manifest = read_manifest(path)
        except ManifestError as exc:
            raise UnknownTaskError(str(exc)) from None
        if manifest.get("kind") == "instance":
            model_name = str((manifest.get("model") or {}).get("name") or path.name)
            return [InstanceRef(str(manifest.get("task") or path.parent.name), model_name, path)]
    ref = resolve(name, root)
    instances = ref.instances()
    if not instances:
        raise UnknownTaskError(f"task {ref.name} has no built instances (halbench tasks build {ref.name})")
    return instances


def _external_instances(name: str, root: Path) -> list[InstanceRef] | None:
    """An external task (``kind: external``), by registered name, ``name/model`` or folder path; else None.

    Its instance is derived from its sources at first use (:mod:`halbench.external.instance`); a bad
    definition or cases file becomes one readable error.
    """
    from halbench.external.spec import declares_external

    task, sep, model = name.partition("/")
    candidates: list[tuple[Path, str | None]] = [(Path(name), None)]
    if task[:1] not in ("", ".", "_") and "/" not in model:
        candidates.insert(0, (root / task, model) if sep else (root / name, None))
    for folder, wanted in candidates:
        if declares_external(folder):
            from halbench.external.instance import external_instance

            try:
                ref = external_instance(folder)
            except (TaskSpecError, ManifestError) as exc:
                raise UnknownTaskError(str(exc)) from None
            if wanted is not None and wanted != ref.model:
                raise UnknownTaskError(f"{name}: external task {ref.task} has model {ref.model}, not {wanted}")
            return [ref]
    return None
