"""Shared fixtures: a tiny random instance built in seconds, and the committed suite when it is built."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from halbench.cli import cli
from halbench.tasks.registry import REPO_ROOT, built_instances

from .tiny import make_tiny_instance

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local; never reach for a hub
TASKS = REPO_ROOT / "tasks"
SUITE = built_instances()
BUILT = {i.name: i for i in SUITE}
needs_suite = pytest.mark.skipif(not SUITE, reason="the suite is not built (halbench tasks build --all)")


def built(name: str):
    """A committed instance by ``task/model``, or a skip when it is not built."""
    if name not in BUILT:
        pytest.skip(f"{name} is not built")
    return BUILT[name]


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A random-init Llama instance (mechanics only: its causes mean nothing)."""
    return make_tiny_instance(tmp_path_factory.mktemp("tiny"), "llama", cases=8, dev=4)


@pytest.fixture(scope="session")
def tiny_bundle(tiny):
    from halbench.tasks.bundle import load_bundle

    return load_bundle(tiny, device="cpu")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))
