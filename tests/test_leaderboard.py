"""Leaderboard arithmetic on hand-made results: shared cases, failures at the worst value, ranks with ties."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from halbench.results import load_results
from halbench.site.leaderboard import HEADLINE, build_board


def write(root: Path, task: str, method: str, budget: int, values: dict[str, float | None], kind="baseline") -> None:
    folder = root / "results" / task / method
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for case, value in values.items():
        cost = {"rows": budget // 2, "seconds": 0.01, "forward_rows": budget // 2, "backward_rows": 0}
        if value is None:
            lines.append({"id": case, "status": "failed", "reason": "RuntimeError: boom", "cost": cost})
        else:
            lines.append({"id": case, "status": "ok", "metrics": {HEADLINE: value, "hit_at_k": value}, "cost": cost})
    (folder / f"budget-{budget}.cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    ok = [v for v in values.values() if v is not None]
    summary = {
        "task": task,
        "method": method,
        "budget": budget,
        "kind": kind,
        "task_hash": "h",
        "cases": len(values),
        "ok": len(ok),
        "failed": len(values) - len(ok),
        "metrics": {HEADLINE: {"mean": float(np.mean(ok)), "low": 0, "high": 1, "n": len(ok)}},
        "cost": {"rows": budget / 2, "seconds": 0.01},
    }
    (folder / f"budget-{budget}.json").write_text(json.dumps(summary))


@pytest.fixture
def store(tmp_path):
    rng = np.random.default_rng(0)
    cases = [f"c{i:02d}" for i in range(40)]
    base = 0.9 + 0.05 * rng.random(40)
    strong = {c: float(v) for c, v in zip(cases, base, strict=True)}
    noise = rng.normal(0, 0.01, 40)
    twin = {c: float(v) for c, v in zip(cases, base + noise - noise.mean(), strict=True)}  # same mean
    weak = {c: float(v) for c, v in zip(cases, 0.3 * rng.random(40), strict=True)}
    for task in ("t1", "t2"):
        write(tmp_path, task, "strong", 64, strong)
        write(tmp_path, task, "twin", 64, twin)
        write(tmp_path, task, "weak", 64, weak, kind="gradient")
    failing = dict(strong)
    failing["c00"] = failing["c01"] = None
    write(tmp_path, "t1", "failing", 64, failing)
    write(tmp_path, "t2", "failing", 64, strong)
    write(tmp_path, "t1", "partial", 64, strong)  # no t2 results: left out of "all"
    return load_results(tmp_path)


def test_ranks_tie_when_the_difference_is_not_significant(store):
    board = build_board(store, "all", 64, {})
    ranks = {r.method: (r.rank, r.tied) for r in board.rows}
    assert ranks["strong"] == (1, True) and ranks["twin"] == (1, True)
    assert ranks["weak"][0] == 4 and not ranks["weak"][1]  # below strong, twin and failing
    assert board.missing == ["partial"] and board.cases == 80


def test_failures_count_at_the_worst_value(store):
    board = build_board(store, "t1", 64, {})
    failing = next(r for r in board.rows if r.method == "failing")
    assert failing.failed == 2 and failing.cases == 40
    values = [
        json.loads(x).get("metrics", {}).get(HEADLINE, 0.0) for x in store.get("t1", "failing", 64).cases_path.open()
    ]
    assert failing.metrics[HEADLINE].mean == pytest.approx(sum(values) / 40)  # two zeros, not the mean of the 38 ok
    assert failing.metrics[HEADLINE].low <= failing.metrics[HEADLINE].mean <= failing.metrics[HEADLINE].high
    assert {r.method for r in board.rows} >= {"partial"}  # has t1 results, so it is ranked on t1


def test_rows_cost_and_kind_come_from_the_records(store):
    row = next(r for r in build_board(store, "all", 64, {"weak": "verified"}).rows if r.method == "weak")
    assert row.kind == "gradient" and row.rows == 32 and row.status == "verified"


def test_a_summary_whose_path_disagrees_is_skipped(tmp_path):
    write(tmp_path, "t1", "m", 64, {"a": 1.0})
    path = tmp_path / "results" / "t1" / "m" / "budget-64.json"
    data = json.loads(path.read_text())
    data["method"] = "other"
    path.write_text(json.dumps(data))
    store = load_results(tmp_path)
    assert store.entries == [] and "path says t1/m/budget-64" in store.problems[0]
