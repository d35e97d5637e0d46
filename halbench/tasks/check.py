"""``tasks verify``: integrity of built artifacts and re-verification of a seeded case sample."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from transformers import AutoModelForCausalLM

from halbench.tasks.artifacts import CASES, MODEL_DIR, ManifestError, check_manifest, read_cases
from halbench.tasks.build import spec_hash
from halbench.tasks.dataset import validate_case
from halbench.tasks.registry import TaskRef
from halbench.tasks.spec import TaskSpec
from halbench.tasks.verify import Candidate, verify


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
        seed=tuple(record["verify_seed"]),
    )


def check_task(ref: TaskRef, sample: int = 32, seed: int = 0) -> CheckReport:
    """Hashes, definition drift, case structure, then re-run verification on ``sample`` cases."""
    report = CheckReport(ref.name)
    try:
        manifest = ref.manifest()
        report.problems += check_manifest(ref.artifacts)
        records = read_cases(ref.artifacts / CASES)
    except (ManifestError, OSError) as exc:
        report.problems.append(str(exc))
        return report
    spec = TaskSpec.model_validate(manifest["spec"])
    if ref.definition is not None:
        current = ref.spec(quick=bool(manifest.get("quick")))
        if spec_hash(current) != manifest.get("spec_hash"):
            report.problems.append(f"{ref.definition}: the definition changed since the build; rebuild the task")
    report.problems += [p for r in records for p in validate_case(r)]
    if report.problems:
        return report
    _reverify(ref, spec, manifest, records, sample, seed, report)
    return report


def _reverify(ref, spec, manifest, records, sample, seed, report) -> None:
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(records), size=min(sample, len(records)), replace=False).tolist())
    model = AutoModelForCausalLM.from_pretrained(ref.artifacts / MODEL_DIR).eval()
    cands = [candidate_from_record(records[i]) for i in picked]
    verdicts = verify(model, cands, spec.verification, manifest["neutral_ids"], spec.mining.batch_rows)
    tolerance = 1.0 / spec.verification.refills + 1e-9
    for i, verdict in zip(picked, verdicts, strict=True):
        record = records[i]
        if not verdict.passed:
            report.problems.append(f"case {record['id']}: no longer passes verification ({verdict.failed})")
        stored = record["verification"]
        for name, value in verdict.rates.items():
            if value is not None and abs(value - float(stored.get(name) or 0.0)) > tolerance:
                report.problems.append(f"case {record['id']}: {name} is {value:.3f}, stored {stored.get(name)}")
    report.sampled = len(picked)
