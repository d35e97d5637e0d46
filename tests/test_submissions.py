"""Outside submissions: strict specs, safe loading of method.py, submit and verify end to end, tampering caught."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from halbench.case import PublicCase
from halbench.methods import base
from halbench.methods.base import registered
from halbench.submissions import (
    SubmissionError,
    discover_submissions,
    load_submission,
    run_submission,
    validate_slug,
    verification_status,
    verify_submission,
)
from halbench.tasks.registry import REPO_ROOT

from .conftest import BUILT, invoke

EXAMPLE = REPO_ROOT / "submissions" / "occlusion-pairs"
SKIP_OUTPUTS = shutil.ignore_patterns("results", "verification.json", "__pycache__")
SUBMIT_ARGS = ("--task", "single", "--limit", "3", "--budget", "64", "--device", "cpu", "--no-progress")
needs_single = pytest.mark.skipif("single" not in BUILT, reason="single not built")

METHOD_HEAD = """
from typing import ClassVar
import numpy as np
from halbench.methods.base import Attribution, Method
"""


@pytest.fixture(scope="module", autouse=True)
def _unregister_submissions():
    """Leave the method registry as other test modules expect it: built-ins only."""
    yield
    for name, cls in list(base._REGISTRY.items()):
        if cls.__module__.startswith("halbench_submission_"):
            del base._REGISTRY[name]


def method_class(cls: str, name: str, body: str = "return Attribution(np.zeros(case.length))") -> str:
    return f"""
class {cls}(Method):
    name = {name!r}
    description = "a test method"
    kind = "baseline"
    defaults: ClassVar[dict] = {{}}

    def attribute(self, case, scorer, rng):
        {body}
"""


def copy_example(dest: Path, name: str = "occlusion-pairs") -> Path:
    return Path(shutil.copytree(EXAMPLE, dest / name, ignore=SKIP_OUTPUTS))


def write_submission(folder: Path, method_py: str, **spec_changes) -> Path:
    """A submission folder with the example's spec (changed by ``spec_changes``) and the given method.py."""
    spec = yaml.safe_load((EXAMPLE / "submission.yaml").read_text())
    spec.update({"hyperparameters": {}, **spec_changes})
    folder.mkdir(parents=True)
    (folder / "submission.yaml").write_text(yaml.safe_dump(spec))
    (folder / "method.py").write_text(textwrap.dedent(method_py))
    return folder


def error_of(folder: Path) -> str:
    with pytest.raises(SubmissionError) as info:
        load_submission(folder)
    return str(info.value)


# -- submission.yaml ---------------------------------------------------------------------------------------------


def edit_spec(folder: Path, change) -> Path:
    path = folder / "submission.yaml"
    spec = yaml.safe_load(path.read_text())
    change(spec)
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s.pop("licence"), "licence: required field is missing"),
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


# -- method.py ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slug", "source", "expected"),
    [
        ("broken", "def broken(:\n    pass\n", "method.py: line 1: SyntaxError"),
        ("raises", METHOD_HEAD + "\n\nraise RuntimeError('no model here')\n", "line 7: RuntimeError: no model here"),
        ("empty", METHOD_HEAD + "X = Method\n", "defines no Method subclass with a `name`"),
        ("two", METHOD_HEAD + method_class("A", "two") + method_class("B", "two-b"), "defines 2 Method subclasses"),
        ("mine", METHOD_HEAD + method_class("A", "other"), "name: 'other' must equal the folder name 'mine'"),
        ("mine", METHOD_HEAD + method_class("A", "occlusion"), "'occlusion' is already registered"),
        ("occlusion", METHOD_HEAD + method_class("A", "occlusion"), "'occlusion' is the name of a built-in method"),
        ("badkind", METHOD_HEAD + method_class("A", "badkind").replace('"baseline"', '"magic"'), "kind must be"),
    ],
)
def test_method_problems_are_one_clear_error(tmp_path, slug, source, expected):
    folder = write_submission(tmp_path / slug, source)
    message = error_of(folder)
    assert expected in message and str(folder) in message, message
    assert slug not in registered() or slug == "occlusion"  # a rejected method leaves no registration behind


def test_imported_method_classes_are_ignored(tmp_path):
    source = METHOD_HEAD + "from halbench.methods.occlusion import Occlusion\n" + method_class("Mine", "mine")
    sub = load_submission(write_submission(tmp_path / "mine", source))
    assert sub.method_cls.__name__ == "Mine" and registered()["occlusion"].__name__ == "Occlusion"


def test_spec_hyperparameters_must_be_method_defaults(tmp_path):
    folder = copy_example(tmp_path)
    edit_spec(folder, lambda s: s.update(hyperparameters={"top_pairs": 4, "nope": 1}))
    assert f"{folder / 'submission.yaml'}: hyperparameters.nope: not a hyper-parameter" in error_of(folder)


def test_loading_twice_and_from_two_copies_works(tmp_path):
    first = load_submission(copy_example(tmp_path / "a"))
    again = load_submission(first.folder)
    other = load_submission(copy_example(tmp_path / "b"))
    assert first.method_cls is not again.method_cls and other.folder != first.folder
    assert registered()["occlusion-pairs"] is other.method_cls
    assert first.method_cls.defaults == {"replacement": None, "top_pairs": 8}


def test_discover_keeps_going_past_bad_folders(tmp_path):
    copy_example(tmp_path)
    write_submission(tmp_path / "broken", "def broken(:\n")
    write_submission(tmp_path / "Bad-Slug", METHOD_HEAD + method_class("A", "Bad-Slug"))
    (tmp_path / "not-a-submission").mkdir()
    good, errors = discover_submissions(tmp_path)
    assert [s.slug for s in good] == ["occlusion-pairs"]
    assert len(errors) == 2 and any("SyntaxError" in e for e in errors) and any("slug" in e for e in errors)


# -- submit and verify -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def submitted(tmp_path_factory) -> Path:
    """The example, submitted once on three cases of ``single`` at budget 64 (copied by tests that tamper)."""
    folder = copy_example(tmp_path_factory.mktemp("submitted"))
    result = invoke("submit", str(folder), *SUBMIT_ARGS)
    assert result.exit_code == 0, result.output
    assert "occlusion-pairs" in result.output and f"results: {folder / 'results'}" in result.output
    return folder


@pytest.fixture
def verified(submitted, tmp_path) -> Path:
    """A private, freshly verified copy of the submitted example."""
    folder = Path(shutil.copytree(submitted, tmp_path / "occlusion-pairs"))
    result = invoke("verify", str(folder), "--device", "cpu")
    assert result.exit_code == 0, result.output
    return folder


def results_of(folder: Path) -> tuple[Path, Path]:
    stem = folder / "results" / "single" / "occlusion-pairs" / "budget-64"
    return stem.with_suffix(".cases.jsonl"), stem.with_suffix(".json")


@needs_single
def test_submit_writes_the_results_layout(submitted):
    cases_path, summary_path = results_of(submitted)
    records = [json.loads(line) for line in cases_path.read_text().splitlines()]
    summary = json.loads(summary_path.read_text())
    assert [r["id"] for r in records] == ["single-0000", "single-0001", "single-0002"]
    assert all(r["status"] == "ok" and r["cost"]["rows"] <= 64 for r in records)
    assert summary["cases"] == 3 and summary["method"] == "occlusion-pairs" and summary["budget"] == 64
    assert summary["params"] == {"replacement": None, "top_pairs": 8} and summary["task_hash"]
    assert sorted(p.name for p in (submitted / "results").rglob("*") if p.is_file()) == [
        "budget-64.cases.jsonl",
        "budget-64.json",
    ]


@needs_single
def test_verify_passes_on_untouched_results(verified):
    report = json.loads((verified / "verification.json").read_text())
    assert report["passed"] and report["mismatches"] == [] and report["cases_rerun"] == 3
    assert set(report["files"]) == {
        "single/occlusion-pairs/budget-64.cases.jsonl",
        "single/occlusion-pairs/budget-64.json",
    }
    assert report["halbench_version"] and report["sample"] == 8 and report["seed"] == 0
    assert verification_status(verified) == "verified"


@needs_single
def test_a_tampered_case_metric_fails_verification(submitted, tmp_path):
    folder = Path(shutil.copytree(submitted, tmp_path / "occlusion-pairs"))
    cases_path, _ = results_of(folder)
    records = [json.loads(line) for line in cases_path.read_text().splitlines()]
    for record in records:  # every line, so whatever is sampled is tampered
        record["metrics"]["average_precision"] = 1.0 - record["metrics"]["average_precision"] + 0.25
    cases_path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    result = invoke("verify", str(folder), "--device", "cpu")
    assert result.exit_code == 1, result.output
    assert "case single-0000: metric average_precision is 0.25 but the re-run gives 1.0" in result.output
    assert "FAILED" in result.output and verification_status(folder) == "failed"


@needs_single
def test_a_tampered_summary_fails_verification(submitted, tmp_path):
    folder = Path(shutil.copytree(submitted, tmp_path / "occlusion-pairs"))
    _, summary_path = results_of(folder)
    summary = json.loads(summary_path.read_text())
    summary["metrics"]["hit_at_k"]["mean"] = 0.999
    summary_path.write_text(json.dumps(summary))
    report = verify_submission(load_submission(folder), device="cpu")
    assert not report.passed and verification_status(folder) == "failed"
    assert any("summary metric hit_at_k is" in m and "single @64" in m for m in report.mismatches), report.mismatches


@needs_single
def test_a_stale_task_hash_fails_verification(submitted, tmp_path):
    folder = Path(shutil.copytree(submitted, tmp_path / "occlusion-pairs"))
    _, summary_path = results_of(folder)
    summary_path.write_text(json.dumps({**json.loads(summary_path.read_text()), "task_hash": "0" * 64}))
    report = verify_submission(load_submission(folder), device="cpu")
    assert not report.passed and "another version of the task" in report.mismatches[0]


@needs_single
@pytest.mark.parametrize("change", ["edit", "add", "remove"])
def test_changing_results_after_verification_makes_them_unverified(verified, change):
    cases_path, summary_path = results_of(verified)
    if change == "edit":
        summary_path.write_text(summary_path.read_text() + "\n")
    elif change == "add":
        (cases_path.parent / "notes.txt").write_text("hi")
    else:
        cases_path.unlink()
    assert verification_status(verified) == "unverified"


def test_no_verification_is_unverified(tmp_path):
    assert verification_status(copy_example(tmp_path)) == "unverified"


def test_verify_by_slug_and_invalid_submissions_are_clear_errors(tmp_path):
    missing = invoke("verify", "no-such-submission")
    assert missing.exit_code == 1 and "no submission folder" in missing.output
    folder = write_submission(tmp_path / "broken", "def broken(:\n")
    result = invoke("submit", str(folder), *SUBMIT_ARGS)
    assert result.exit_code == 1 and "SyntaxError" in result.output and "Traceback" not in result.output


PROBE = (
    METHOD_HEAD
    + """
from halbench.case import PublicCase


class Probe(Method):
    '''Records what it is handed; raises on one case and returns NaN on another.'''

    name = "probe"
    description = "records its inputs and misbehaves on chosen cases"
    kind = "baseline"
    defaults: ClassVar[dict] = {"explode": None, "nan": None}
    seen: ClassVar[list] = []

    def attribute(self, case, scorer, rng):
        Probe.seen.append((type(case), hasattr(case, "causes"), type(scorer.case), hasattr(scorer.case, "causes")))
        if case.id == self.params["explode"]:
            raise RuntimeError("boom")
        if case.id == self.params["nan"]:
            return Attribution(np.full(case.length, np.nan))
        scores = np.zeros(case.length)
        scores[list(case.editable)] = rng.random(len(case.editable))
        return Attribution(scores)
"""
)


@needs_single
def test_misbehaving_method_fails_only_its_cases_and_sees_only_public_cases(tmp_path):
    hyper = {"explode": "single-0001", "nan": "single-0002"}
    sub = load_submission(write_submission(tmp_path / "probe", PROBE, hyperparameters=hyper))
    [summary] = run_submission(sub, tasks=["single"], budgets=[64], limit=4, device="cpu", progress=False)
    assert summary["ok"] == 2 and summary["failed"] == 2
    assert "RuntimeError: boom" in summary["failures"]["single-0001"]
    assert "NaN" in summary["failures"]["single-0002"]
    assert sub.method_cls.seen == [(PublicCase, False, PublicCase, False)] * 4
    report = verify_submission(sub, sample=4, device="cpu")  # failed cases re-run to the same failure
    assert report.passed and report.cases_rerun == 4, report.mismatches


@needs_single
def test_resuming_under_other_parameters_is_refused(submitted, tmp_path):
    folder = Path(shutil.copytree(submitted, tmp_path / "occlusion-pairs"))
    edit_spec(folder, lambda s: s.update(hyperparameters={"top_pairs": 3}))
    result = invoke("submit", str(folder), *SUBMIT_ARGS)
    assert result.exit_code == 1 and "params: differ from this run" in result.output, result.output
