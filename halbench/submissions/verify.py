"""Verifying a submission's stored results: provenance, aggregates, and a seeded re-run of sampled cases.

Results are produced on the submitter's machine, so nothing in them is taken
on trust: every summary must name the current task version, its aggregates
must follow from its own per-case records, and a random sample of those
records must come out the same when re-scored here. ``verification.json``
keeps the sha256 of every results file, so any later edit, addition or
removal turns the status back to "unverified".
"""

from __future__ import annotations

import json
import math
import re
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from halbench import __version__
from halbench.atomic import atomic_write_json, sha256_file
from halbench.runner import EvalConfig, MetricMemo, aggregate, score_case
from halbench.submissions.loader import RESULTS_DIR, Submission, activate
from halbench.tasks.artifacts import CASES, ManifestError, read_cases
from halbench.tasks.bundle import TaskBundle, load_bundle
from halbench.tasks.registry import UnknownTaskError, resolve

REPORT_FILE = "verification.json"
AGGREGATE_KEYS = ("cases", "ok", "failed", "failures", "metrics", "cost")
SCORE_TOL = 1e-5
METRIC_TOL = 1e-6
SUMMARY_NAME = re.compile(r"^budget-(\d+)\.json$")


@dataclass
class VerificationReport:
    """What was checked and everything that did not match (empty ``mismatches`` means passed)."""

    slug: str
    passed: bool
    summaries: int
    cases_checked: int
    cases_rerun: int
    mismatches: list[str]
    seed: int
    sample: int
    device: str
    halbench_version: str = __version__
    files: dict[str, str] = field(default_factory=dict)

    def as_record(self) -> dict:
        return asdict(self)


@dataclass
class _Tally:
    summaries: int = 0
    checked: int = 0
    rerun: int = 0
    mismatches: list[str] = field(default_factory=list)


def results_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder/results``, by path relative to it."""
    root = Path(folder) / RESULTS_DIR
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file()}


def verification_status(folder: Path) -> str:
    """ "verified", "failed" (verification ran and failed) or "unverified" (none, or results changed since)."""
    try:
        report = json.loads((Path(folder) / REPORT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "unverified"
    if not isinstance(report, dict) or report.get("files") != results_hashes(folder):
        return "unverified"
    return "verified" if report.get("passed") is True else "failed"


def verify_submission(sub: Submission, sample: int = 8, seed: int = 0, device: str = "auto") -> VerificationReport:
    """Check every stored summary of ``sub`` and write ``verification.json``; see the module docstring."""
    activate(sub)
    files = results_hashes(sub.folder)
    tally, bundles = _Tally(), _Bundles(device)
    summaries = sorted(sub.results.glob(f"*/{sub.slug}/budget-*.json"))
    tally.mismatches += _unexpected_files(sub, files, summaries)
    if not summaries:
        tally.mismatches.append(f"{sub.results}: no results for {sub.slug}; run `halbench submit` first")
    for path in summaries:
        tally.summaries += 1
        _check_summary(sub, path, tally, bundles, sample, seed)
    report = VerificationReport(
        sub.slug,
        not tally.mismatches,
        tally.summaries,
        tally.checked,
        tally.rerun,
        tally.mismatches,
        seed,
        sample,
        device,
        files=files,
    )
    atomic_write_json(sub.folder / REPORT_FILE, report.as_record())
    return report


class _Bundles:
    """Task bundles loaded on first use, once per task (loading a model is the slow part)."""

    def __init__(self, device: str):
        self.device = device
        self._loaded: dict[str, tuple[TaskBundle, MetricMemo]] = {}

    def get(self, task: str) -> tuple[TaskBundle, MetricMemo]:
        if task not in self._loaded:
            self._loaded[task] = (load_bundle(resolve(task).artifacts, device=self.device), MetricMemo())
        return self._loaded[task]


def _unexpected_files(sub: Submission, files: dict[str, str], summaries: list[Path]) -> list[str]:
    """Every results file must be a summary of this submission or the per-case records behind one."""
    expected = set()
    for path in summaries:
        rel = path.relative_to(sub.results)
        expected |= {rel.as_posix(), rel.with_suffix(".cases.jsonl").as_posix()}
    return [f"{sub.results / name}: not part of {sub.slug}'s results layout" for name in files if name not in expected]


def _check_summary(sub: Submission, path: Path, tally: _Tally, bundles: _Bundles, sample: int, seed: int) -> None:
    task, label = path.parent.parent.name, f"{path.parent.parent.name} @{path.stem.removeprefix('budget-')}"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        budget = int(SUMMARY_NAME.match(path.name).group(1))
        records = _read_records(path.with_suffix(".cases.jsonl"))
        ref = resolve(task)
        cases = read_cases(ref.artifacts / CASES)
        problems = _provenance_problems(sub, summary, task, budget, ref.manifest()["content_hash"])
    except (OSError, ValueError, KeyError, AttributeError, UnknownTaskError, ManifestError) as exc:
        tally.mismatches.append(f"{label}: unreadable results: {type(exc).__name__}: {exc}")
        return
    if problems:
        tally.mismatches += [f"{label}: {p}" for p in problems]
        return
    wanted = [c for c in cases if c["split"] == summary["split"]][: summary["limit"]]
    wanted_ids = {c["id"] for c in wanted}
    records = [r for r in records if r.get("id") in wanted_ids]
    tally.checked += len(records)
    tally.mismatches += [f"{label}: {p}" for p in _aggregate_problems(summary, records)]
    by_id = {c["id"]: c for c in wanted}
    for record in _sample(records, sample, seed, task, budget):
        tally.rerun += 1
        tally.mismatches += [f"{label}: {p}" for p in _rerun_problems(sub, summary, record, by_id, bundles)]


def _read_records(path: Path) -> list[dict]:
    """Per-case records, read-only (unlike :func:`read_done`, a torn line here is an error, not repaired)."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name} line {number} is not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise ValueError(f"{path.name} line {number} is not a case record")
        records.append(record)
    ids = [r["id"] for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path.name} records a case more than once")
    return records


def _provenance_problems(sub: Submission, summary: dict, task: str, budget: int, task_hash: str) -> list[str]:
    expected = {"task": task, "method": sub.slug, "budget": budget, "task_hash": task_hash}
    out = [
        f"summary {key} is {summary.get(key)!r}, expected {value!r}"
        + (" (results were made on another version of the task)" if key == "task_hash" else "")
        for key, value in expected.items()
        if summary.get(key) != value
    ]
    kinds = {"split": str, "params": dict, "seed": int, "refills": int, "limit": int | None}
    for key, kind in kinds.items():
        if key not in summary:
            out.append(f"summary has no {key}")
        elif not isinstance(summary[key], kind) or isinstance(summary[key], bool):
            out.append(f"summary {key} {summary[key]!r} is not a valid {key}")
    return out


def _aggregate_problems(summary: dict, records: list[dict]) -> list[str]:
    """The summary must be exactly what :func:`aggregate` makes of its own per-case records."""
    try:
        fresh = aggregate(records, summary["seed"])
    except (KeyError, TypeError, ValueError) as exc:
        return [f"per-case records cannot be aggregated: {type(exc).__name__}: {exc}"]
    out = []
    for key in AGGREGATE_KEYS:
        if key == "metrics":
            continue
        if summary.get(key) != fresh[key]:
            out.append(f"summary {key} is {summary.get(key)!r} but the per-case records give {fresh[key]!r}")
    stored = summary.get("metrics") or {}
    for name in sorted(set(stored) | set(fresh["metrics"])):
        if stored.get(name) != fresh["metrics"].get(name):
            out.append(
                f"summary metric {name} is {stored.get(name)!r} but the per-case records give "
                f"{fresh['metrics'].get(name)!r}"
            )
    return out


def _sample(records: list[dict], sample: int, seed: int, task: str, budget: int) -> list[dict]:
    """A seeded sample of records, different per task and budget, in file order."""
    rng = np.random.default_rng([seed, zlib.crc32(task.encode()), budget])
    chosen = rng.choice(len(records), size=min(sample, len(records)), replace=False)
    return [records[i] for i in sorted(chosen)]


def _rerun_problems(
    sub: Submission, summary: dict, stored: dict, by_id: dict[str, dict], bundles: _Bundles
) -> list[str]:
    case_id = stored["id"]
    try:
        bundle, memo = bundles.get(summary["task"])
        method = sub.method_cls(**summary["params"])
    except Exception as exc:  # reported, so the other summaries are still checked
        return [f"case {case_id}: cannot re-run: {type(exc).__name__}: {exc}"]
    config = EvalConfig(
        sub.slug,
        summary["params"],
        summary["split"],
        summary["limit"],
        summary["budget"],
        summary["seed"],
        summary["refills"],
        out=sub.results,
    )
    fresh = score_case(method, bundle, by_id[case_id], config, memo)
    return [f"case {case_id}: {p}" for p in compare_records(stored, fresh)]


def compare_records(stored: dict, fresh: dict) -> list[str]:
    """Differences between a stored per-case record and its re-run (status, scores, metrics, rows)."""
    out = []
    if stored.get("status") != fresh["status"]:
        out.append(f"status is {stored.get('status')!r} but the re-run gives {fresh['status']!r}")
    if _rows(stored) != fresh["cost"]["rows"]:
        out.append(f"cost.rows is {_rows(stored)!r} but the re-run used {fresh['cost']['rows']}")
    if fresh["status"] != "ok" or stored.get("status") != "ok":
        return out
    out += _score_problems(stored.get("scores"), fresh["scores"])
    stored_metrics = stored.get("metrics") if isinstance(stored.get("metrics"), dict) else {}
    for name in sorted(set(stored_metrics) | set(fresh["metrics"])):
        a, b = stored_metrics.get(name), fresh["metrics"].get(name)
        if not _close(a, b, METRIC_TOL):
            out.append(f"metric {name} is {a!r} but the re-run gives {b!r}")
    return out


def _rows(record: dict) -> object:
    cost = record.get("cost")
    return cost.get("rows") if isinstance(cost, dict) else None


def _score_problems(stored: object, fresh: list[float]) -> list[str]:
    if not isinstance(stored, list) or len(stored) != len(fresh):
        return [f"scores have {len(stored) if isinstance(stored, list) else 'no'} values, the re-run {len(fresh)}"]
    worst = max(
        (abs(a - b) if _number(a) else math.inf for a, b in zip(stored, fresh, strict=True)),
        default=0.0,
    )
    return [] if worst <= SCORE_TOL else [f"scores differ from the re-run by up to {worst:.3g}"]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _close(a: object, b: object, tol: float) -> bool:
    if not (_number(a) and _number(b)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol
