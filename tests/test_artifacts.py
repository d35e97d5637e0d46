"""Committed artifacts: intact, loadable by transformers alone, tamper-evident."""

from __future__ import annotations

import json
import shutil

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from halbench.tasks.artifacts import check_manifest, read_manifest
from halbench.tasks.dataset import load_cases

from .conftest import BUILT, TASKS, invoke

REQUIRED = ["id", "split", "prompt_ids", "target_ids", "faithful_ids", "causes", "editable", "family", "verification"]


def test_every_task_is_built():
    from halbench.tasks.registry import task_names

    assert set(task_names()) == set(BUILT)


@pytest.mark.parametrize("name", BUILT)
def test_manifest_intact_and_counts(name):
    folder = TASKS / name
    assert check_manifest(folder) == []
    manifest = read_manifest(folder)
    assert manifest["counts"]["test"] >= 300 and manifest["counts"]["dev"] >= 50
    assert manifest["neutral_ids"]
    for key in ("torch", "transformers", "python", "halbench"):
        assert key in manifest["versions"]


@pytest.mark.parametrize("name", BUILT)
def test_model_and_tokenizer_load_from_the_folder_alone(name):
    folder = TASKS / name / "model"
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    case = json.loads((TASKS / name / "cases.jsonl").open().readline())
    assert tok.convert_ids_to_tokens(case["prompt_ids"]) == case["prompt_tokens"]
    assert tok(" ".join(case["prompt_tokens"]))["input_ids"] == case["prompt_ids"]
    assert model.config.vocab_size == len(tok)


@pytest.mark.parametrize("name", BUILT)
def test_cases_load_as_datasetdict(name):
    data = load_cases(TASKS / name)
    manifest = read_manifest(TASKS / name)
    assert set(data) == {"dev", "test"}
    assert len(data["test"]) == manifest["counts"]["test"]
    assert set(REQUIRED) <= set(data["test"].column_names)
    row = data["test"][0]
    assert all(0 < p < len(row["prompt_ids"]) for alt in row["causes"] for p in alt)


@pytest.fixture
def copy_of_single(tmp_path):
    dest = tmp_path / "single"
    shutil.copytree(TASKS / "single", dest, ignore=shutil.ignore_patterns("task.yaml"))
    return dest


@pytest.mark.skipif("single" not in BUILT, reason="not built")
def test_tampered_cases_are_detected(copy_of_single):
    path = copy_of_single / "cases.jsonl"
    lines = path.read_text().splitlines()
    case = json.loads(lines[0])
    case["causes"] = [[1]]
    lines[0] = json.dumps(case, sort_keys=True)
    path.write_text("\n".join(lines) + "\n")
    assert check_manifest(copy_of_single) == ["cases.jsonl: sha256 differs from the manifest"]
    result = invoke("tasks", "verify", str(copy_of_single), "--sample", "2")
    assert result.exit_code == 1
    assert "sha256 differs" in result.output


@pytest.mark.skipif("single" not in BUILT, reason="not built")
def test_tampered_weights_and_extra_files_are_detected(copy_of_single):
    weights = copy_of_single / "model" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    (copy_of_single / "model" / "extra.bin").write_bytes(b"x")
    problems = check_manifest(copy_of_single)
    assert "model/model.safetensors: sha256 differs from the manifest" in problems
    assert "model/extra.bin: not in the manifest" in problems


@pytest.mark.skipif("single" not in BUILT, reason="not built")
def test_forged_manifest_hash_is_detected(copy_of_single):
    path = copy_of_single / "MANIFEST.json"
    manifest = json.loads(path.read_text())
    manifest["neutral_ids"] = manifest["neutral_ids"][:-1]
    path.write_text(json.dumps(manifest))
    assert "content_hash does not match the recorded files" in check_manifest(copy_of_single)
