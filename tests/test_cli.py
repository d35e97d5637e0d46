"""The ``halbench tasks`` and ``models`` commands end to end, including a quick build from scratch."""

from __future__ import annotations

import json

import pytest
import yaml

from halbench.tasks.artifacts import check_manifest, read_manifest
from halbench.tasks.registry import REPO_ROOT, model_names, task_names

from .conftest import BUILT, invoke


def test_list_shows_every_task_and_built_hashes():
    result = invoke("tasks", "list")
    assert result.exit_code == 0, result.output
    for name in task_names():
        assert name in result.output
    for inst in BUILT.values():
        assert inst.manifest()["content_hash"][:12] in result.output


def test_models_list_shows_every_recipe():
    result = invoke("models", "list")
    assert result.exit_code == 0, result.output
    for name in model_names():
        assert name in result.output


def test_show_marks_the_cause():
    if not BUILT:
        pytest.skip("the suite is not built")
    name = sorted(BUILT)[0]
    result = invoke("tasks", "show", name.split("/")[0], "--model", name.split("/")[1], "-n", "2")
    assert result.exit_code == 0, result.output
    assert "[[" in result.output and "hallucinated:" in result.output


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
    raw["include"] = str(REPO_ROOT / "tasks" / "_worlds" / "verification.yaml")
    raw["mining"]["entities"] = "sometimes"
    (folder / "task.yaml").write_text(yaml.safe_dump(raw))
    for shared in ("_models", "_worlds"):
        (tmp_path / shared).symlink_to(REPO_ROOT / "tasks" / shared)
    monkeypatch.setenv("HALBENCH_TASKS", str(tmp_path))
    result = invoke("tasks", "build", "broken", "--quick", "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "task.yaml" in result.output and "mining.entities" in result.output
    assert not (tmp_path / "out" / "broken").exists()


@pytest.fixture(scope="module")
def quick_natural(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    args = ("tasks", "build", "natural", "--model", "natural-llama-b", "--quick", "--out", str(out))
    result = invoke(*args, "--cache", str(out / "cache"), "--no-progress")
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_quick_build_produces_verified_artifacts(quick_natural):
    folder = quick_natural / "natural" / "natural-llama-b"
    manifest = read_manifest(folder)
    assert manifest["quick"] is True
    assert check_manifest(folder) == [] and check_manifest(quick_natural / "_models" / "natural-llama-b") == []
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    assert all(c["verification"]["neutral"]["necessity"] >= 0.9 for c in cases)
    result = invoke("tasks", "verify", str(folder), "--sample", "4")
    assert result.exit_code == 0, result.output
    assert "4 cases re-verified" in result.output


@pytest.mark.slow
def test_quick_build_is_deterministic(quick_natural, tmp_path):
    """Building again from scratch (fresh cache) gives byte-identical artifacts."""
    args = ("tasks", "build", "natural", "--model", "natural-llama-b", "--quick", "--out", str(tmp_path))
    result = invoke(*args, "--cache", str(tmp_path / "c"), "--no-progress")
    assert result.exit_code == 0, result.output
    again = read_manifest(tmp_path / "natural" / "natural-llama-b")
    first = read_manifest(quick_natural / "natural" / "natural-llama-b")
    assert again["files"] == first["files"] and again["content_hash"] == first["content_hash"]


def test_methods_list_cuts_descriptions_at_a_word():
    from halbench.methods.base import registered

    result = invoke("methods", "list")
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()[2:]}
    for name, cls in registered().items():
        shown = lines[name].split(None, 2)[2].rstrip()
        full = " ".join(cls.description.split())
        if shown.endswith(" ..."):  # cut: whole words, then the ellipsis
            kept = shown.removesuffix(" ...")
            assert full.startswith(kept) and full[len(kept)] == " ", name
        else:
            assert shown == full, name


def test_out_where_a_file_stands_is_one_error_line(tiny, tmp_path):
    """Every --out: a file in the way (the path itself or a folder above it) is one error line, before any work."""
    file = tmp_path / "a-file"
    file.write_text("x")
    under = [file, file / "sub"]  # the file itself, and a folder that would have to be made inside it
    runs = {
        "eval": (["eval", "--method", "random", "--task", str(tiny.folder), "--no-progress"], under),
        "site build": (["site", "build", "--root", str(tmp_path)], under),
        "tasks build": (["tasks", "build", "single", "--quick", "--model", "none", "--no-progress"], under),
        "trace": (["trace", "--model", str(tmp_path), "--prompt", "x", "--hallucination", "y"], [tmp_path, file / "r"]),
    }
    for name, (args, outs) in runs.items():
        for out in outs:
            result = invoke(*args, "--out", str(out))
            assert result.exit_code in (1, 2) and isinstance(result.exception, SystemExit), (name, out, result.output)
            errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
            assert len(errors) == 1 and str(out.name) in errors[0] and "Traceback" not in result.output, (name, out)
