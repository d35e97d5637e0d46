"""What the site says about tasks and models, read from task.yaml and the built manifests.

``task.yaml`` is read as plain YAML for its prose (description, family, version): the page needs
no generator recipe, so an external or partly written task still gets a page.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from halbench.tasks.artifacts import MODELS_DIR, TASK_FILE, ManifestError, read_manifest


@dataclass
class ModelInfo:
    name: str
    arch: str | None = None
    parameters: int | None = None
    training_seconds: float | None = None
    tasks: list[str] = field(default_factory=list)


@dataclass
class InstanceInfo:
    task: str
    model: ModelInfo
    counts: dict[str, int]
    prompt_length: str
    pass_rate: float | None
    mechanisms: dict[str, int]  # test-split mechanism -> cases


@dataclass
class TaskInfo:
    name: str
    family: str
    version: str
    description: str
    instances: list[InstanceInfo]


def prompt_length_text(lengths: object) -> str:
    """``{"min": 32, "max": 96, "mean": 61.2}`` as "32-96 (mean 61.2)"; anything else as "unknown"."""
    if not isinstance(lengths, dict) or not all(isinstance(lengths.get(k), int | float) for k in ("min", "max")):
        return "unknown"
    text = f"{lengths['min']:g}-{lengths['max']:g}"
    mean = lengths.get("mean")
    return f"{text} (mean {mean:g})" if isinstance(mean, int | float) else text


def model_info(tasks_root: Path, name: str, fallback: dict | None = None) -> ModelInfo:
    """From ``_models/<name>/MANIFEST.json``; an instance manifest's ``model`` block fills what is missing."""
    fallback = fallback or {}
    try:
        manifest = read_manifest(Path(tasks_root) / MODELS_DIR / name)
    except ManifestError:
        manifest = {}
    training = manifest.get("training") if isinstance(manifest.get("training"), dict) else {}
    seconds = training.get("seconds")
    parameters = manifest.get("parameters") or fallback.get("parameters")
    return ModelInfo(
        name,
        manifest.get("arch") or fallback.get("arch"),
        parameters if isinstance(parameters, int) else None,
        float(seconds) if isinstance(seconds, int | float) else None,
    )


def task_prose(tasks_root: Path, task: str) -> dict:
    """The task.yaml mapping, or an empty one when it is missing or unreadable."""
    try:
        data = yaml.safe_load((Path(tasks_root) / task / TASK_FILE).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def task_info(tasks_root: Path, task: str, manifests: dict[str, dict], cases: dict[str, list[dict]]) -> TaskInfo:
    """``manifests``: instance -> manifest; ``cases``: instance -> its test records (for mechanism counts)."""
    prose = task_prose(tasks_root, task)
    instances = []
    for name in sorted(i for i in manifests if i.split("/")[0] == task):
        manifest = manifests[name]
        model_block = manifest.get("model") if isinstance(manifest.get("model"), dict) else {}
        mining = manifest.get("mining") if isinstance(manifest.get("mining"), dict) else {}
        rate = mining.get("verification_pass_rate")
        mechanisms = Counter(m for r in cases.get(name, []) for m in r.get("mechanisms") or [])
        instances.append(
            InstanceInfo(
                task,
                model_info(tasks_root, name.split("/", 1)[1], model_block),
                {k: v for k, v in (manifest.get("counts") or {}).items() if isinstance(v, int)},
                prompt_length_text(manifest.get("prompt_length")),
                float(rate) if isinstance(rate, int | float) else None,
                dict(sorted(mechanisms.items())),
            )
        )
    first = manifests.get(instances[0].task + "/" + instances[0].model.name, {}) if instances else {}
    spec = first.get("spec") if isinstance(first.get("spec"), dict) else {}
    return TaskInfo(
        task,
        str(prose.get("family") or first.get("family") or "?"),
        str(prose.get("version") or first.get("version") or "?"),
        str(prose.get("description") or spec.get("description") or ""),
        instances,
    )


def models_of(tasks: list[TaskInfo]) -> dict[str, ModelInfo]:
    """Every model that serves some task, with the tasks it serves."""
    out: dict[str, ModelInfo] = {}
    for task in tasks:
        for instance in task.instances:
            info = out.setdefault(instance.model.name, instance.model)
            info.tasks.append(task.name)
    return dict(sorted(out.items()))
