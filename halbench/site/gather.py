"""Everything the pages read, computed once: inputs, boards, task and model facts, methods, sanity, consistency."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from halbench.leaderboard import HEADLINE, PROBE_KIND, Board
from halbench.site.boards import HEADLINE_VIEW, Views, all_boards, views
from halbench.site.catalog import ModelInfo, TaskInfo, models_of, task_info
from halbench.site.consistency import Consistency, consistency
from halbench.site.inputs import Inputs, load_inputs
from halbench.site.methods import MethodInfo, method_info
from halbench.site.names import is_safe
from halbench.site.plots import Point
from halbench.site.sanity import Recurrence, Verdict, recurrence, verdicts
from halbench.tasks.artifacts import CASES, ManifestError, read_cases


@dataclass
class SiteData:
    inputs: Inputs
    views: Views
    boards: dict[tuple[str, str], Board]  # (scope, view) -> board
    tasks: dict[str, TaskInfo]
    models: dict[str, ModelInfo]
    methods: dict[str, MethodInfo]  # in overall board order
    sanity: list[Verdict]
    recurrence: list[Recurrence]  # the recurrence probe per scope, from the case files
    consistency: Consistency
    cases: dict[str, list[dict]]  # instance -> the test cases shown in drill-downs

    @property
    def problems(self) -> list[str]:
        return self.inputs.problems

    @property
    def overall(self) -> Board:
        return self.boards[("all", HEADLINE_VIEW)]

    def headline(self, scope: str) -> Board:
        return self.boards[(scope, HEADLINE_VIEW)]

    def points(self, scope: str) -> list[Point]:
        """AP against rows actually spent, one point per (method, budget); probes are in the sanity panel."""
        out = []
        for budget in self.views.budgets:
            for row in self.boards[(scope, str(budget))].rows:
                interval = row.metrics.get(budget, {}).get(HEADLINE)
                if row.kind != PROBE_KIND and interval is not None:
                    out.append(Point(row.method, budget, row.rows[budget], interval.mean))
        return out


def test_cases(inputs: Inputs) -> tuple[dict[str, list[dict]], list[str]]:
    """Every instance's test records, read from its cases.jsonl."""
    out, problems = {}, []
    for name in inputs.index.cases:
        try:
            out[name] = [r for r in read_cases(inputs.tasks_root / name / CASES) if r.get("split") == "test"]
        except ManifestError as exc:
            problems.append(str(exc))
    return out, problems


def drilldown(inputs: Inputs, cases: dict[str, list[dict]], per_model: int) -> dict[str, list[dict]]:
    """The first ``per_model`` test cases of each instance that some method has a record of (safe ids only)."""
    out = {}
    for name, records in cases.items():
        have = {cid for e in inputs.store.entries if e.instance == name for cid in e.records}
        out[name] = [r for r in records if r.get("id") in have and is_safe(r["id"])][:per_model]
    return out


def gather(repo: Path, tasks_root: Path | None = None, per_model: int = 3, n_boot: int = 1000) -> SiteData:
    inputs = load_inputs(repo, tasks_root)
    shown = views(inputs)
    boards = all_boards(inputs, shown, n_boot)
    cases, problems = test_cases(inputs)
    inputs.problems += problems
    tasks = {t: task_info(inputs.tasks_root, t, inputs.manifests, cases) for t in inputs.tasks}
    models = models_of(list(tasks.values()))
    overall = boards[("all", HEADLINE_VIEW)]
    order = [r.method for r in overall.rows]
    order += [m for m in inputs.store.methods if m not in order]  # results only at budgets outside the headline
    methods = {m: method_info(m, inputs.store, inputs.submissions) for m in order}
    sanity = [v for scope in ["all", *tasks] for v in verdicts(boards[(scope, HEADLINE_VIEW)])]
    agreement = consistency(inputs, overall, models, shown.headline)
    return SiteData(
        inputs,
        shown,
        boards,
        tasks,
        models,
        methods,
        sanity,
        recurrence(cases),
        agreement,
        drilldown(inputs, cases, per_model),
    )
