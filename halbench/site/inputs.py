"""What the leaderboard is built from: result files, submission declarations, verifier records, built tasks.

One loader serves ``halbench site build`` and ``halbench leaderboard``, so both show the same board.
It reads files only: submissions are known by their ``submission.yaml``, their status by the
verifier's own record (``verifications/<slug>.json``), never by running or importing anything.

Entries are dropped, with a reason in ``problems``, when they could mislead:

- a task, model or method name outside the safe charset (it would become a page name);
- results for an instance that is not built under the tasks root, or computed on another build of it
  (their ``task_hash`` is not the instance's content hash);
- a submission's results for any method but its own slug (it cannot speak for ``random``), and
  results under ``results/`` for a method that a submission names (two sources for one row).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from halbench.leaderboard import SuiteIndex, suite_index
from halbench.results import ResultStore, load_results
from halbench.site.names import is_safe
from halbench.submissions.loader import Submission, discover_submissions
from halbench.submissions.verify import verification_status
from halbench.tasks.artifacts import MANIFEST, ManifestError, read_manifest

BUILT_IN = "built-in"


@dataclass
class Inputs:
    repo: Path
    tasks_root: Path
    store: ResultStore
    submissions: dict[str, Submission]
    statuses: dict[str, str]  # method -> built-in, verified, unverified or failed
    index: SuiteIndex
    manifests: dict[str, dict]  # instance -> its MANIFEST.json
    problems: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[str]:
        return self.index.tasks()


def default_tasks_root(repo: Path) -> Path:
    """``$HALBENCH_TASKS`` when set, else ``<repo>/tasks``."""
    env = os.environ.get("HALBENCH_TASKS")
    return Path(env) if env else Path(repo) / "tasks"


def built_instances(tasks_root: Path) -> tuple[list[str], list[str]]:
    """``task/model`` of every built instance under ``tasks_root`` with safe names, and what was skipped."""
    found, skipped = [], []
    root = Path(tasks_root)
    if not root.is_dir():
        return [], [f"{root}: no tasks folder"]
    for task in sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] not in "._"):
        for model in sorted(p for p in task.iterdir() if p.is_dir() and (p / MANIFEST).is_file()):
            if model.name[0] in "._":
                continue
            if is_safe(task.name) and is_safe(model.name):
                found.append(f"{task.name}/{model.name}")
            else:
                skipped.append(f"{task.name!r}/{model.name!r}: not a safe page name; instance left out")
    return found, skipped


def load_inputs(repo: Path, tasks_root: Path | None = None) -> Inputs:
    """Read everything the board needs from ``repo`` (results/, submissions/, verifications/) and the tasks."""
    repo = Path(repo)
    tasks_root = Path(tasks_root) if tasks_root else default_tasks_root(repo)
    subs, problems = discover_submissions(repo / "submissions")
    submissions = {s.slug: s for s in subs}
    store = load_results(repo, {s.slug: s.results for s in subs})
    problems += store.problems
    instances, skipped = built_instances(tasks_root)
    problems += skipped
    manifests = {}
    for name in instances:
        try:
            manifests[name] = read_manifest(tasks_root / name)
        except ManifestError as exc:
            problems.append(str(exc))
    index = suite_index(tasks_root, sorted(manifests))
    problems += index.problems
    problems += _screen(store, index, manifests, submissions)
    statuses = {m: BUILT_IN for m in store.methods if m not in submissions}
    statuses.update(
        {m: verification_status(submissions[m], repo / "verifications") for m in store.methods if m in submissions}
    )
    return Inputs(repo, tasks_root, store, submissions, statuses, index, manifests, problems)


def _screen(store: ResultStore, index: SuiteIndex, manifests: dict[str, dict], submissions: dict) -> list[str]:
    """Drop the entries the module docstring lists; one problem line per reason and place."""
    problems: dict[str, None] = {}  # ordered set
    kept: set[int] = set()
    for e in store.entries:
        where = f"{e.source}: {e.task}/{e.model}/{e.method}"
        if not all(is_safe(n) for n in (e.task, e.model, e.method)):
            problems[f"{where!r}: not a safe page name; its results are left out"] = None
        elif e.source != BUILT_IN and e.method != e.source:
            problems[f"{where}: a submission may only hold results of its own method ({e.source}); left out"] = None
        elif e.source == BUILT_IN and e.method in submissions:
            problems[f"{where}: a submission has the same name; the built-in results are left out"] = None
        elif e.instance not in index.cases:
            problems[f"{where}: no built instance {e.instance} under the tasks root; left out"] = None
        elif e.summary.get("task_hash") != manifests[e.instance].get("content_hash"):
            problems[f"{where} at {e.budget}: computed on another build of {e.instance}; left out"] = None
        else:
            kept.add(id(e))
    store.keep(lambda e: id(e) in kept)
    return list(problems)
