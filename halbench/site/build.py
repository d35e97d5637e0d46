"""``halbench site build``: render the static leaderboard from results/ and submissions/*/results/.

Everything is relative links and local assets, so the build works from ``file://`` with no network.
It is built in a staging folder and swapped in whole, so a failed build never leaves half a site.
Submitted names and descriptions reach the pages only through jinja2's autoescaping.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from halbench import __version__
from halbench.methods.base import registered
from halbench.metrics import METRICS
from halbench.results import ResultStore, load_results
from halbench.site import downloads
from halbench.site.casesview import traces
from halbench.site.leaderboard import HEADLINE, HEADLINE_BUDGET, Board, build_board
from halbench.site.plots import Point, cost_plot
from halbench.submissions.loader import discover_submissions
from halbench.submissions.verify import verification_status
from halbench.tasks.artifacts import CASES, read_cases
from halbench.tasks.registry import REPO_ROOT, UnknownTaskError, resolve

SHOWN = ("average_precision", "hit_at_k", "s_rep@0.5", "precision_at_k", "auroc")
SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


@dataclass
class BuildReport:
    index: Path
    pages: int
    seconds: float
    problems: list[str] = field(default_factory=list)


@dataclass
class Site:
    """Everything the templates read, gathered once."""

    store: ResultStore
    statuses: dict[str, str]
    methods: dict[str, dict]
    tasks: dict[str, dict]
    boards: dict[tuple[str, int], Board]
    problems: list[str]
    cases_per_task: int


SOURCES = REPO_ROOT / "site"  # templates/ and static/


def build_site(repo: Path = REPO_ROOT, out: Path | None = None, cases_per_task: int = 12) -> BuildReport:
    """Build from ``repo``'s results/ and submissions/ (templates and assets always come from this package's repo)."""
    start = time.perf_counter()
    repo = Path(repo)
    out = Path(out) if out else repo / "site" / "_build"
    site = gather(repo, cases_per_task)
    env = _environment(SOURCES / "templates")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".site-", dir=out.parent))
    try:
        pages = _render_all(site, env, staging)
        shutil.copytree(SOURCES / "static", staging / "static")
        _swap(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BuildReport(out / "index.html", pages, time.perf_counter() - start, site.problems)


def gather(repo: Path, cases_per_task: int) -> Site:
    subs, problems = discover_submissions(repo / "submissions")
    statuses = {s.slug: verification_status(s.folder) for s in subs}
    store = load_results(repo, {s.slug: s.folder / "results" for s in subs})
    problems = [*problems, *store.problems]
    for name in store.tasks + store.methods:
        if not set(name) <= SAFE:
            problems.append(f"{name!r}: not a safe page name; its results are left out")
    store.keep(lambda e: set(e.task) <= SAFE and set(e.method) <= SAFE)
    methods = {m: _method_info(m, store, {s.slug: s for s in subs}) for m in store.methods}
    tasks = {}
    for task in store.tasks:
        try:
            tasks[task] = _task_info(task)
        except (UnknownTaskError, OSError, ValueError) as exc:
            problems.append(f"task {task}: {exc}")
    scopes = ["all", *tasks]
    boards = {(scope, b): build_board(store, scope, b, statuses) for scope in scopes for b in store.budgets}
    return Site(store, statuses, methods, tasks, boards, problems, cases_per_task)


def _method_info(name: str, store: ResultStore, subs: dict) -> dict:
    entry = next(e for e in store.entries if e.method == name)
    info = {
        "name": name,
        "kind": entry.summary.get("kind", "?"),
        "source": entry.source,
        "params": entry.summary.get("params", {}),
    }
    if name in subs:
        spec = subs[name].spec
        info.update(
            description=spec.description,
            display=spec.name,
            authors=list(spec.authors),
            paper=spec.paper,
            code=spec.code,
            licence=spec.licence,
        )
        return info
    cls = registered().get(name)
    info.update(
        description=getattr(cls, "description", "(no longer registered)"),
        display=name,
        authors=["halbench maintainers"] if cls else [],
        paper=getattr(cls, "paper", None),
        code=getattr(cls, "code", None),
        licence="MIT" if cls else None,
        module=cls.__module__.replace(".", "/") + ".py" if cls else None,
    )
    return info


def _task_info(task: str) -> dict:
    ref = resolve(task)
    manifest = ref.manifest()
    records = [r for r in read_cases(ref.artifacts / CASES) if r["split"] == "test"]
    spec = manifest.get("spec", {})
    mechanisms: dict[str, int] = {}
    for r in records:
        for m in r.get("mechanisms", []):
            mechanisms[m] = mechanisms.get(m, 0) + 1
    return {
        "name": task,
        "family": manifest.get("family"),
        "version": manifest.get("version"),
        "description": spec.get("description", ""),
        "counts": manifest.get("counts", {}),
        "hash": manifest.get("content_hash", ""),
        "mechanisms": dict(sorted(mechanisms.items())),
        "prompt_length": manifest.get("prompt_length"),
        "model": manifest.get("model", {}),
        "records": records,
    }


def _environment(templates: Path) -> Environment:
    env = Environment(
        loader=FileSystemLoader(templates),
        autoescape=select_autoescape(["html"], default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda v, digits=3: "–" if v is None else f"{v:.{digits}f}"
    env.filters["cause_positions"] = lambda case: {p for alt in case["causes"] for p in alt}
    env.globals.update(METRICS=METRICS, SHOWN=SHOWN, HEADLINE=HEADLINE, HEADLINE_BUDGET=HEADLINE_BUDGET)
    env.globals["version"] = __version__
    return env


def _render_all(site: Site, env: Environment, root: Path) -> int:
    pages = 0

    def page(template: str, path: str, **context) -> None:
        nonlocal pages
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        prefix = "../" * path.count("/")
        html = env.get_template(template).render(root=prefix, site=site, page_path=path, **context)
        target.write_text(html, encoding="utf-8")
        pages += 1

    budgets = site.store.budgets
    default = HEADLINE_BUDGET if HEADLINE_BUDGET in budgets else (budgets[-1] if budgets else HEADLINE_BUDGET)
    page("leaderboard.html", "index.html", budgets=budgets, default_budget=default)
    page("cost.html", "cost.html", plots=_plots(site))
    page("metrics.html", "metrics.html")
    page("downloads.html", "downloads.html")
    for name, task in site.tasks.items():
        shown = _drilldown_cases(site, name)
        page("task.html", f"tasks/{name}.html", task=task, cases=shown, plot=Markup(_task_plot(site, name)))
        for case in shown:
            views = traces(site.store, name, case, site.store.methods)
            page(
                "case.html",
                f"cases/{name}/{case['id']}.html",
                task=task,
                case=case,
                traces=views,
                default_budget=default,
            )
    for name, method in site.methods.items():
        page("method.html", f"methods/{name}.html", method=method)
    _write_downloads(site, root / "downloads")
    return pages


def _drilldown_cases(site: Site, task: str) -> list[dict]:
    have = {cid for e in site.store.entries if e.task == task for cid in e.records}
    return [r for r in site.tasks[task]["records"] if r["id"] in have and set(r["id"]) <= SAFE][: site.cases_per_task]


def _points(site: Site, scope: str) -> list[Point]:
    points = []
    for budget in site.store.budgets:
        for row in site.boards[(scope, budget)].rows:
            if HEADLINE in row.metrics:
                points.append(Point(row.method, budget, row.rows, row.metrics[HEADLINE].mean))
    return points


def _plots(site: Site) -> list[tuple[str, Markup]]:
    title = "All tasks: average precision against cost"
    return [("all", Markup(cost_plot(_points(site, "all"), title)))] if site.store.budgets else []


def _task_plot(site: Site, task: str) -> str:
    points = _points(site, task)
    return cost_plot(points, f"{task}: average precision against cost") if points else ""


def _write_downloads(site: Site, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(downloads.results_json(site.store, site.statuses), encoding="utf-8")
    (folder / "results.csv").write_text(downloads.summaries_csv(site.store, site.statuses), encoding="utf-8")
    (folder / "cases.csv").write_text(downloads.cases_csv(site.store), encoding="utf-8")


def _swap(staging: Path, out: Path) -> None:
    """Replace ``out`` with ``staging`` (two renames; the old build is removed afterwards)."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{time.time_ns()}")
        out.rename(old)
    staging.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
