"""Committed suite artifacts: intact, loadable by transformers alone, tamper-evident."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from halbench.tasks.artifacts import check_manifest, read_manifest
from halbench.tasks.check import check_instance
from halbench.tasks.dataset import load_cases
from halbench.tasks.registry import InstanceRef, model_names, resolve_model

from .conftest import BUILT, invoke

REQUIRED = ["id", "split", "prompt_ids", "target_ids", "faithful_ids", "causes", "editable", "family", "verification"]
NAMES = sorted(BUILT)
MODELS = [m for m in model_names() if resolve_model(m).built]


@pytest.mark.parametrize("name", NAMES)
def test_instance_manifest_intact_and_counts(name):
    inst = BUILT[name]
    assert check_manifest(inst.folder) == []
    manifest = read_manifest(inst.folder)
    spec = manifest["spec"]["cases"]
    assert manifest["counts"]["test"] >= spec["min_test"] and manifest["counts"]["dev"] >= spec["min_dev"]
    assert manifest["model"]["content_hash"] == read_manifest(inst.model_folder)["content_hash"]
    for key in ("torch", "transformers", "python", "halbench"):
        assert key in manifest["versions"]


@pytest.mark.parametrize("model", MODELS)
def test_model_manifest_intact(model):
    folder = resolve_model(model).folder
    assert check_manifest(folder) == []
    manifest = read_manifest(folder)
    assert manifest["arch"] in {"gpt2", "llama"} and manifest["parameters"] > 0
    assert manifest["training"]["seconds"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_model_and_tokenizer_load_from_the_folder_alone(name):
    folder = BUILT[name].model_folder / "model"
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    case = json.loads((BUILT[name].folder / "cases.jsonl").open().readline())
    assert tok.convert_ids_to_tokens(case["prompt_ids"]) == case["prompt_tokens"]
    assert model.config.vocab_size == len(tok)


@pytest.mark.parametrize("name", NAMES)
def test_cases_load_as_datasetdict(name):
    data = load_cases(BUILT[name].folder)
    manifest = read_manifest(BUILT[name].folder)
    assert set(data) == {"dev", "test"}
    assert len(data["test"]) == manifest["counts"]["test"]
    assert set(REQUIRED) <= set(data["test"].column_names)
    row = data["test"][0]
    assert all(0 < p < len(row["prompt_ids"]) for alt in row["causes"] for p in alt)


@pytest.fixture
def copy_of_one(tmp_path):
    if not NAMES:
        pytest.skip("no built instance")
    inst = BUILT[NAMES[0]]
    dest = tmp_path / "instance"
    shutil.copytree(inst.folder, dest)
    return dest


def test_tampered_cases_are_detected(copy_of_one):
    path = copy_of_one / "cases.jsonl"
    lines = path.read_text().splitlines()
    case = json.loads(lines[0])
    case["causes"] = [[1]]
    lines[0] = json.dumps(case, sort_keys=True)
    path.write_text("\n".join(lines) + "\n")
    [problem] = check_manifest(copy_of_one)
    assert problem.startswith(str(path)) and "sha256 differs from the manifest" in problem


def test_forged_manifest_hash_is_detected(copy_of_one):
    path = copy_of_one / "MANIFEST.json"
    manifest = json.loads(path.read_text())
    manifest["spec_hash"] = "0" * 64
    path.write_text(json.dumps(manifest))
    assert f"{path}: content_hash does not match the recorded files" in check_manifest(copy_of_one)


def test_tampered_weights_and_extra_model_files_are_detected(tmp_path):
    if not MODELS:
        pytest.skip("no built model")
    folder = Path(shutil.copytree(resolve_model(MODELS[0]).folder, tmp_path / "m"))
    weights = folder / "model" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    (folder / "model" / "extra.bin").write_bytes(b"x")
    problems = check_manifest(folder)
    assert any(p.startswith(str(weights)) and "sha256 differs" in p for p in problems)
    assert f"{folder / 'model' / 'extra.bin'}: not in the manifest" in problems


@pytest.mark.skipif(not BUILT, reason="the suite is not built")
def test_verify_all_checks_every_built_instance():
    result = invoke("tasks", "verify", "--all", "--sample", "4")
    assert result.exit_code == 0, result.output
    for name in BUILT:
        assert f"ok   {name}" in result.output


@pytest.fixture
def task_copy(tmp_path):
    """One committed instance with its task definition and model, copied so the definition can be edited."""
    if not NAMES:
        pytest.skip("no built instance")
    inst = BUILT[NAMES[0]]
    root = tmp_path / "tasks"
    shutil.copytree(inst.model_folder, root / "_models" / inst.model)
    shutil.copytree(inst.folder, root / inst.task / inst.model)
    shutil.copy(inst.folder.parent / "task.yaml", root / inst.task / "task.yaml")
    shutil.copytree(inst.folder.parents[1] / "_worlds", root / "_worlds")  # what task.yaml includes
    return InstanceRef(inst.task, inst.model, root / inst.task / inst.model)


def _edit_definition(ref: InstanceRef, old: str, new: str) -> None:
    path = ref.folder.parent / "task.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_adding_a_model_to_a_task_keeps_its_built_instances_valid(task_copy):
    _edit_definition(task_copy, "models: [", "models: [some-new-model, ")
    assert check_instance(task_copy, sample=1).problems == []


def test_a_changed_mining_definition_or_dropped_model_is_reported(task_copy):
    _edit_definition(task_copy, "seed: ", "seed: 1")
    assert any("the definition changed since the build" in p for p in check_instance(task_copy, sample=1).problems)
    _edit_definition(task_copy, "seed: 1", "seed: ")
    _edit_definition(task_copy, f"{task_copy.model}", "some-other-model")
    assert any(f"no longer lists model {task_copy.model}" in p for p in check_instance(task_copy, sample=1).problems)
