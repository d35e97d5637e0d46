"""Outside submissions: strict specs, loading without running code, submit and verify end to end, tampering caught.

The end-to-end tests run the example submission (and a misbehaving one) in the sandbox on two tiny random
instances in a private tasks root: ``short`` (12-token prompts, so the example fits in 16 rows) and ``long``
(24-token prompts: leave-one-out does not fit, so the example occludes blocks). Without bubblewrap they run trusted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from halbench.isolation import sandbox
from halbench.methods.base import registered
from halbench.results import ResultStore
from halbench.submissions import SubmissionError, discover_submissions, load_submission, validate_slug
from halbench.submissions.verify import results_hashes, verification_status, verify_submission, write_report
from halbench.tasks.registry import REPO_ROOT

from .conftest import invoke
from .tiny import make_tiny_instance

EXAMPLE = REPO_ROOT / "submissions" / "occlusion-pairs"
SKIP_OUTPUTS = shutil.ignore_patterns("results", "verification.json", "__pycache__")
TRUST = sandbox.find_bwrap()[0] is None  # without bubblewrap, the same code runs as a trusted subprocess
TRUST_ARGS = ("--trust",) if TRUST else ()
BUDGET = 16
SHORT, LONG = "short/tiny-short", "long/tiny-long"
CASE_FILES = ("budget-16.cases.jsonl", "budget-16.config.json", "budget-16.json", "budget-16.timing.jsonl")


def copy_example(dest: Path, name: str = "occlusion-pairs") -> Path:
    return Path(shutil.copytree(EXAMPLE, dest / name, ignore=SKIP_OUTPUTS))


def write_submission(folder: Path, method_py: str, **spec_changes) -> Path:
    """A submission folder with the example's spec (changed by ``spec_changes``) and the given method.py."""
    spec = yaml.safe_load((EXAMPLE / "submission.yaml").read_text())
    spec.update({"hyperparameters": {}, "kind": "baseline", **spec_changes})
    folder.mkdir(parents=True)
    (folder / "submission.yaml").write_text(yaml.safe_dump(spec))
    (folder / "method.py").write_text(method_py)
    return folder


def edit_spec(folder: Path, change) -> Path:
    path = folder / "submission.yaml"
    spec = yaml.safe_load(path.read_text())
    change(spec)
    path.write_text(yaml.safe_dump(spec))
    return path


def error_of(folder: Path) -> str:
    with pytest.raises(SubmissionError) as info:
        load_submission(folder)
    return str(info.value)


# -- submission.yaml and the folder ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s.pop("licence"), "licence: required field is missing"),
        (lambda s: s.pop("kind"), "kind: required field is missing"),
        (lambda s: s.update(kind="magic"), "kind: Input should be 'baseline'"),
        (lambda s: s.update(homepage="https://x.org"), "homepage: unknown key"),
        (lambda s: s.update(paper="javascript:alert(1)"), "paper: must be an http:// or https:// URL"),
        (lambda s: s.update(code="ftp://example.org/x"), "code: must be an http:// or https:// URL"),
        (lambda s: s.update(licence="MIT License"), "licence: String should match pattern"),
        (lambda s: s.update(authors=[]), "authors: List should have at least 1 item"),
        (lambda s: s.update(authors=["ok", ""]), "authors.1: String should have at least 1 character"),
        (lambda s: s.update(name="two\nlines"), "name: must not contain control characters"),
        (lambda s: s.update(name="x" * 81), "name: String should have at most 80 characters"),
        (lambda s: s.update(name="   "), "name: must not be blank"),
        (lambda s: s.update(description="bell\x07"), "description: must not contain control characters (found U+0007)"),
        (lambda s: s.update(description=""), "description: String should have at least 1 character"),
        (lambda s: s.update(hyperparameters={"top_pairs": {"nested": 1}}), "hyperparameters: top_pairs: each"),
        (lambda s: s.update(hyperparameters={"top_pairs": "8"} | {"x": float("nan")}), "hyperparameters: x: each"),
        (lambda s: s.update(authors="halbench maintainers"), "authors: Input should be a valid list"),
    ],
)
def test_spec_errors_name_the_file_and_field(tmp_path, change, expected):
    path = edit_spec(copy_example(tmp_path), change)
    message = error_of(path.parent)
    assert f"{path}: {expected}" in message, message


def test_every_spec_problem_is_reported_at_once(tmp_path):
    path = edit_spec(copy_example(tmp_path), lambda s: s.update(licence="?", extra=1, paper="nope"))
    lines = error_of(path.parent).splitlines()
    assert len(lines) == 3 and all(line.startswith(f"{path}: ") for line in lines)
    assert {line.split(": ")[1] for line in lines} == {"licence", "extra", "paper"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: [unclosed\n", "(top level): not valid YAML at line"),
        ("- just\n- a list\n", "(top level): expected a mapping of fields, got list"),
        ("", "(top level): expected a mapping of fields, got NoneType"),
    ],
)
def test_unreadable_yaml_is_one_clear_error(tmp_path, text, expected):
    folder = copy_example(tmp_path)
    (folder / "submission.yaml").write_text(text)
    assert f"{folder / 'submission.yaml'}: {expected}" in error_of(folder)


@pytest.mark.parametrize(
    "slug", ["Evil<script>", "a..b", "x/y", "..", ".", "-a", "a-", "A", "", "a_b", "a" * 41, "a\n"]
)
def test_hostile_slugs_are_rejected(slug):
    with pytest.raises(SubmissionError, match="slug"):
        validate_slug(slug)


@pytest.mark.parametrize("slug", ["a", "7", "occlusion-pairs", "a1-b2", "a" * 40])
def test_plain_slugs_pass(slug):
    assert validate_slug(slug) == slug


@pytest.mark.parametrize("folder_name", ["Evil<script>", "a..b", "UPPER"])
def test_a_folder_with_a_hostile_name_does_not_load(tmp_path, folder_name):
    assert "slug" in error_of(copy_example(tmp_path, folder_name))


def test_html_in_the_name_is_kept_verbatim(tmp_path):
    hostile = "<script>alert(1)</script>"
    edit_spec(copy_example(tmp_path), lambda s: s.update(name=hostile, description=f"<b>{hostile}</b>"))
    sub = load_submission(tmp_path / "occlusion-pairs")
    assert sub.spec.name == hostile and sub.spec.description == f"<b>{hostile}</b>"


def test_loading_runs_no_code(tmp_path):
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').close()\nraise SystemExit('imported')\n"
    sub = load_submission(write_submission(tmp_path / "sneaky", source, hyperparameters={"k": 3}))
    again = load_submission(copy_example(tmp_path / "copy"))
    assert sub.slug == "sneaky" and sub.spec.hyperparameters == {"k": 3} and sub.results == sub.folder / "results"
    assert again.spec.kind == "perturbation" and again.spec.hyperparameters == {"top_pairs": 8}
    assert not marker.exists() and "sneaky" not in registered() and "occlusion-pairs" not in registered()


def test_a_builtin_name_or_a_missing_method_file_is_refused(tmp_path):
    folder = write_submission(tmp_path / "occlusion", "")
    assert f"{folder}: slug: 'occlusion' is the name of a built-in method" in error_of(folder)
    method_file = copy_example(tmp_path / "other") / "method.py"
    method_file.unlink()
    assert f"{method_file}: (top level): file not found" in error_of(method_file.parent)


def test_discover_keeps_going_past_bad_folders(tmp_path):
    copy_example(tmp_path)
    write_submission(tmp_path / "broken-code", "def broken(:\n")  # found only when run, in the sandbox
    write_submission(tmp_path / "Bad-Slug", "")
    edit_spec(write_submission(tmp_path / "bad-spec", ""), lambda s: s.update(licence="?"))
    (tmp_path / "not-a-submission").mkdir()
    good, errors = discover_submissions(tmp_path)
    assert [s.slug for s in good] == ["broken-code", "occlusion-pairs"]
    assert len(errors) == 2 and any("slug" in e for e in errors) and any("licence" in e for e in errors)


def test_no_verification_is_unverified(tmp_path):
    assert verification_status(load_submission(copy_example(tmp_path)), tmp_path / "records") == "unverified"


# -- submit and verify, end to end on tiny instances ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tasks_root(tmp_path_factory):
    """A tasks root (``HALBENCH_TASKS``) with ``short`` and ``long``, so the verifier resolves them by name."""
    root = tmp_path_factory.mktemp("tasks")
    for name, length, cases in (("short", 12, 4), ("long", 24, 2)):
        make_tiny_instance(root, "llama", task=name, model_name=f"tiny-{name}", cases=cases, dev=0, length=length)
        (root / name / "task.yaml").write_text(f"name: {name}\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HALBENCH_TASKS", str(root))
        yield root


def submit(folder: Path, root: Path, *instances: str):
    """``halbench submit`` on the given instances (by folder path) at budget 16 on the CPU."""
    tasks = [arg for name in instances for arg in ("--task", str(root / name))]
    return invoke("submit", str(folder), *tasks, "--budget", "16", "--device", "cpu", "--no-progress", *TRUST_ARGS)


def verify(sub, sample: int = 0):
    return verify_submission(sub, device="cpu", trust=TRUST, sample=sample, entropy=7)


@pytest.fixture(scope="module")
def submitted(tasks_root, tmp_path_factory) -> Path:
    """The example, submitted once on both instances (tests that change it work on a copy)."""
    folder = copy_example(tmp_path_factory.mktemp("submitted"))
    result = submit(folder, tasks_root, SHORT, LONG)
    assert result.exit_code == 0, result.output
    assert "occlusion-pairs" in result.output and f"results: {folder / 'results'}" in result.output
    return folder


@pytest.fixture(scope="module")
def recorded(submitted, tmp_path_factory) -> tuple[Path, object]:
    """The committed-style record of a passing verification (re-running every record), in a private folder."""
    records = tmp_path_factory.mktemp("verifications")
    report = verify(load_submission(submitted), sample=6)
    assert report.passed, report.mismatches
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(records.parent)  # its scratch copy goes to build/verify/ under the working directory
        write_report(report, record=True, records_dir=records)
    return records, report


@pytest.fixture(autouse=True)
def _scratch_in_tmp(tmp_path, monkeypatch):
    """The verifier's scratch report (``build/verify/``, relative) goes to the test's folder, not the repository."""
    monkeypatch.chdir(tmp_path)


def copy_of(submitted: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(submitted, tmp_path / "sub" / submitted.name))


def stem(folder: Path, instance: str = SHORT) -> Path:
    """``results/<task>/<model>/<slug>/budget-16`` of a submission (its slug is its folder's name)."""
    return folder / "results" / instance / folder.name / f"budget-{BUDGET}"


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_submit_writes_the_results_layout(submitted, tasks_root):
    files = sorted(p.relative_to(submitted / "results").as_posix() for p in (submitted / "results").rglob("*.*"))
    expected = [f"{i}/occlusion-pairs/{name}" for i in (LONG, SHORT) for name in CASE_FILES]
    assert [f for f in files if not f.startswith(".")] == expected
    store = ResultStore()
    store.add_root(submitted / "results", "occlusion-pairs")
    assert store.problems == [] and store.instances == [LONG, SHORT] and store.budgets == [BUDGET]
    entry = store.get(SHORT, "occlusion-pairs", BUDGET)
    manifest = json.loads((tasks_root / SHORT / "MANIFEST.json").read_text())
    wanted = {"task_hash": manifest["content_hash"], "params": {"top_pairs": 8}, "kind": "perturbation",
              "split": "test", "limit": None, "complete": True, "cases": 4, "ok": 4}  # fmt: skip
    assert {k: entry.summary[k] for k in wanted} == wanted
    assert sorted(entry.records) == [f"short-tiny-short-test-{i:04d}" for i in range(4)]
    assert all(r["status"] == "ok" and len(r["scores"]) == 12 for r in entry.records.values())


def test_the_example_fits_16_rows_on_any_prompt(submitted):
    """Leave-one-out per token (11 rows, +3 pair rows) on 12 tokens; 15 blocks in one row each on 24 tokens."""
    assert {r["cost"]["rows"] for r in read_lines(stem(submitted).with_suffix(".cases.jsonl"))} == {14}
    long = read_lines(stem(submitted, LONG).with_suffix(".cases.jsonl"))
    assert [r["status"] for r in long] == ["ok", "ok"] and {r["cost"]["rows"] for r in long} == {16}


def test_verify_passes_on_untouched_results_and_records_it(submitted, recorded, tmp_path):
    records, report = recorded
    assert (report.summaries, report.records, report.rerun, report.entropy) == (2, 6, 6, 7)
    assert report.files == results_hashes(submitted) and all(".halbench.lock" not in f for f in report.files)
    saved = json.loads((records / "occlusion-pairs.json").read_text())
    assert saved["passed"] and saved["mismatches"] == [] and len(saved["sample"]) == 6
    assert verification_status(load_submission(submitted), records) == "verified"
    result = invoke("verify", str(submitted), "--device", "cpu", "--sample", "0", *TRUST_ARGS)
    assert result.exit_code == 0 and "2 summaries, 6 records recomputed, 0 re-run" in result.output, result.output
    assert (tmp_path / "build" / "verify" / "occlusion-pairs.json").is_file()


def test_a_tampered_case_metric_fails_verification(submitted, tmp_path):
    folder = copy_of(submitted, tmp_path)
    path = stem(folder).with_suffix(".cases.jsonl")
    records = read_lines(path)
    honest = records[1]["metrics"]["average_precision"]
    records[1]["metrics"]["average_precision"] = forged = round(honest + 0.25, 6)
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    result = invoke("verify", str(folder), "--device", "cpu", "--sample", "0", *TRUST_ARGS)
    assert result.exit_code == 1 and "FAILED" in result.output and "Traceback" not in result.output
    line = f"short/tiny-short @16: case short-tiny-short-test-0001: metric average_precision is {forged!r} but "
    assert f"{line}recomputes to {honest!r}" in result.output, result.output


def test_a_tampered_summary_fails_and_never_replaces_the_record(submitted, recorded, tmp_path):
    folder = copy_of(submitted, tmp_path)
    records = Path(shutil.copytree(recorded[0], tmp_path / "records"))
    path = stem(folder).with_suffix(".json")
    summary = json.loads(path.read_text())
    summary["metrics"]["hit_at_k"]["mean"] = 0.999
    path.write_text(json.dumps(summary))
    report = verify(load_submission(folder))
    assert report.mismatches == ["short/tiny-short @16: summary metrics does not follow from its per-case records"]
    before = (records / "occlusion-pairs.json").read_bytes()
    write_report(report, record=True, records_dir=records)
    assert (records / "occlusion-pairs.json").read_bytes() == before
    assert verification_status(load_submission(folder), records) == "unverified"


@pytest.mark.parametrize("change", ["edit", "add", "remove"])
def test_changing_results_after_verification_makes_them_unverified(submitted, recorded, tmp_path, change):
    folder = copy_of(submitted, tmp_path)
    sub, records = load_submission(folder), recorded[0]
    assert verification_status(sub, records) == "verified"  # a copy carries the same files
    summary = stem(folder).with_suffix(".json")
    if change == "edit":
        summary.write_text(summary.read_text() + "\n")
    elif change == "add":
        (summary.parent / "notes.txt").write_text("hi")
    else:
        stem(folder, LONG).with_suffix(".cases.jsonl").unlink()
    assert verification_status(sub, records) == "unverified"


PROBE = """
import numpy as np

from halbench.methods.base import Attribution, Method, masked_scores
from halbench.methods.occlusion import Occlusion  # an imported Method class is not the submission's


class Probe(Method):
    name = "probe"
    description = "raises on one case, returns NaN on another, sees only public cases"
    kind = "baseline"
    defaults = {"explode": None, "nan": None}

    def attribute(self, case, scorer, rng):
        if hasattr(case, "causes") or hasattr(scorer, "model"):
            raise AssertionError("the ground truth or the model leaked")
        if case.id == self.params["explode"]:
            raise RuntimeError("boom")
        if case.id == self.params["nan"]:
            return Attribution(np.full(case.length, np.nan))
        scorer.target_logprob(scorer.prompt[None])
        return Attribution(masked_scores(rng.random(case.length), case))
"""


def test_a_misbehaving_method_fails_only_its_cases(tasks_root, tmp_path):
    ids = [f"short-tiny-short-test-{i:04d}" for i in range(4)]
    folder = write_submission(tmp_path / "probe", PROBE, hyperparameters={"explode": ids[1], "nan": ids[2]})
    result = submit(folder, tasks_root, SHORT)
    assert result.exit_code == 0, result.output
    summary = json.loads(stem(folder).with_suffix(".json").read_text())
    assert (summary["ok"], summary["failed"]) == (2, 2) and set(summary["failures"]) == {ids[1], ids[2]}
    assert summary["failures"][ids[1]] == "RuntimeError: boom"
    assert "NaN" in summary["failures"][ids[2]]
    report = verify(load_submission(folder), sample=4)  # the failed cases re-run to the same failures
    assert report.passed and report.rerun == 4, report.mismatches


def test_resuming_under_other_hyperparameters_is_refused(submitted, tasks_root, tmp_path):
    folder = copy_of(submitted, tmp_path)
    before = results_hashes(folder)
    edit_spec(folder, lambda s: s.update(hyperparameters={"top_pairs": 3}))
    result = submit(folder, tasks_root, SHORT)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "computed under another configuration (params: {'top_pairs': 8} -> {'top_pairs': 3})" in result.output
    assert results_hashes(folder) == before


def test_resuming_after_the_code_changed_is_refused(submitted, tasks_root, tmp_path):
    """Records of the old method.py never count for the new one (the resume key holds the code's sha256)."""
    folder = copy_of(submitted, tmp_path)
    before = results_hashes(folder)
    with (folder / "method.py").open("a") as handle:
        handle.write("\n# a fix\n")
    result = submit(folder, tasks_root, SHORT)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "computed under another configuration (code_sha256:" in result.output
    assert results_hashes(folder) == before


def test_a_missing_slug_or_an_unloadable_method_is_a_clear_error(tasks_root, tmp_path):
    missing = invoke("verify", "no-such-submission")
    assert missing.exit_code == 1 and "no submission folder" in missing.output, missing.output
    assert "Traceback" not in missing.output and "no-such-submission" in missing.output
    folder = write_submission(tmp_path / "broken", "def broken(:\n    pass\n")
    limited = invoke("submit", str(folder), "--task", str(tasks_root / SHORT), "--limit", "2")
    assert limited.exit_code == 2 and "drop --limit" in limited.output
    result = submit(folder, tasks_root, SHORT)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert f"{folder / 'method.py'}: the method could not be loaded: SyntaxError" in result.output
    assert not (folder / "results").exists()  # nothing recorded, so fixing the code and submitting again re-runs
