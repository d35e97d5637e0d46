"""``tasks verify``: integrity of built artifacts and re-verification of a seeded case sample."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from transformers import AutoModelForCausalLM

from halbench.quiet import quiet_transformers
from halbench.tasks.artifacts import CASES, MODEL_DIR, TASK_FILE, ManifestError, read_cases
from halbench.tasks.build import load_refills, mining_hash
from halbench.tasks.bundle import verify_instance
from halbench.tasks.dataset import validate_case
from halbench.tasks.registry import InstanceRef
from halbench.tasks.spec import TaskSpec, TaskSpecError, load_spec
from halbench.tasks.verify import FAMILIES, Candidate, verify


@dataclass
class CheckReport:
    task: str
    problems: list[str] = field(default_factory=list)
    sampled: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def candidate_from_record(record: dict) -> Candidate:
    faithful = record.get("faithful_ids")
    return Candidate(
        prompt_ids=list(record["prompt_ids"]),
        target_id=int(record["target_ids"][0]),
        faithful_id=None if not faithful else int(faithful[0]),
        causes=[list(a) for a in record["causes"]],
        editable=list(record["editable"]),
        decoys=list(record.get("decoys") or []),
        entity=list(record.get("entity") or []),
        slots=list(record.get("slots") or []),
        seed=tuple(record["verify_seed"]),
    )


def check_instance(ref: InstanceRef, sample: int = 32, seed: int = 0) -> CheckReport:
    """Hashes, definition drift, case structure, then re-run verification on ``sample`` cases."""
    report = CheckReport(ref.name)
    try:
        manifest, model_folder = verify_instance(ref)
        records = read_cases(ref.folder / CASES)
    except (ManifestError, OSError) as exc:
        report.problems.append(str(exc))
        return report
    if manifest.get("family") == "external":  # your own model's cases: checked by halbench.external.verify
        from halbench.external.verify import reverify_external

        report.problems, report.sampled = reverify_external(manifest, model_folder, records, sample, seed)
        return report
    spec = TaskSpec.model_validate(manifest["spec"])
    definition = ref.folder.parent / TASK_FILE
    if definition.is_file():
        try:
            current = load_spec(definition, quick=bool(manifest.get("quick")))
        except TaskSpecError as exc:
            report.problems.append(str(exc))
            return report
        model = manifest.get("model", {}).get("name")
        if mining_hash(current, model) != mining_hash(spec, model):
            report.problems.append(f"{definition}: the definition changed since the build; rebuild the task")
        elif model not in current.models:
            report.problems.append(f"{definition}: no longer lists model {model}; rebuild or remove the instance")
    report.problems += [p for r in records for p in validate_case(r)]
    if not report.problems:
        _reverify(spec, model_folder, records, sample, seed, report)
    return report


def _reverify(spec: TaskSpec, model_folder, records, sample, seed, report) -> None:
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(records), size=min(sample, len(records)), replace=False).tolist())
    with quiet_transformers():
        model = AutoModelForCausalLM.from_pretrained(model_folder / MODEL_DIR).eval()
    cands = [candidate_from_record(records[i]) for i in picked]
    thresholds = {"neutral": spec.verification.neutral, "unigram": spec.verification.unigram}
    verdicts = verify(model, cands, load_refills(model_folder), thresholds, spec.verification.refills)
    tolerance = 1.0 / spec.verification.refills + 1e-9
    for i, verdict in zip(picked, verdicts, strict=True):
        record = records[i]
        if not verdict.passed:
            report.problems.append(f"case {record['id']}: no longer passes verification ({verdict.failed})")
        stored = record["verification"]
        for family in FAMILIES:
            for name, value in verdict.rates[family].items():
                old = (stored.get(family) or {}).get(name)
                if value is not None and (old is None or abs(value - float(old)) > tolerance):
                    report.problems.append(f"case {record['id']}: {family}.{name} is {value:.3f}, stored {old}")
    report.sampled = len(picked)
