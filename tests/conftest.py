"""Shared fixtures: the committed tasks, and one quick task built once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from halbench.cli import cli
from halbench.tasks.registry import REPO_ROOT

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local; never reach for a hub
TASKS = REPO_ROOT / "tasks"
BUILT = sorted(p.name for p in TASKS.iterdir() if (p / "MANIFEST.json").is_file())


@pytest.fixture(scope="session")
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="session")
def quick_single(tmp_path_factory) -> Path:
    """``tasks build single --quick`` into a temporary folder (trains a tiny model, ~30 s)."""
    root = tmp_path_factory.mktemp("quick")
    result = CliRunner().invoke(
        cli,
        [
            "tasks",
            "build",
            "single",
            "--quick",
            "--out",
            str(root / "out"),
            "--cache",
            str(root / "cache"),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    return root / "out" / "single"


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args))
    return result
