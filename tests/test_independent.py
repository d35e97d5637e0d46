"""The independent check (transformers only, its own refill draws) confirms every committed task."""

from __future__ import annotations

import subprocess
import sys

import pytest

from halbench.tasks.registry import REPO_ROOT

from .conftest import BUILT


@pytest.mark.skipif(not BUILT, reason="no built tasks")
def test_independent_check_confirms_causes():
    script = REPO_ROOT / "scripts" / "independent_check.py"
    done = subprocess.run(
        [sys.executable, str(script), "--sample", "12", "--refills", "16"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in BUILT:
        assert name in done.stdout
    assert "None" not in done.stdout  # a check with nothing to measure prints '-', explained below the table
    assert "minimality '-':" in done.stdout and "pass: share of the sampled cases" in done.stdout


def test_independent_check_does_not_import_halbench():
    source = (REPO_ROOT / "scripts" / "independent_check.py").read_text()
    assert "halbench" not in "".join(line for line in source.splitlines() if line.startswith(("import", "from")))
