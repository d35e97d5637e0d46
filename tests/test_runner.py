"""``halbench eval`` end to end: results files, provenance, failures recorded per case, resume after a kill."""

from __future__ import annotations

import json
from typing import ClassVar

import numpy as np
import pytest

from halbench.methods.base import Attribution, Method
from halbench.runner import EvalConfig, evaluate, read_done, result_paths
from halbench.tasks.bundle import load_bundle

from .conftest import BUILT, TASKS, invoke

pytestmark = pytest.mark.skipif("single" not in BUILT, reason="single not built")


class Flaky(Method):
    """Fails in every way a submission can: raises, NaN, wrong shape, budget overrun; fine otherwise."""

    name = "test_flaky"
    description = "test double that misbehaves on chosen cases"
    kind = "baseline"
    calls: ClassVar[list[str]] = []

    def attribute(self, case, scorer, rng):
        Flaky.calls.append(case.id)
        n = int(case.id.split("-")[-1]) % 5
        if n == 0:
            raise RuntimeError("boom")
        if n == 1:
            return Attribution(np.full(case.length, np.nan))
        if n == 2:
            return Attribution(np.zeros(case.length + 2))
        if n == 3:
            scorer.target_logprob(np.repeat(scorer.prompt[None], scorer.budget + 1, axis=0))
        scores = np.zeros(case.length)
        scores[list(case.editable)] = rng.random(len(case.editable))
        return Attribution(scores)


@pytest.fixture(scope="module")
def single():
    return load_bundle(TASKS / "single", device="cpu")


def test_failures_are_recorded_and_the_run_goes_on(single, tmp_path):
    config = EvalConfig("test_flaky", budget=64, limit=10, out=tmp_path)
    summary = evaluate(single, config, progress=False)
    assert summary["cases"] == 10 and summary["failed"] + summary["ok"] == 10
    reasons = " | ".join(summary["failures"].values())
    for needle in ("RuntimeError: boom", "finite", "shape", "BudgetExceeded"):
        assert needle in reasons
    assert summary["ok"] >= 1 and "average_precision" in summary["metrics"]
    assert summary["task_hash"] == single.manifest["content_hash"]
    assert summary["versions"]["torch"] and summary["seed"] == 0


def test_resume_after_a_killed_run(single, tmp_path):
    config = EvalConfig("random", budget=64, limit=6, out=tmp_path)
    cases_path, summary_path = result_paths(config, "single")
    full = evaluate(single, config, progress=False)
    lines = cases_path.read_text().splitlines(keepends=True)
    cases_path.write_text("".join(lines[:3]) + lines[3][:25])  # killed mid-write of the fourth record
    summary_path.unlink()
    Flaky.calls.clear()
    resumed = evaluate(single, config, progress=False)
    assert [r["id"] for r in read_done(cases_path)] == [json.loads(line)["id"] for line in lines]
    assert resumed["metrics"] == full["metrics"]


def test_resume_skips_recorded_cases(single, tmp_path):
    config = EvalConfig("test_flaky", budget=64, limit=4, out=tmp_path)
    evaluate(single, config, progress=False)
    Flaky.calls.clear()
    more = EvalConfig("test_flaky", budget=64, limit=6, out=tmp_path)
    summary = evaluate(single, more, progress=False)
    assert len(Flaky.calls) == 2 and summary["cases"] == 6


def test_same_seed_same_numbers(single, tmp_path):
    a = evaluate(single, EvalConfig("occlusion", budget=64, limit=4, out=tmp_path / "a"), progress=False)
    b = evaluate(single, EvalConfig("occlusion", budget=64, limit=4, out=tmp_path / "b"), progress=False)
    assert a["metrics"] == b["metrics"]


def test_eval_cli_prints_a_table_and_writes_results(tmp_path):
    result = invoke(
        "eval",
        "--method",
        "occlusion",
        "--task",
        "single",
        "--limit",
        "3",
        "--budget",
        "64",
        "--out",
        str(tmp_path),
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    assert "average_precision" in result.output and "single" in result.output
    summary = json.loads((tmp_path / "single" / "occlusion" / "budget-64.json").read_text())
    assert summary["cases"] == 3 and summary["method"] == "occlusion"


def test_eval_cli_rejects_unknown_method():
    result = invoke("eval", "--method", "nope", "--task", "single")
    assert result.exit_code == 1 and "unknown method 'nope'" in result.output


def test_methods_list_and_show():
    listed = invoke("methods", "list")
    assert listed.exit_code == 0 and "integrated_gradients" in listed.output
    shown = invoke("methods", "show", "occlusion")
    assert shown.exit_code == 0 and "max_draws" in shown.output


def test_reduced_full_run_every_method_every_budget(tmp_path):
    """The leaderboard run in miniature: every built-in method, two tasks, all budgets, shared metric rows."""
    from halbench.methods.base import registered

    args = ["eval", "--all-methods", "--task", "single", "--task", "context", "--limit", "2"]
    result = invoke(*args, "--out", str(tmp_path), "--no-progress")
    assert result.exit_code == 0, result.output
    builtins = [name for name in registered() if not name.startswith("test_") and "-" not in name]
    for task in ("single", "context"):
        for name in builtins:
            for budget in (64, 256, 1024):
                summary = json.loads((tmp_path / task / name / f"budget-{budget}.json").read_text())
                assert summary["failed"] == 0 and summary["cost"]["rows"] <= budget, (task, name, budget)
    for name in ("lime", "kernel_shap", "sat", "sat_shrunk"):  # budget-bound methods spend what they get
        rows = [
            json.loads((tmp_path / "single" / name / f"budget-{b}.json").read_text())["cost"]["rows"]
            for b in (64, 256, 1024)
        ]
        assert rows == [64, 256, 1024], name


def test_eval_cli_refuses_params_for_several_methods():
    result = invoke("eval", "--method", "sat", "--method", "lime", "--param", "rate=0.3", "--task", "single")
    assert result.exit_code == 2 and "--param applies to one method" in result.output
