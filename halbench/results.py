"""Reading evaluation results back: every ``<task>/<model>/<method>/budget-<B>.json`` summary under a results root.

Built-in results live in ``results/``; a submission's in ``submissions/<slug>/results/``, in the same
layout, so one reader serves both. Reading executes nobody's code. A malformed file is reported and
skipped, never fatal: one broken submission must not take the leaderboard down.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

SUMMARY = re.compile(r"^budget-(\d+)\.json$")
REQUIRED = ("task", "model", "method", "budget", "metrics", "cost", "cases", "ok", "failed", "task_hash")


@dataclass
class Entry:
    """One method on one task instance at one budget: the stored summary and, lazily, its per-case records."""

    task: str
    model: str
    method: str
    budget: int
    summary: dict
    cases_path: Path
    source: str  # "built-in" or a submission slug

    @property
    def instance(self) -> str:
        return f"{self.task}/{self.model}"

    @cached_property
    def records(self) -> dict[str, dict]:
        """Per-case records by case id; unreadable lines are skipped (the verifier reports them)."""
        out: dict[str, dict] = {}
        if not self.cases_path.is_file():
            return out
        with open(self.cases_path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("id"), str):
                    out[record["id"]] = record
        return out


@dataclass
class ResultStore:
    entries: list[Entry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def add_root(self, root: Path, source: str) -> None:
        """Read every summary under ``root``; bad files become ``problems``."""
        if not Path(root).is_dir():
            return
        for path in sorted(Path(root).glob("*/*/*/budget-*.json")):
            if not SUMMARY.match(path.name):
                continue
            try:
                self.entries.append(_entry(path, source))
            except (OSError, ValueError) as exc:
                self.problems.append(f"{path}: {exc}")
        self.__dict__.pop("_index", None)  # a lookup built before this root was read is stale

    @property
    def tasks(self) -> list[str]:
        return sorted({e.task for e in self.entries})

    @property
    def instances(self) -> list[str]:
        return sorted({e.instance for e in self.entries})

    @property
    def methods(self) -> list[str]:
        return sorted({e.method for e in self.entries})

    @property
    def budgets(self) -> list[int]:
        return sorted({e.budget for e in self.entries})

    def get(self, instance: str, method: str, budget: int) -> Entry | None:
        return self._index.get((instance, method, budget))

    def keep(self, wanted) -> None:
        """Drop every entry for which ``wanted(entry)`` is false (the lookup index follows)."""
        self.entries = [e for e in self.entries if wanted(e)]
        self.__dict__.pop("_index", None)

    @cached_property
    def _index(self) -> dict[tuple[str, str, int], Entry]:
        return {(e.instance, e.method, e.budget): e for e in self.entries}


def _entry(path: Path, source: str) -> Entry:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(summary, dict):
        raise ValueError("a summary must be a JSON object")
    missing = [key for key in REQUIRED if key not in summary]
    if missing:
        raise ValueError(f"missing fields {missing}")
    task, model, method = path.parent.parent.parent.name, path.parent.parent.name, path.parent.name
    budget = int(SUMMARY.match(path.name).group(1))
    said = (summary["task"], summary["model"], summary["method"], summary["budget"])
    if said != (task, model, method, budget):
        raise ValueError(f"says {said}, but its path says {task}/{model}/{method}/budget-{budget}")
    return Entry(task, model, method, budget, summary, path.with_name(f"budget-{budget}.cases.jsonl"), source)


def load_results(repo: Path, extra_sources: dict[str, Path] | None = None) -> ResultStore:
    """Built-in results from ``repo/results`` plus each source's results folder (``{slug: folder}``)."""
    store = ResultStore()
    store.add_root(Path(repo) / "results", "built-in")
    for slug, folder in sorted((extra_sources or {}).items()):
        store.add_root(Path(folder), slug)
    return store
