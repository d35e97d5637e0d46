"""Leaderboard arithmetic on hand-made results: the suite's case set, worst values, hierarchical intervals, ranks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from halbench.leaderboard import HEADLINE, SuiteIndex, build_board, case_values
from halbench.metrics import bootstrap_ci
from halbench.metrics.hierarchical import Bootstrap, Unit, point_weights, replicate_weights
from halbench.results import load_results
from halbench.runner import aggregate

BUDGETS = (16, 64)
MODELS = ("m1", "m2", "m3")
CASES = [f"c{i:02d}" for i in range(24)]


def write(root: Path, task: str, model: str, method: str, budget: int, values: dict, kind="baseline") -> None:
    folder = root / "results" / task / model / method
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for case, value in values.items():
        cost = {"rows": budget // 2, "forward_rows": budget // 2, "backward_rows": 0}
        if value is None:
            lines.append({"id": case, "status": "failed", "reason": "RuntimeError: boom", "cost": cost})
        else:
            lines.append({"id": case, "status": "ok", "metrics": {HEADLINE: value}, "cost": cost})
    (folder / f"budget-{budget}.cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    summary = {"task": task, "model": model, "method": method, "budget": budget, "kind": kind, "task_hash": "h",
               "cases": len(values), "ok": 0, "failed": 0, "metrics": {}, "cost": {"seconds": 0.01}}  # fmt: skip
    (folder / f"budget-{budget}.json").write_text(json.dumps(summary))


def index() -> SuiteIndex:
    names = [f"t/{m}" for m in MODELS]
    units = {f"t/{m}": [Unit("t", m, f"{m}|k{i % 4}") for i in range(len(CASES))] for m in MODELS}
    return SuiteIndex({n: list(CASES) for n in names}, units)


@pytest.fixture
def store(tmp_path):
    rng = np.random.default_rng(0)
    for model in MODELS:
        base = 0.8 + 0.1 * rng.random(len(CASES))
        for budget in BUDGETS:
            write(tmp_path, "t", model, "strong", budget, dict(zip(CASES, base.tolist(), strict=True)))
            write(tmp_path, "t", model, "twin", budget, dict(zip(CASES, base.tolist(), strict=True)))
            write(
                tmp_path,
                "t",
                model,
                "weak",
                budget,
                dict(zip(CASES, (0.2 * rng.random(len(CASES))).tolist(), strict=True)),
            )
            failing = dict(zip(CASES, base.tolist(), strict=True))
            failing["c00"] = None
            write(tmp_path, "t", model, "failing", budget, failing)
            partial = dict(list(zip(CASES, base.tolist(), strict=True))[:5])  # covers 5 of 24 cases
            write(tmp_path, "t", model, "partial", budget, partial)
            write(tmp_path, "t", model, "probe", budget, dict(zip(CASES, base.tolist(), strict=True)), kind="probe")
    return load_results(tmp_path)


def rows(board):
    return {r.method: r for r in board.rows}


def test_ranks_ties_and_the_rows_that_are_not_ranked(store):
    board = build_board(store, index(), "all", {}, budgets=BUDGETS, n_boot=300)
    by = rows(board)
    assert by["strong"].rank == by["twin"].rank == 1 and by["strong"].tied
    assert by["weak"].rank == 4 and not by["weak"].tied  # strong, twin and failing above it
    assert not by["partial"].ranked and "incomplete" in by["partial"].reason
    assert not by["probe"].ranked and by["probe"] in board.probes
    assert board.cases == 3 * len(CASES)  # the suite's case set, whatever partial recorded


def test_a_failed_case_counts_at_the_worst_value(store):
    by = rows(build_board(store, index(), "all", {}, budgets=BUDGETS, n_boot=300))
    gap = by["strong"].headline.mean - by["failing"].headline.mean
    strong_c00 = np.mean([store.get(f"t/{m}", "strong", 16).records["c00"]["metrics"][HEADLINE] for m in MODELS])
    assert gap == pytest.approx(strong_c00 / len(CASES))  # one case per model at 0 instead of its value


def test_a_summary_and_the_board_count_a_failed_case_alike(store):
    """One rule for failures: the per-instance summary (runner.aggregate) and the board give the same mean."""
    name = f"t/{MODELS[0]}"
    entry = store.get(name, "failing", 16)
    records = [*entry.records.values(), {"id": "nan", "status": "ok", "metrics": {HEADLINE: float("nan")}}]
    summary = aggregate(records, seed=0)
    assert summary["failed"] == 1 and summary["metrics"][HEADLINE]["n"] == len(CASES) + 1
    entry.records["nan"] = records[-1]  # a NaN value counts like a failure, in both
    on_board = case_values({name: entry}, SuiteIndex({name: [*CASES, "nan"]}, {}), [name], HEADLINE)
    assert on_board[0] == on_board[-1] == 0.0  # the failed case and the NaN value, at AP's worst
    assert summary["metrics"][HEADLINE]["mean"] == pytest.approx(on_board.mean(), abs=1e-6)


def test_an_incomplete_entry_never_shrinks_anyone_elses_case_set(store):
    full = rows(build_board(store, index(), "all", {}, budgets=BUDGETS, n_boot=300))
    store.keep(lambda e: e.method != "partial")
    without = rows(build_board(store, index(), "all", {}, budgets=BUDGETS, n_boot=300))
    assert full["strong"].headline == without["strong"].headline


def test_an_unverified_submission_is_listed_apart(store):
    for entry in store.entries:
        if entry.method == "twin":
            entry.source = "twin"
    by = rows(build_board(store, index(), "all", {"twin": "unverified"}, budgets=BUDGETS, n_boot=300))
    assert not by["twin"].ranked and "unverified" in by["twin"].reason
    by = rows(build_board(store, index(), "all", {"twin": "verified"}, budgets=BUDGETS, n_boot=300))
    assert by["twin"].ranked


def test_point_weights_give_tasks_and_models_equal_weight():
    units = [Unit("a", "m1", "x")] * 2 + [Unit("a", "m2", "x")] * 6 + [Unit("b", "m1", "y")] * 4
    w = point_weights(units)
    assert w.sum() == pytest.approx(1.0)
    assert (
        w[:2].sum() == pytest.approx(0.25) and w[2:8].sum() == pytest.approx(0.25) and w[8:].sum() == pytest.approx(0.5)
    )


def test_every_replicate_is_a_weighting_that_sums_to_one():
    units = [Unit("a", m, f"{m}{i % 3}") for m in ("m1", "m2") for i in range(9)]
    w = replicate_weights(units, n_boot=200, seed=1)
    assert w.shape == (200, 18) and np.allclose(w.sum(1), 1.0) and (w >= 0).all()


def test_clustered_cases_get_wider_intervals_than_an_iid_bootstrap():
    """Cases of one mechanism move together: resampling cases alone overstates the evidence."""
    rng = np.random.default_rng(3)
    units, values = [], []
    for model in ("m1", "m2", "m3"):
        for k in range(4):
            level = rng.random()  # each mechanism has its own difficulty
            for _ in range(25):
                units.append(Unit("t", model, f"{model}|k{k}"))
                values.append(level + 0.01 * rng.normal())
    hier = Bootstrap(units, n_boot=1000, seed=0).interval(values)
    _, low, high = bootstrap_ci(values, seed=0)
    assert (hier.high - hier.low) > 3 * (high - low)


def test_a_difference_interval_is_paired():
    units = [Unit("t", "m", f"k{i % 5}") for i in range(50)]
    boot = Bootstrap(units, n_boot=500, seed=0)
    rng = np.random.default_rng(0)
    a = rng.random(50)
    gap = boot.difference(a + 0.01, a)
    assert gap.low == pytest.approx(0.01) and gap.high == pytest.approx(0.01)
