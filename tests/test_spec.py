"""Task definitions: strict validation with every problem reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from halbench.tasks.registry import REPO_ROOT, task_names
from halbench.tasks.spec import TaskSpecError, load_spec, read_raw

SINGLE = REPO_ROOT / "tasks" / "single" / "task.yaml"


def write(tmp_path: Path, data: dict, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def resolved() -> dict:
    return read_raw(SINGLE)


@pytest.mark.parametrize("name", task_names())
def test_every_shipped_task_validates_full_and_quick(name):
    path = REPO_ROOT / "tasks" / name / "task.yaml"
    assert load_spec(path).name == name
    assert load_spec(path, quick=True).name == name


def test_all_problems_reported_in_one_message_with_file_and_field(tmp_path):
    raw = resolved()
    raw["colour"] = "red"  # unknown key at the top
    raw["world"]["answers"] = "many"  # wrong type
    raw["world"]["content_length"] = [30, 20]  # impossible range
    raw["model"]["n_head"] = 3  # 128 % 3 != 0
    raw["verification"]["necessity"] = 1.5  # out of range
    raw["mining"]["bogus"] = 1  # unknown nested key
    path = write(tmp_path, raw)
    with pytest.raises(TaskSpecError) as info:
        load_spec(path)
    msg = str(info.value)
    assert str(path) in msg
    for needle in [
        "`colour`: unknown key",
        "`world.answers`",
        "`model`",
        "divisible",
        "`verification.necessity`",
        "`mining.bogus`: unknown key",
    ]:
        assert needle in msg, (needle, msg)


def test_missing_field_is_named(tmp_path):
    raw = resolved()
    del raw["training"]["epochs"]
    with pytest.raises(TaskSpecError, match=r"`training.epochs`: required field is missing"):
        load_spec(write(tmp_path, raw))


def test_content_length_range_checked(tmp_path):
    raw = resolved()
    raw["world"]["content_length"] = [30, 20]
    with pytest.raises(TaskSpecError, match="minimum 30 exceeds maximum 20"):
        load_spec(write(tmp_path, raw))


def test_family_and_mining_must_agree(tmp_path):
    raw = resolved()
    raw["family"] = "redundant"  # but alternatives stays 1
    raw["mining"]["mechanisms"] = ["single", "banana"]
    with pytest.raises(TaskSpecError) as info:
        load_spec(write(tmp_path, raw))
    assert "mining.mechanisms.1" in str(info.value)


def test_cross_field_family_rule(tmp_path):
    raw = resolved()
    raw["family"] = "redundant"
    with pytest.raises(TaskSpecError, match="alternatives must be 2"):
        load_spec(write(tmp_path, raw))


def test_prompt_length_must_fit_the_trained_lengths(tmp_path):
    raw = resolved()
    raw["mining"]["prompt_length"] = [16, 60]
    with pytest.raises(TaskSpecError, match="must lie within the trained content_length"):
        load_spec(write(tmp_path, raw))


def test_invalid_yaml_is_reported(tmp_path):
    path = tmp_path / "task.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(TaskSpecError, match="not valid YAML"):
        load_spec(path)


def test_top_level_must_be_mapping(tmp_path):
    path = tmp_path / "task.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(TaskSpecError, match="expected a mapping"):
        load_spec(path)


def test_include_merges_and_task_overrides(tmp_path):
    base = resolved()
    write(tmp_path, {k: v for k, v in base.items() if k in ("world", "model", "training", "verification")}, "base.yaml")
    task = {k: v for k, v in base.items() if k not in ("world", "model", "training", "verification")}
    task["include"] = "base.yaml"
    task["training"] = {"epochs": 3}
    spec = load_spec(write(tmp_path, task))
    assert spec.training.epochs == 3
    assert spec.training.batch_size == base["training"]["batch_size"]


def test_include_cycle_detected(tmp_path):
    write(tmp_path, {"include": "b.yaml"}, "a.yaml")
    write(tmp_path, {"include": "a.yaml"}, "b.yaml")
    with pytest.raises(TaskSpecError, match="include cycle"):
        load_spec(tmp_path / "a.yaml")


def test_quick_overrides_apply_only_with_quick():
    full, quick = load_spec(SINGLE), load_spec(SINGLE, quick=True)
    assert quick.cases.test < full.cases.test
    assert quick.model.n_embd < full.model.n_embd


def test_natural_world_rejects_non_neutral_fillers(tmp_path):
    raw = read_raw(REPO_ROOT / "tasks" / "natural" / "task.yaml")
    raw["world"]["fillers"]["noun"].append("violin")
    with pytest.raises(TaskSpecError, match="fillers must be neutral"):
        load_spec(write(tmp_path, raw))
