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
        [sys.executable, str(script), "--sample", "12", "--refills", "16", "--skip-incidental"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in BUILT:
        assert name in done.stdout
    assert "None" not in done.stdout  # a check with nothing to measure prints '-', explained below the table
    assert "minimality '-':" in done.stdout and "pass: share of the sampled cases" in done.stdout


@pytest.mark.slow
@pytest.mark.skipif(not any(name.startswith("context/") for name in BUILT), reason="context not built")
def test_independent_check_measures_incidental_words_where_the_task_sets_it():
    """``context`` sets an incidental threshold: every word outside the cause and entity, refilled alone,
    must keep the hallucination on the script's own draws too (one refill block per word, hence slow)."""
    script = REPO_ROOT / "scripts" / "independent_check.py"
    done = subprocess.run(
        [sys.executable, str(script), "--task", "context", "--sample", "3", "--refills", "16"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("context/")]
    assert rows and all(len(r) >= 13 for r in rows), done.stdout
    # the exit status also weighs the other checks' means, which 3 cases leave noisy (the test above runs them
    # on 12); here: the incidental rates are measured, under both families, and hold the task's 0.5
    assert all(float(r[7]) >= 0.5 and float(r[12]) >= 0.5 for r in rows), done.stdout
    assert not any(line.startswith(("single/", "decoy/")) for line in done.stdout.splitlines())


def test_independent_check_does_not_import_halbench():
    source = (REPO_ROOT / "scripts" / "independent_check.py").read_text()
    assert "halbench" not in "".join(line for line in source.splitlines() if line.startswith(("import", "from")))
