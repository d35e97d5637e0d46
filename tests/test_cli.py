"""The ``halbench tasks`` commands end to end, including a quick build from scratch."""

from __future__ import annotations

import json

import pytest
import yaml

from halbench.tasks.artifacts import check_manifest, read_manifest
from halbench.tasks.registry import REPO_ROOT, task_names

from .conftest import BUILT, invoke


def test_list_shows_every_task_with_hash():
    result = invoke("tasks", "list")
    assert result.exit_code == 0, result.output
    for name in task_names():
        assert name in result.output
    for name in BUILT:
        assert read_manifest(REPO_ROOT / "tasks" / name)["content_hash"][:12] in result.output


@pytest.mark.skipif("conjunctive" not in BUILT, reason="not built")
def test_show_marks_the_cause():
    result = invoke("tasks", "show", "conjunctive", "-n", "2")
    assert result.exit_code == 0, result.output
    assert "[[t" in result.output and "hallucinated:" in result.output and "minimality" in result.output


def test_unknown_task_is_a_clear_error():
    result = invoke("tasks", "show", "nope")
    assert result.exit_code != 0
    assert "unknown task 'nope'" in result.output and "single" in result.output


def test_build_needs_names_or_all():
    result = invoke("tasks", "build")
    assert result.exit_code == 2
    assert "give task names or --all" in result.output


def test_build_reports_invalid_definition(tmp_path, monkeypatch):
    folder = tmp_path / "broken"
    folder.mkdir()
    raw = yaml.safe_load((REPO_ROOT / "tasks" / "single" / "task.yaml").read_text())
    raw["include"] = str(REPO_ROOT / "tasks" / "_worlds" / "symbolic.yaml")
    raw["mining"]["prompt_length"] = "long"
    (folder / "task.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("HALBENCH_TASKS", str(tmp_path))
    result = invoke("tasks", "build", "broken", "--quick", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "task.yaml" in result.output and "`mining.prompt_length`" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_quick_build_produces_verified_artifacts(quick_single):
    manifest = read_manifest(quick_single)
    assert manifest["quick"] is True
    assert manifest["counts"] == {"test": 12, "dev": 4}
    assert check_manifest(quick_single) == []
    cases = [json.loads(line) for line in (quick_single / "cases.jsonl").read_text().splitlines()]
    assert all(c["verification"]["necessity"] >= 0.9 for c in cases)
    result = invoke("tasks", "verify", str(quick_single), "--sample", "6")
    assert result.exit_code == 0, result.output
    assert "6 cases re-verified" in result.output


@pytest.mark.slow
def test_quick_build_is_deterministic(quick_single, tmp_path):
    """Building again from scratch (fresh cache) gives byte-identical artifacts."""
    result = invoke(
        "tasks", "build", "single", "--quick", "--out", str(tmp_path), "--cache", str(tmp_path / "c"), "--no-progress"
    )
    assert result.exit_code == 0, result.output
    again = read_manifest(tmp_path / "single")
    first = read_manifest(quick_single)
    assert again["files"] == first["files"]
    assert again["content_hash"] == first["content_hash"]


def test_verify_all_passes_on_committed_tasks():
    result = invoke("tasks", "verify", "--all", "--sample", "8")
    assert result.exit_code == 0, result.output
    assert result.output.count("ok ") == len(task_names())
