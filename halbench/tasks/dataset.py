"""Cases as a ``datasets.DatasetDict`` with ``dev`` and ``test`` splits, plus a record validator."""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset, DatasetDict, Features, List, Value

from halbench.tasks.artifacts import CASES, ManifestError, read_cases
from halbench.tasks.verify import CHECKS, FAMILIES

REQUIRED = ("id", "split", "family", "prompt_ids", "target_ids", "faithful_ids", "causes", "editable", "verification")

FEATURES = Features(
    {
        "id": Value("string"),
        "split": Value("string"),
        "family": Value("string"),
        "model": Value("string"),
        "mechanisms": List(Value("string")),
        "prompt_ids": List(Value("int32")),
        "prompt_tokens": List(Value("string")),
        "target_ids": List(Value("int32")),
        "target_tokens": List(Value("string")),
        "faithful_ids": List(Value("int32")),
        "faithful_tokens": List(Value("string")),
        "causes": List(List(Value("int32"))),
        "editable": List(Value("int32")),
        "decoys": List(Value("int32")),
        "entity": List(Value("int32")),
        "slots": List(Value("string")),
        "verification": {
            "p_target": Value("float64"),
            "p_faithful": Value("float64"),
            "greedy_is_target": Value("bool"),
            **{family: {c: Value("float64") for c in CHECKS} for family in FAMILIES},
        },
        "verify_seed": List(Value("int64")),
    }
)


def validate_case(record: dict) -> list[str]:
    """Structural problems of one case record (empty when sound)."""
    cid = record.get("id", "?")
    missing = [k for k in REQUIRED if k not in record]
    if missing:
        return [f"case {cid}: missing fields {missing}"]
    problems, n = [], len(record["prompt_ids"])
    editable = set(record["editable"])
    if record["split"] not in ("dev", "test"):
        problems.append(f"case {cid}: split must be dev or test, got {record['split']!r}")
    if not record["causes"] or not all(record["causes"]):
        problems.append(f"case {cid}: causes must be a non-empty list of non-empty position lists")
    for alt in record["causes"]:
        bad = [p for p in alt if not (isinstance(p, int) and 0 <= p < n and p in editable)]
        if bad:
            problems.append(f"case {cid}: cause positions {bad} are outside the editable prompt")
    if any(not (isinstance(p, int) and 0 <= p < n) for p in record["editable"]):
        problems.append(f"case {cid}: editable positions out of range")
    if len(record["target_ids"]) < 1:
        problems.append(f"case {cid}: empty target_ids")
    return problems


def load_cases(task_dir: Path) -> DatasetDict:
    """Load ``cases.jsonl`` of a built task instance; malformed records raise one error listing all problems."""
    records = read_cases(Path(task_dir) / CASES)
    problems = [p for r in records for p in validate_case(r)]
    if problems:
        raise ManifestError(f"{task_dir}/{CASES}: {len(problems)} problem(s):\n  " + "\n  ".join(problems[:20]))
    rows = [{k: r.get(k) for k in FEATURES} for r in records]
    return DatasetDict(
        {
            split: Dataset.from_list([r for r in rows if r["split"] == split], features=FEATURES)
            for split in ("dev", "test")
        }
    )
