"""Verifying a submission: provenance, aggregates, every metric recomputed, and an unpredictable re-run sample.

Results are produced on the submitter's machine, so nothing in them is taken on trust:

1. every summary must name the current task instance (its content hash) and the declared settings;
2. its per-case file must be intact, cover the whole split, and aggregate to exactly the summary;
3. every record's metrics are recomputed here from its stored scores (localization exactly; the
   model-based ones with the model, under the tolerances in :data:`TOLERANCES`);
4. a sample of records drawn from fresh entropy at verification time (recorded in the report) is
   re-run in the sandbox and must reproduce scores, rows and metrics. ``SAMPLE`` records catch a
   submission whose records are 5% fabricated with probability at least 99% (1 - 0.95^90 > 0.99).

The report is the verifier's own record, written outside the submission (``build/verify/<slug>.json``,
and with ``--record`` into ``verifications/<slug>.json``, which maintainers commit); a file the
submitter ships is never evidence. It holds the sha256 of every results file, so any later change to
the results turns the status back to "unverified". A failing verification never overwrites a record.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from halbench import __version__
from halbench.atomic import atomic_write_json, sha256_file
from halbench.metrics import localization_metrics
from halbench.metrics.faithfulness import case_draws, faithfulness_metrics
from halbench.records import LOCK_FILE, RecordError, read_records
from halbench.results import SUMMARY
from halbench.runner import EvalConfig, aggregate, score_case
from halbench.submissions.loader import RESULTS_DIR, Submission
from halbench.tasks.artifacts import ManifestError
from halbench.tasks.bundle import TaskBundle, load_bundle, verify_instance
from halbench.tasks.registry import REPO_ROOT, UnknownTaskError, resolve_instances

SAMPLE = 90
RECORDS_DIR = REPO_ROOT / "verifications"
SCRATCH_DIR = Path("build") / "verify"
ALLOWED_SUFFIXES = (".json", ".cases.jsonl", ".config.json", ".timing.jsonl")

# What cannot be bit-identical across machines, and how far it may move. On one machine a re-run is
# bit-identical (fixed-shape batches, power-of-two threads), so these only absorb differences between
# CPUs, BLAS builds and devices: the last bits of a float reduction, and a greedy answer that flips on
# a near-tie of two logits.
TOLERANCES = {
    "scores": 1e-4,  # relative, per position, when a sampled case is re-run
    "localization": 0.0,  # AP, AUROC, P@k, Hit@k recomputed from the stored scores: exact
    "probability": 1e-5,  # p_rep@*, comprehensiveness: absolute
    "rate": "1/refills",  # s_rep@*, s_rep_lm@*: one refill's greedy answer may flip on a near-tie
    "rows": 0,  # rows spent: exact
}
LOCALIZATION = ("average_precision", "auroc", "precision_at_k", "hit_at_k")


@dataclass
class VerificationReport:
    slug: str
    passed: bool
    summaries: int
    records: int
    rerun: int
    mismatches: list[str]
    entropy: int
    sample: list[str]
    device: str
    seconds: float
    halbench_version: str = __version__
    tolerances: dict = field(default_factory=lambda: dict(TOLERANCES))
    files: dict[str, str] = field(default_factory=dict)

    def as_record(self) -> dict:
        return asdict(self)


def results_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder/results`` but the sweep's lock file, by path relative to it."""
    root = Path(folder) / RESULTS_DIR
    if not root.is_dir():
        return {}
    files = (p for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).as_posix() != LOCK_FILE)
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in files}


def verification_status(sub: Submission, records_dir: Path = RECORDS_DIR) -> str:
    """ "verified", "failed" or "unverified" (no record, or results changed since it was made)."""
    try:
        report = json.loads((Path(records_dir) / f"{sub.slug}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "unverified"
    if not isinstance(report, dict) or report.get("files") != results_hashes(sub.folder):
        return "unverified"
    return "verified" if report.get("passed") is True else "failed"


@dataclass
class _Checked:
    """One summary with its records, ready for recomputation."""

    label: str
    summary: dict
    records: list[dict]
    bundle_name: str


def verify_submission(
    sub: Submission,
    device: str = "auto",
    trust: bool = False,
    sample: int = SAMPLE,
    entropy: int | None = None,
) -> VerificationReport:
    """Check every stored summary of ``sub`` (see the module docstring); the caller decides where the report goes."""
    started = time.perf_counter()
    entropy = secrets.randbits(63) if entropy is None else entropy
    files = results_hashes(sub.folder)
    mismatches = _layout_problems(sub, files)
    checked, bundles = [], _Bundles(device)
    for path in sorted(sub.results.glob(f"*/*/{sub.slug}/budget-*.json")):
        if not SUMMARY.match(path.name):  # budget-<B>.config.json is the sweep's resume key, not a summary
            continue
        item = _read(sub, path, mismatches)
        if item is not None:
            checked.append(item)
    if not checked:
        mismatches.append(f"{sub.results}: no complete results for {sub.slug}; run `halbench submit` first")
    for item in checked:
        mismatches += _recompute(item, bundles)
    picks = _draw(checked, sample, entropy)
    from halbench.isolation.method import IsolatedMethod

    method = IsolatedMethod(sub.folder, dict(sub.spec.hyperparameters), trust=trust)
    try:
        for item, record in picks:
            mismatches += _rerun(method, item, record, bundles)
    finally:
        method.close()
    return VerificationReport(
        sub.slug,
        not mismatches,
        len(checked),
        sum(len(i.records) for i in checked),
        len(picks),
        mismatches,
        entropy,
        [f"{i.label}:{r['id']}" for i, r in picks],
        device,
        round(time.perf_counter() - started, 1),
        files=files,
    )


def write_report(report: VerificationReport, record: bool, records_dir: Path = RECORDS_DIR) -> list[Path]:
    """Always to ``build/verify/``; with ``record`` and only when passed, also the committed record."""
    written = [SCRATCH_DIR / f"{report.slug}.json"]
    atomic_write_json(written[0], report.as_record())
    if record and report.passed:
        target = Path(records_dir) / f"{report.slug}.json"
        atomic_write_json(target, report.as_record())
        written.append(target)
    return written


class _Bundles:
    """Instances loaded on first use, once each (loading a model is the slow part)."""

    def __init__(self, device: str):
        self.device = device
        self._loaded: dict[str, TaskBundle] = {}
        self.memo: dict[tuple, dict] = {}  # metric rows per (instance, case, seed, refills), shared across budgets

    def get(self, name: str) -> TaskBundle:
        if name not in self._loaded:
            self._loaded[name] = load_bundle(resolve_instances(name)[0], self.device)
        return self._loaded[name]


def _layout_problems(sub: Submission, files: dict[str, str]) -> list[str]:
    out = []
    for name in files:
        parts = name.split("/")
        if (
            len(parts) != 4
            or parts[2] != sub.slug
            or not parts[3].startswith("budget-")
            or not parts[3].endswith(ALLOWED_SUFFIXES)
        ):
            out.append(f"{sub.results / name}: not part of {sub.slug}'s results layout")
    return out


def _read(sub: Submission, path: Path, mismatches: list[str]) -> _Checked | None:
    task, model = path.parent.parent.parent.name, path.parent.parent.name
    label = f"{task}/{model} @{path.stem.removeprefix('budget-')}"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        records, _ = read_records(path.with_name(path.name.replace(".json", ".cases.jsonl")), repair=False)
        instance = resolve_instances(f"{task}/{model}")[0]
        manifest, _ = verify_instance(instance)
    except (OSError, ValueError, RecordError, ManifestError, UnknownTaskError) as exc:
        mismatches.append(f"{label}: unreadable results: {exc}")
        return None
    problems = _provenance(sub, summary, task, model, path, manifest["content_hash"])
    from halbench.tasks.artifacts import CASES, read_cases

    wanted = [r["id"] for r in read_cases(instance.folder / CASES) if r["split"] == summary.get("split")]
    have = [r["id"] for r in records]
    if summary.get("limit") is not None or sorted(have) != sorted(wanted):
        problems.append(f"records cover {len(set(have) & set(wanted))} of the split's {len(wanted)} cases")
    if problems:
        mismatches += [f"{label}: {p}" for p in problems]
        return None
    mismatches += [f"{label}: {p}" for p in _aggregate_problems(summary, records)]
    return _Checked(label, summary, records, instance.name)


def _provenance(sub: Submission, summary: dict, task: str, model: str, path: Path, task_hash: str) -> list[str]:
    budget = int(path.stem.removeprefix("budget-"))
    expected = {"task": task, "model": model, "method": sub.slug, "budget": budget, "task_hash": task_hash}
    out = [
        f"summary {key} is {summary.get(key)!r}, expected {value!r}"
        + (" (made on another version of the task)" if key == "task_hash" else "")
        for key, value in expected.items()
        if summary.get(key) != value
    ]
    declared = dict(sub.spec.hyperparameters)
    if {k: summary.get("params", {}).get(k) for k in declared} != declared:
        out.append(f"summary params {summary.get('params')!r} differ from the declared {declared!r}")
    for key, kind in (("split", str), ("seed", int), ("refills", int)):
        if not isinstance(summary.get(key), kind) or isinstance(summary.get(key), bool):
            out.append(f"summary {key} {summary.get(key)!r} is not valid")
    return out


def _aggregate_problems(summary: dict, records: list[dict]) -> list[str]:
    """The summary must be exactly what :func:`aggregate` makes of its own per-case records."""
    try:
        fresh = aggregate(records, summary["seed"])
    except (KeyError, TypeError, ValueError) as exc:
        return [f"per-case records cannot be aggregated: {type(exc).__name__}: {exc}"]
    out = []
    for key in ("cases", "ok", "failed", "failures", "metrics"):
        if summary.get(key) != fresh[key]:
            out.append(f"summary {key} does not follow from its per-case records")
    for key in ("forward_rows", "backward_rows", "rows"):
        if (summary.get("cost") or {}).get(key) != fresh["cost"][key]:
            out.append(f"summary cost.{key} does not follow from its per-case records")
    return out


def _recompute(item: _Checked, bundles: _Bundles) -> list[str]:
    """Every ok record's metrics from its stored scores: localization exactly, the rest with the model."""
    try:
        bundle = bundles.get(item.bundle_name)
    except (ManifestError, UnknownTaskError, OSError) as exc:
        return [f"{item.label}: cannot load the task: {exc}"]
    by_id = {r["id"]: r for r in bundle.records}
    refills, seed = int(item.summary["refills"]), int(item.summary["seed"])
    lm_refills = int(item.summary.get("lm_refills") or 0)
    out = []
    for record in item.records:
        if record.get("status") != "ok":
            continue
        try:
            scores = np.asarray(record["scores"], dtype=np.float64)
            case = by_id[record["id"]]
            fresh = localization_metrics(scores, case["causes"], case["editable"])
            evaluator = bundle.scorer(case, budget=None)
            memo = bundles.memo.setdefault((item.bundle_name, record["id"], seed, refills, lm_refills), {})
            if "draws" not in memo:
                memo["draws"] = case_draws(evaluator, refills, seed, lm_refills)
            fresh.update(faithfulness_metrics(scores, evaluator, memo["draws"], memo))
        except Exception as exc:  # a malformed record is a mismatch, not a crash of the verifier
            out.append(f"{item.label}: case {record.get('id')}: cannot recompute: {type(exc).__name__}: {exc}")
            continue
        out += [
            f"{item.label}: case {record['id']}: {p}" for p in metric_problems(record.get("metrics"), fresh, refills)
        ]
    return out


def metric_problems(stored: object, fresh: dict[str, float], refills: int) -> list[str]:
    stored = stored if isinstance(stored, dict) else {}
    out = []
    for name in sorted(set(stored) | set(fresh)):
        a, b = stored.get(name), fresh.get(name)
        if not _close(a, b, _tolerance(name, refills)):
            out.append(f"metric {name} is {a!r} but recomputes to {b!r}")
    return out


def _tolerance(metric: str, refills: int) -> float:
    if metric in LOCALIZATION:
        return TOLERANCES["localization"]
    if metric.startswith("s_rep"):
        return 1.0 / refills + 1e-12
    return TOLERANCES["probability"]


def _draw(checked: list[_Checked], sample: int, entropy: int) -> list[tuple[_Checked, dict]]:
    """``sample`` records drawn uniformly over all records from ``entropy`` (unknown before verification)."""
    pool = [(item, record) for item in checked for record in item.records]
    if not pool:
        return []
    rng = np.random.default_rng(entropy)
    picks = rng.choice(len(pool), size=min(sample, len(pool)), replace=False)
    return [pool[i] for i in sorted(picks)]


def _rerun(method, item: _Checked, stored: dict, bundles: _Bundles) -> list[str]:
    s = item.summary
    bundle = bundles.get(item.bundle_name)
    case = next(r for r in bundle.records if r["id"] == stored["id"])
    config = EvalConfig(
        s["method"], s["params"], s["split"], None, s["budget"], s["seed"], s["refills"], int(s.get("lm_refills") or 0)
    )
    fresh, _ = score_case(method, bundle, case, config)
    return [f"{item.label}: case {stored['id']}: {p}" for p in compare_records(stored, fresh, s["refills"])]


def compare_records(stored: dict, fresh: dict, refills: int) -> list[str]:
    """Differences between a stored per-case record and its re-run (status, rows, scores, metrics)."""
    out = []
    if stored.get("status") != fresh["status"]:
        out.append(f"status is {stored.get('status')!r} but the re-run gives {fresh['status']!r}")
    rows = (stored.get("cost") or {}).get("rows")
    if rows != fresh["cost"]["rows"]:
        out.append(f"cost.rows is {rows!r} but the re-run used {fresh['cost']['rows']}")
    if fresh["status"] != "ok" or stored.get("status") != "ok":
        return out
    a, b = stored.get("scores"), fresh["scores"]
    if not isinstance(a, list) or len(a) != len(b):
        return [*out, "scores do not match the re-run's shape"]
    scale = max(1.0, max((abs(x) for x in b), default=1.0))
    worst = max((abs(x - y) if _number(x) else math.inf for x, y in zip(a, b, strict=True)), default=0.0)
    if worst > TOLERANCES["scores"] * scale:
        out.append(f"scores differ from the re-run by up to {worst:.3g}")
    out += metric_problems(stored.get("metrics"), fresh["metrics"], refills)
    return out


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _close(a: object, b: object, tol: float) -> bool:
    if not (_number(a) and _number(b)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return False
    return abs(a - b) <= tol
