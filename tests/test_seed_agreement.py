"""scripts/seed_agreement.py: Kendall tau between two builds, over the instances evaluated in both."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from halbench.tasks.registry import REPO_ROOT

from .test_site import fake_repo

spec = importlib.util.spec_from_file_location("seed_agreement", REPO_ROOT / "scripts" / "seed_agreement.py")
agreement = importlib.util.module_from_spec(spec)
spec.loader.exec_module(agreement)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """The site tests' repository with its 64-row results also standing as the 256-row ones the headline needs."""
    out = tmp_path_factory.mktemp("agreement") / "a"
    shutil.copytree(fake_repo(tmp_path_factory), out)
    for path in sorted((out / "results").rglob("budget-64.*")):
        text = path.read_text().replace('"budget": 64', '"budget": 256').replace('"budget":64', '"budget":256')
        path.with_name(path.name.replace("budget-64", "budget-256")).write_text(text)
    return out


def run(*args: str):
    return CliRunner().invoke(agreement.main, list(args))


def test_a_build_with_a_whole_tasks_copy_counts_only_the_instances_it_evaluated(repo, tmp_path):
    b = tmp_path / "b"
    shutil.copytree(repo / "tasks", b / "tasks")  # every instance, as a copied tasks folder holds
    shutil.copytree(repo / "results" / "alpha", b / "results" / "alpha")  # only alpha was rebuilt and evaluated
    result = run("--a", str(repo), "--b", str(b))
    assert result.exit_code == 0, result.output
    assert "instances in both: alpha/m-gpt2, alpha/m-llama\n" in result.output
    assert "Kendall tau over all common instances" in result.output and ": 1.00" in result.output  # same numbers


def test_builds_with_no_evaluated_instance_in_common_get_one_clear_line(repo, tmp_path):
    b = tmp_path / "b"
    shutil.copytree(repo / "tasks", b / "tasks")
    (b / "results").mkdir()
    result = run("--a", str(repo), "--b", str(b))
    assert result.exit_code != 0
    assert "share no task instance with results in both" in result.output
