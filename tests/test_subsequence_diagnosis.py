"""scripts/subsequence_diagnosis.py reads per-case records against the task's causes correctly."""

from __future__ import annotations

import json
import subprocess
import sys

from halbench.tasks.registry import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "subsequence_diagnosis.py"


def record(case_id: str, pk: float, subsequence=None) -> dict:
    r = {"id": case_id, "status": "ok", "metrics": {"average_precision": pk, "precision_at_k": pk}, "scores": []}
    return r | ({"subsequence": subsequence} if subsequence is not None else {})


def test_tracer_subsequences_are_compared_with_the_causes(tmp_path):
    instance = tmp_path / "tasks" / "conjunctive" / "m"
    instance.mkdir(parents=True)
    cases = [{"id": "a", "causes": [[3, 7]]}, {"id": "b", "causes": [[2, 5]]}, {"id": "c", "causes": [[1, 4]]}]
    (instance / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    out = tmp_path / "results" / "conjunctive" / "m" / "sat"
    out.mkdir(parents=True)
    rows = [record("a", 1.0, [3, 7]), record("b", 0.5, [2, 5, 9]), record("c", 0.0, [8])]
    (out / "budget-16.cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["--task", "conjunctive", "--method", "sat", "--results", str(tmp_path / "results")]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--tasks", str(tmp_path / "tasks")],
        text=True,
        capture_output=True,
        check=True,
    )
    row = [line for line in done.stdout.splitlines() if line.startswith("| conjunctive/m")]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    # cases, AP, P@k, top-k exact, part only, subseq len, exact, contains, touches
    assert cells[2:] == ["16", "3", "0.50", "0.50", "0.33", "0.33", "2.00", "0.33", "0.67", "0.67"]
