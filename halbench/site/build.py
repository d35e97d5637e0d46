"""``halbench site build``: render the static leaderboard from results/ and submissions/*/results/.

Every link is relative and every asset local, so the build works from ``file://`` with no network.
Pages are rendered into a staging folder that is swapped in whole (:mod:`halbench.site.publish`).
Nothing is imported from a submission: the inputs are files (:mod:`halbench.site.inputs`).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment
from markupsafe import Markup

from halbench.site import downloads
from halbench.site.casesview import traces
from halbench.site.gather import SiteData, gather
from halbench.site.plots import cost_plot
from halbench.site.publish import publish
from halbench.site.templates import SOURCES, environment
from halbench.tasks.registry import REPO_ROOT


@dataclass
class BuildReport:
    index: Path
    pages: int
    seconds: float
    problems: list[str] = field(default_factory=list)


def build_site(
    repo: Path = REPO_ROOT,
    out: Path | None = None,
    tasks_root: Path | None = None,
    cases_per_model: int = 3,
    n_boot: int = 1000,
) -> BuildReport:
    """Build from ``repo``'s results/, submissions/ and verifications/ and the built tasks (default: ``repo/tasks``)."""
    start = time.perf_counter()
    repo = Path(repo)
    out = Path(out) if out else repo / "site" / "_build"
    site = gather(repo, tasks_root, cases_per_model, n_boot)
    env = environment()
    pages = 0

    def fill(staging: Path) -> None:
        nonlocal pages
        pages = Renderer(site, env, staging).all()
        shutil.copytree(SOURCES / "static", staging / "static")
        write_downloads(site, staging / "downloads")

    publish(out, fill)
    return BuildReport(out / "index.html", pages, time.perf_counter() - start, list(site.problems))


class Renderer:
    """Writes one file per page under ``root``; each page gets ``root`` as a relative prefix for its links."""

    def __init__(self, site: SiteData, env: Environment, root: Path):
        self.site, self.env, self.root, self.count = site, env, root, 0

    def page(self, template: str, path: str, **context) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        prefix = "../" * path.count("/")
        html = self.env.get_template(template).render(root=prefix, site=self.site, page_path=path, **context)
        target.write_text(html, encoding="utf-8")
        self.count += 1

    def all(self) -> int:
        site = self.site
        self.page("leaderboard.html", "index.html")
        self.page("consistency.html", "consistency.html")
        self.page("cost.html", "cost.html", plot=self.plot("all", "All tasks"))
        self.page("metrics.html", "metrics.html")
        self.page("downloads.html", "downloads.html")
        for name, task in site.tasks.items():
            self.page("task.html", f"tasks/{name}.html", task=task, plot=self.plot(name, name))
        for instance, cases in site.cases.items():
            task, model = instance.split("/", 1)
            for case in cases:
                shown = traces(site.inputs.store, instance, case, list(site.methods))
                self.page("case.html", f"cases/{instance}/{case['id']}.html", task=site.tasks[task], model=model,
                          case=case, traces=shown)  # fmt: skip
        for name, method in site.methods.items():
            self.page("method.html", f"methods/{name}.html", method=method)
        return self.count

    def plot(self, scope: str, title: str) -> Markup | None:
        points = self.site.points(scope)
        if not points:
            return None
        return Markup(cost_plot(points, f"{title}: average precision against rows actually spent"))


def write_downloads(site: SiteData, folder: Path) -> None:
    store, statuses = site.inputs.store, site.inputs.statuses
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(downloads.results_json(store, statuses), encoding="utf-8")
    (folder / "results.csv").write_text(downloads.summaries_csv(store, statuses), encoding="utf-8")
    (folder / "cases.csv").write_text(downloads.cases_csv(store), encoding="utf-8")
