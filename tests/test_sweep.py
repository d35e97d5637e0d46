"""Runs that never lose or mix data: resuming, refusing, failing one case at a time, identical records."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from halbench.cli import cli
from halbench.executors import local_executor
from halbench.methods.base import Attribution, Method
from halbench.records import RecordError, result_files
from halbench.sweep import Sweep, make_job, run_sweep
from halbench.tasks.artifacts import CASES, ManifestError

from .tiny import make_tiny_instance

METHODS = ("random", "occlusion", "sat", "saliency")


class ExitingMethod(Method):
    """Calls sys.exit on its second case (a hostile or careless method)."""

    name = "test-exiting"
    description = "exits"
    kind = "baseline"

    def attribute(self, case, scorer, rng):
        if case.id.endswith("0001"):
            raise SystemExit(0)
        return Attribution(np.zeros(case.length))


class InterruptingMethod(Method):
    name = "test-interrupting"
    description = "Ctrl-C on its third case"
    kind = "baseline"

    def attribute(self, case, scorer, rng):
        if case.id.endswith("0002"):
            raise KeyboardInterrupt
        return Attribution(np.arange(case.length, dtype=float))


@pytest.fixture()
def tiny(tmp_path):
    return make_tiny_instance(tmp_path / "tasks", "llama", cases=6, dev=2)


def sweep(instance, out: Path, methods=METHODS, budgets=(16,), **kw) -> list[dict]:
    jobs = [make_job(m, {}, b) for m in methods for b in budgets]
    executor = local_executor(kw.pop("workers", 1))
    return run_sweep(Sweep([instance], jobs, out=out, **kw), executor, progress=False)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_a_resumed_run_continues_and_ends_byte_identical(tiny, tmp_path):
    whole = tmp_path / "whole"
    sweep(tiny, whole)
    part = tmp_path / "part"
    sweep(tiny, part, limit=2)  # a partial run, then the rest
    sweep(tiny, part)
    for method in METHODS:
        a = result_files(whole, tiny.name, method, 16).cases.read_bytes()
        assert a == result_files(part, tiny.name, method, 16).cases.read_bytes()


def test_a_torn_last_line_is_dropped_with_a_note_and_recomputed(tiny, tmp_path):
    out = tmp_path / "out"
    sweep(tiny, out, methods=("random",))
    files = result_files(out, tiny.name, "random", 16)
    good = files.cases.read_bytes()
    files.cases.write_bytes(good[:-40])  # a killed run's half-written last line
    notes = []
    run_sweep(
        Sweep([tiny], [make_job("random", {}, 16)], out=out), local_executor(1), progress=False, echo=notes.append
    )
    assert any("torn last line" in n for n in notes)
    assert files.cases.read_bytes() == good


def test_a_corrupt_record_in_the_middle_is_an_error_with_file_and_line(tiny, tmp_path):
    out = tmp_path / "out"
    sweep(tiny, out, methods=("random",))
    files = result_files(out, tiny.name, "random", 16)
    rows = lines(files.cases)
    rows[2] = rows[2][:20]
    files.cases.write_text("\n".join(rows) + "\n")
    with pytest.raises(RecordError, match=rf"{files.cases.name}:3: corrupt record"):
        sweep(tiny, out, methods=("random",))


def test_a_case_written_twice_is_an_error(tiny, tmp_path):
    out = tmp_path / "out"
    sweep(tiny, out, methods=("random",))
    files = result_files(out, tiny.name, "random", 16)
    rows = lines(files.cases)
    files.cases.write_text("\n".join([*rows, rows[0]]) + "\n")
    with pytest.raises(RecordError, match="already recorded on line 1"):
        sweep(tiny, out, methods=("random",))


@pytest.mark.parametrize("change", [{"seed": 1}, {"refills": 8}])
def test_resuming_under_another_configuration_is_refused(tiny, tmp_path, change):
    out = tmp_path / "out"
    sweep(tiny, out, methods=("occlusion",), limit=2)
    with pytest.raises(RecordError, match="another configuration"):
        sweep(tiny, out, methods=("occlusion",), **change)


def test_resuming_with_other_method_params_is_refused(tiny, tmp_path):
    out = tmp_path / "out"
    run_sweep(Sweep([tiny], [make_job("occlusion", {}, 16)], out=out, limit=2), local_executor(1), progress=False)
    with pytest.raises(RecordError, match="max_draws"):
        run_sweep(
            Sweep([tiny], [make_job("occlusion", {"max_draws": 2}, 16)], out=out), local_executor(1), progress=False
        )


def _hold(out: str, ready, release) -> None:
    from halbench.records import output_lock

    with output_lock(Path(out)):
        ready.set()
        release.wait(30)


def test_two_runs_on_one_output_folder_are_refused(tiny, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path / "out"), ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(RecordError, match="another halbench run is writing here"):
            sweep(tiny, tmp_path / "out", methods=("random",))
    finally:
        release.set()
        holder.join(30)


def test_a_tampered_task_is_refused_before_scoring(tiny, tmp_path):
    path = tiny.folder / CASES
    records = [json.loads(line) for line in lines(path)]
    records[0]["causes"] = [[1]]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ManifestError, match="refusing tampered"):
        sweep(tiny, tmp_path / "out", methods=("random",))


def test_bad_case_data_fails_that_case_only(tmp_path):
    """A cause outside the prompt and a token id beyond the vocabulary, in a freshly built instance."""
    instance = make_tiny_instance(tmp_path / "tasks", "gpt2", cases=4, dev=0)
    path = instance.folder / CASES
    records = [json.loads(line) for line in lines(path)]
    records[0]["causes"] = [[999]]
    records[1]["prompt_ids"][3] = 10**6
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _rehash(instance.folder)
    (summary,) = sweep(instance, tmp_path / "out", methods=("occlusion",))
    assert summary["cases"] == 4 and summary["failed"] == 2
    reasons = " | ".join(summary["failures"].values())
    assert "cause position lies outside" in reasons and "outside the model's vocabulary" in reasons


def _rehash(folder: Path) -> None:
    from halbench.tasks import artifacts

    manifest = artifacts.read_manifest(folder)
    manifest["files"] = artifacts.hashed_files(folder, (CASES,))
    manifest["content_hash"] = artifacts.content_hash(
        manifest["files"], manifest["spec_hash"], manifest["model"]["content_hash"]
    )
    artifacts.write_manifest(folder, manifest)


def test_a_method_that_exits_fails_that_case_and_the_run_goes_on(tiny, tmp_path):
    (summary,) = sweep(tiny, tmp_path / "out", methods=("test-exiting",))
    assert summary["cases"] == 6 and summary["failed"] == 1
    assert "SystemExit" in next(iter(summary["failures"].values()))


def test_ctrl_c_stops_cleanly_and_the_run_resumes(tiny, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        sweep(tiny, out, methods=("test-interrupting",))
    files = result_files(out, tiny.name, "test-interrupting", 16)
    assert len(lines(files.cases)) == 2  # the two finished cases are saved
    # the "interruption" is part of this method, so a resume meets it again; swap in a method that completes
    (summary,) = sweep(tiny, out, methods=("random",))
    assert summary["cases"] == 6


def test_records_do_not_depend_on_worker_count_or_threads(tiny, tmp_path, monkeypatch):
    sweep(tiny, tmp_path / "one")
    monkeypatch.setenv("HALBENCH_THREADS", "1")
    sweep(tiny, tmp_path / "two", workers=2)
    for method in METHODS:
        a = result_files(tmp_path / "one", tiny.name, method, 16).cases.read_bytes()
        assert a == result_files(tmp_path / "two", tiny.name, method, 16).cases.read_bytes()


@pytest.mark.slow
def test_a_ray_sweep_equals_the_local_one_and_resumes(tiny, tmp_path):
    pytest.importorskip("ray")
    from halbench.executors import ray_executor

    jobs = [make_job(m, {}, 16) for m in METHODS]
    run_sweep(Sweep([tiny], jobs, out=tmp_path / "local"), local_executor(1), progress=False)
    ray_out = tmp_path / "ray"
    run_sweep(Sweep([tiny], jobs, out=ray_out, limit=3), ray_executor(workers=2), progress=False)  # "killed" early
    run_sweep(Sweep([tiny], jobs, out=ray_out), ray_executor(workers=2), progress=False)  # resumed
    for method in METHODS:
        a = result_files(tmp_path / "local", tiny.name, method, 16).cases.read_bytes()
        assert a == result_files(ray_out, tiny.name, method, 16).cases.read_bytes()


# -- the command line ---------------------------------------------------------------------------------


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


@pytest.mark.parametrize("args", [["--budget", "0"], ["--budget", "-5"], ["--limit", "-298"]])
def test_invalid_numbers_are_refused_by_the_cli(tiny, args):
    result = invoke("eval", "--method", "random", "--task", str(tiny.folder), *args)
    assert result.exit_code == 2 and "Invalid value" in result.output


def test_a_partial_run_never_writes_into_the_committed_results(tiny):
    from halbench.tasks.registry import REPO_ROOT

    result = invoke(
        "eval", "--method", "random", "--task", str(tiny.folder), "--limit", "2", "--out", str(REPO_ROOT / "results")
    )
    assert result.exit_code == 2 and "never writes into" in result.output


def test_out_pointing_at_a_file_is_one_line(tiny, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    result = invoke("eval", "--method", "random", "--task", str(tiny.folder), "--out", str(target))
    assert result.exit_code == 2 and "is a file" in result.output and "Traceback" not in result.output


def test_a_non_utf8_cases_file_is_one_readable_error(tiny, tmp_path):
    path = tiny.folder / CASES
    path.write_bytes(path.read_bytes().replace(b'"split"', b'"spl\xe9t"', 1))
    _rehash(tiny.folder)
    result = invoke("eval", "--method", "random", "--task", str(tiny.folder), "--out", str(tmp_path / "o"))
    assert result.exit_code == 1 and "not UTF-8" in result.output and "Traceback" not in result.output


def test_eval_cli_end_to_end(tiny, tmp_path):
    out = tmp_path / "o"
    result = invoke("eval", "--method", "random", "--method", "occlusion", "--task", str(tiny.folder), "--budget", "16",
                    "--out", str(out), "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "occlusion" in result.output and str(out) in result.output
    summary = json.loads(result_files(out, tiny.name, "occlusion", 16).summary.read_text())
    assert summary["complete"] and summary["cases"] == 6 and summary["cost"]["rows"] <= 16


def teardown_module() -> None:
    shutil.rmtree(Path("build") / "partial-results" / "tiny", ignore_errors=True)
