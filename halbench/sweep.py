"""A sweep: methods x budgets on task instances, split into units that any executor can run.

The unit of work is (task instance, case shard, the (method, budget) jobs still pending for those
cases): a worker loads the instance once and scores each case with every pending job, sharing the
metric rows. Shards are fixed slices of the split (``SHARD`` cases), so a killed sweep resumes on any
executor with any number of workers. Workers only compute; the driver alone writes, one flushed line
per record, so two workers can never interleave a file, and a completed sweep rewrites each file in
case order, byte-identical whichever executor computed it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from halbench.atomic import atomic_write_json, sha256_file
from halbench.methods.base import Method, get_method, registered
from halbench.records import (
    Appender,
    ResultFiles,
    check_config,
    finalize,
    output_lock,
    read_records,
    read_timings,
    result_files,
    start,
)
from halbench.runner import EvalConfig, MetricMemo, aggregate, score_case
from halbench.tasks.artifacts import CASES, read_cases
from halbench.tasks.bundle import TaskBundle, load_bundle, verify_instance
from halbench.tasks.registry import InstanceRef

SHARD = 8


@dataclass(frozen=True)
class Job:
    """One method with its settings at one budget; ``source`` is a submission folder for untrusted code."""

    method: str
    params: tuple[tuple[str, str], ...]  # (key, JSON value), hashable and picklable
    budget: int
    source: str | None = None

    @property
    def param_dict(self) -> dict:
        return {k: json.loads(v) for k, v in self.params}


def make_job(method: str, params: dict, budget: int, source: str | None = None) -> Job:
    return Job(method, tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in params.items())), budget, source)


@dataclass(frozen=True)
class Unit:
    instance: InstanceRef
    work: tuple[tuple[str, int], ...]  # (case id, index into jobs)
    jobs: tuple[Job, ...]
    split: str
    seed: int
    refills: int
    device: str
    trust: bool = False
    lm_refills: int = 0


@dataclass
class Sweep:
    instances: list[InstanceRef]
    jobs: list[Job]
    split: str = "test"
    limit: int | None = None
    seed: int = 0
    refills: int = 16
    lm_refills: int = 0
    out: Path = Path("results")
    device: str = "auto"
    trust: bool = False
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ workers

_BUNDLES: dict[tuple[str, str], TaskBundle] = {}
_METHODS: dict[tuple, Method] = {}


def _bundle(instance: InstanceRef, device: str) -> TaskBundle:
    key = (str(instance.folder), device)
    if key not in _BUNDLES:
        _BUNDLES.clear()  # one instance at a time per worker: models can be large
        _BUNDLES[key] = load_bundle(instance, device)
    return _BUNDLES[key]


def build_method(job: Job, trust: bool = False) -> Method:
    """The method of ``job``: a built-in in this process, or a submission isolated in its own sandbox."""
    key = (job.method, job.params, job.source, trust)
    if key not in _METHODS:
        if job.source is None:
            _METHODS[key] = get_method(job.method, **job.param_dict)
        else:
            from halbench.isolation.method import IsolatedMethod

            _METHODS[key] = IsolatedMethod(Path(job.source), job.param_dict, trust=trust)
    return _METHODS[key]


_FITTED: dict[tuple, Method] = {}


def prepared(job: Job, bundle: TaskBundle, trust: bool = False) -> Method:
    """The job's method, fitted on the instance's dev split first if it learns from dev (once per instance)."""
    method = build_method(job, trust)
    if not method.uses_dev:
        return method
    key = (job.method, job.params, job.source, trust, bundle.name, bundle.content_hash)
    if key not in _FITTED:
        _FITTED.clear()
        method.fit(bundle.dev_cases(), bundle.vocabulary, bundle.unigram)
        _FITTED[key] = method
    return _FITTED[key]


def iter_unit(unit: Unit) -> Iterator[tuple[int, dict, float]]:
    """Score the unit's cases one at a time: ``(job index, record, seconds)`` per (case, job)."""
    from halbench.runtime import configure_threads

    configure_threads()
    bundle = _bundle(unit.instance, unit.device)
    by_id = {r["id"]: r for r in bundle.records}
    memo = MetricMemo()
    for case_id, j in unit.work:
        job = unit.jobs[j]
        config = EvalConfig(
            job.method, job.param_dict, unit.split, None, job.budget, unit.seed, unit.refills, unit.lm_refills
        )
        record, seconds = score_case(prepared(job, bundle, unit.trust), bundle, by_id[case_id], config, memo)
        yield j, record, seconds


def run_unit(unit: Unit) -> list[tuple[int, dict, float]]:
    """All of a unit's results at once (for executors that ship results back from another process)."""
    return list(iter_unit(unit))


# ------------------------------------------------------------------------------------------------ driver


@dataclass
class _Target:
    """One (instance, job): its files, the cases it wants, and what is done."""

    instance: InstanceRef
    job: Job
    files: ResultFiles
    config: dict
    wanted: list[str]
    done: dict[str, dict]


def _method_info(job: Job) -> tuple[dict, str]:
    """Full settings (defaults filled in) and kind, without running anything untrusted."""
    if job.source is None:
        cls = registered()[job.method]
        return {**cls.defaults, **job.param_dict}, cls.kind
    from halbench.submissions.loader import load_submission

    spec = load_submission(Path(job.source)).spec
    return {**spec.hyperparameters, **job.param_dict}, spec.kind


def plan(sweep: Sweep) -> tuple[list[_Target], list[str]]:
    """Check every instance's hashes, then what each (instance, job) still needs; refuse mismatched records."""
    targets, notes = [], []
    for instance in sweep.instances:
        manifest, _ = verify_instance(instance)
        cases = [r["id"] for r in read_cases(instance.folder / CASES) if r.get("split") == sweep.split]
        wanted = cases[: sweep.limit] if sweep.limit is not None else cases
        for job in sweep.jobs:
            params, kind = _method_info(job)
            files = result_files(sweep.out, instance.name, job.method, job.budget)
            config = {
                "task": instance.task,
                "model": instance.model,
                "task_hash": manifest["content_hash"],
                "method": job.method,
                "kind": kind,
                "params": params,
                "budget": job.budget,
                "seed": sweep.seed,
                "split": sweep.split,
                "refills": sweep.refills,
                "lm_refills": sweep.lm_refills,
            }
            if job.source is not None:  # a submission: fixed code resumes nothing computed by the old code
                config["code_sha256"] = sha256_file(Path(job.source) / "method.py")
            check_config(files, config)
            records, repaired = read_records(files.cases, repair=True)
            notes += repaired
            targets.append(_Target(instance, job, files, config, wanted, {r["id"]: r for r in records}))
    return targets, notes


def units(sweep: Sweep, targets: list[_Target]) -> list[Unit]:
    """Fixed shards of each instance's wanted cases, each with every job still pending for its cases."""
    out = []
    for group in _by_instance(targets).values():
        jobs = tuple(t.job for t in group)
        wanted = group[0].wanted
        for s in range(0, len(wanted), SHARD):
            work = tuple((cid, j) for cid in wanted[s : s + SHARD] for j, t in enumerate(group) if cid not in t.done)
            if work:
                out.append(
                    Unit(group[0].instance, work, jobs, sweep.split, sweep.seed, sweep.refills, sweep.device,
                         sweep.trust, sweep.lm_refills)
                )  # fmt: skip
    return out


def _by_instance(targets: list[_Target]) -> dict[str, list[_Target]]:
    """Targets grouped by instance, in sweep order; a job's index is its position in its group."""
    out: dict[str, list[_Target]] = {}
    for t in targets:
        out.setdefault(t.instance.name, []).append(t)
    return out


Executor = Callable[[list[Unit]], Iterator[list[tuple[int, dict, float]]]]


def run_sweep(
    sweep: Sweep, executor: Executor, progress: bool = True, echo: Callable[[str], None] = print
) -> list[dict]:
    """Run ``sweep`` on ``executor`` (resuming), then write each (instance, job)'s ordered records and summary."""
    with output_lock(sweep.out):
        targets, notes = plan(sweep)
        for note in notes:
            echo(f"note: {note}")
        for t in targets:
            start(t.files, t.config)
        work = units(sweep, targets)
        _execute(work, targets, executor, progress)
        return [_summarise(t, sweep) for t in targets]


def _execute(work: list[Unit], targets: list[_Target], executor: Executor, progress: bool) -> None:
    index = {(name, j): t for name, group in _by_instance(targets).items() for j, t in enumerate(group)}
    appenders = {id(t): Appender(t.files) for t in targets}
    total = sum(len(u.work) for u in work)
    bar = tqdm(total=total, desc="sweep", unit="case", disable=not progress or total == 0)
    try:
        for unit, results in _paired(work, executor):
            for j, record, seconds in results:
                target = index[unit.instance.name, j]
                appenders[id(target)].write(record, seconds)
                target.done[record["id"]] = record
                bar.update(1)
    finally:
        bar.close()
        for appender in appenders.values():
            appender.close()


def _paired(work: list[Unit], executor: Executor) -> Iterable[tuple[Unit, list]]:
    """Each result with its unit (executors return results in completion order, tagged by position)."""
    for position, results in executor(work):
        yield work[position], results


def _summarise(t: _Target, sweep: Sweep) -> dict:
    records = [t.done[cid] for cid in t.wanted if cid in t.done]
    complete = len(records) == len(t.wanted)
    if complete:
        extra = [r for cid, r in t.done.items() if cid not in set(t.wanted)]
        finalize(t.files, records + extra, t.wanted + [r["id"] for r in extra])
    timings = read_timings(t.files.timing)
    summary = {
        **t.config,
        "instance": t.instance.name,
        "limit": sweep.limit,
        "complete": complete,
        "device": sweep.device,
        "versions": _versions(),
        "git_revision": git_revision(),
        **aggregate(records, sweep.seed, {r["id"]: timings.get(r["id"], 0.0) for r in records}),
    }
    atomic_write_json(t.files.summary, summary)
    return summary


def _versions() -> dict:
    from halbench.tasks.artifacts import library_versions

    return library_versions()


def git_revision() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).parent
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None
