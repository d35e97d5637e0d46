"""The static leaderboard, end to end: real (tiny) results in a fake repository, built, read as files and in Chromium.

The fake repository is built once per session (:func:`fake_repo`): two tasks on two models (GPT-2
and Llama, random weights), four built-in methods (``random``, the ``dev_lookup`` leak probe,
``occlusion``, ``attention``) at 16 and 64 rows on six test cases per instance, really run by the
sweep. ``attention`` at 64 rows on one instance stops after three cases (an incomplete entry). Two
submissions: ``occ-copy`` (occlusion's results under its own name, with a verifier record: ranked,
and tied with occlusion) and ``hostile-sub`` (hostile text in its declaration, no verifier record:
unverified). Both ship a ``method.py`` that writes a marker file and raises when imported. A result
folder with an unsafe name and a submission folder with an invalid slug are there to be refused.

Every expected number is recomputed here from the per-case files (:func:`expected_headline`), never
copied from the output.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import shutil
import stat
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pytest
import yaml

from halbench.site.build import build_site
from halbench.site.plots import Point, pareto_front

from .browser import headless_chromium
from .conftest import invoke

TASKS = ("alpha", "beta")
MODELS = (("gpt2", "m-gpt2"), ("llama", "m-llama"))
BUILT_IN = ("random", "dev_lookup", "occlusion", "attention")
BUDGETS = (16, 64)
CASES = 6
SHORT = ("beta/m-llama", "attention", 64)  # the incomplete entry: 3 of 6 cases
VERIFIED, HOSTILE = "occ-copy", "hostile-sub"
HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_DESCRIPTION = '<img src=x onerror="alert(2)"> and </p><script>alert(3)</script>'
HOSTILE_PAPER = 'https://example.org/"onmouseover="alert(4)'
UNSAFE = "bad<name>"
MARKER = "IMPORTED"
METHOD_PY = f"""\
import pathlib

pathlib.Path(__file__).with_name({MARKER!r}).write_text("imported")
raise RuntimeError("a submission's code must never be imported by the site or the leaderboard")
"""


# --------------------------------------------------------------------------- the fake repository


def fake_repo(tmp_path_factory) -> Path:
    """The repository described in the module docstring, built once per session (shared with the CLI tests)."""
    repo = tmp_path_factory.getbasetemp() / "site-repo"
    if (repo / "READY").is_file():
        return repo
    shutil.rmtree(repo, ignore_errors=True)
    import torch

    previous, threads = os.environ.get("HALBENCH_THREADS"), torch.get_num_threads()
    os.environ["HALBENCH_THREADS"] = "1"  # two shared cores: one thread is several times faster here
    try:
        _build_repo(repo)
    finally:
        torch.set_num_threads(threads)  # the sweep ran in this process: give other tests their threads back
        if previous is None:
            os.environ.pop("HALBENCH_THREADS", None)
        else:
            os.environ["HALBENCH_THREADS"] = previous
    (repo / "READY").write_text("ok")
    return repo


def _build_repo(repo: Path) -> None:
    from halbench.executors import local_executor
    from halbench.sweep import Sweep, make_job, run_sweep

    from .tiny import make_tiny_instance

    instances = []
    for t, task in enumerate(TASKS):
        (repo / "tasks" / task).mkdir(parents=True)
        spec = {"name": task, "family": "single", "version": 2, "description": f"Tiny test task {task}."}
        (repo / "tasks" / task / "task.yaml").write_text(yaml.safe_dump(spec))
        for m, (arch, model) in enumerate(MODELS):
            ref = make_tiny_instance(repo / "tasks", arch=arch, task=task, model_name=model, cases=CASES, seed=m,
                                     length=24 + 4 * t)  # fmt: skip
            _plant_labels(ref.folder)
            instances.append(ref)
    results, quiet = repo / "results", {"progress": False, "echo": lambda _: None}
    full = [make_job(method, {}, b) for method in BUILT_IN for b in BUDGETS if (method, b) != SHORT[1:]]
    run_sweep(Sweep(instances, full, out=results, refills=2), local_executor(1), **quiet)
    rest = [i for i in instances if i.name != SHORT[0]]
    run_sweep(Sweep(rest, [make_job("attention", {}, 64)], out=results, refills=2), local_executor(1), **quiet)
    short = [i for i in instances if i.name == SHORT[0]]
    run_sweep(
        Sweep(short, [make_job("attention", {}, 64)], out=results, refills=2, limit=3), local_executor(1), **quiet
    )
    _submission(repo, VERIFIED, "occlusion", "perturbation", {"name": "Occlusion, resubmitted"})
    _submission(repo, HOSTILE, "random", "baseline", {
        "name": HOSTILE_NAME, "description": HOSTILE_DESCRIPTION, "authors": ["<b>Mallory</b>"], "paper": HOSTILE_PAPER,
    })  # fmt: skip
    from halbench.submissions import load_submission
    from halbench.submissions.verify import results_hashes

    sub = load_submission(repo / "submissions" / VERIFIED)
    (repo / "verifications").mkdir()
    record = {"slug": VERIFIED, "passed": True, "files": results_hashes(sub.folder)}
    (repo / "verifications" / f"{VERIFIED}.json").write_text(json.dumps(record))
    invalid = repo / "submissions" / "Evil<script>"
    shutil.copytree(repo / "submissions" / HOSTILE, invalid, ignore=shutil.ignore_patterns("results"))
    _relabel(results / "alpha" / "m-gpt2" / "random", results / "alpha" / "m-gpt2" / UNSAFE, UNSAFE, "baseline")


def _plant_labels(folder: Path) -> None:
    """Give the tiny cases v2-style mechanism labels and an inert distractor each, then re-hash the instance."""
    from halbench.tasks import artifacts

    records = artifacts.read_cases(folder / artifacts.CASES)
    for i, r in enumerate(records):
        cause = r["causes"][0]
        r["mechanisms"] = [f"{'single' if len(cause) == 1 else 'pair'}-{i % 3}"]
        r["decoys"] = [p for p in r["editable"] if p not in cause][:1]
    artifacts.write_cases(folder / artifacts.CASES, records)
    manifest = artifacts.read_manifest(folder)
    files = artifacts.hashed_files(folder, (artifacts.CASES,))
    manifest["files"] = files
    manifest["content_hash"] = artifacts.content_hash(files, manifest["spec_hash"], manifest["model"]["content_hash"])
    artifacts.write_manifest(folder, manifest)


def _relabel(source: Path, target: Path, method: str, kind: str) -> None:
    """Another method's result files under the name ``method`` (summaries and configs say so)."""
    target.mkdir(parents=True)
    for path in source.iterdir():
        if path.name.endswith((".json",)):
            data = json.loads(path.read_text())
            data.update(method=method, kind=kind)
            (target / path.name).write_text(json.dumps(data))
        else:
            shutil.copy(path, target / path.name)


def _submission(repo: Path, slug: str, source: str, kind: str, spec: dict) -> None:
    folder = repo / "submissions" / slug
    folder.mkdir(parents=True)
    declared = {"name": slug, "authors": ["A. Tester"], "description": "Results copied from a built-in method.",
                "licence": "MIT", "kind": kind, "hyperparameters": {}, **spec}  # fmt: skip
    (folder / "submission.yaml").write_text(yaml.safe_dump(declared))
    (folder / "method.py").write_text(METHOD_PY)
    for instance in (f"{t}/{m}" for t in TASKS for _, m in MODELS):
        _relabel(repo / "results" / instance / source, folder / "results" / instance / slug, slug, kind)


def case_ids(repo: Path, instance: str) -> list[str]:
    lines = (repo / "tasks" / instance / "cases.jsonl").read_text().splitlines()
    return [r["id"] for r in map(json.loads, lines) if r["split"] == "test"]


def result_root(repo: Path, method: str) -> Path:
    return repo / "submissions" / method / "results" if method in (VERIFIED, HOSTILE) else repo / "results"


def case_ap(repo: Path, instance: str, method: str, budget: int) -> np.ndarray:
    """AP per test case from the per-case file; a failed or missing case counts 0 (AP's worst value)."""
    path = result_root(repo, method) / instance / method / f"budget-{budget}.cases.jsonl"
    records = {r["id"]: r for r in map(json.loads, path.read_text().splitlines())} if path.is_file() else {}
    ok = {cid: r for cid, r in records.items() if r["status"] == "ok"}
    return np.array([ok[c]["metrics"]["average_precision"] if c in ok else 0.0 for c in case_ids(repo, instance)])


def expected_headline(repo: Path, method: str, tasks=TASKS, models=tuple(m for _, m in MODELS)) -> float:
    """Mean over tasks of the mean over models of the mean over cases of AP averaged over the budgets."""
    per_task = []
    for task in tasks:
        per_model = [np.mean([case_ap(repo, f"{task}/{m}", method, b) for b in BUDGETS], axis=0).mean() for m in models]
        per_task.append(np.mean(per_model))
    return float(np.mean(per_task))


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def repo(tmp_path_factory) -> Path:
    return fake_repo(tmp_path_factory)


@pytest.fixture(scope="session")
def report(repo, tmp_path_factory):
    """One build of the fake repository, as the rest of the tests read it."""
    out = tmp_path_factory.mktemp("site") / "_build"
    return build_site(repo, out, tasks_root=repo / "tasks", cases_per_model=2)


@pytest.fixture(scope="session")
def built(report) -> Path:
    return report.index.parent


# --------------------------------------------------------------------------- reading pages


class Page(HTMLParser):
    """A built page as data: every table row (with its section, table and cells), every link, id and attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict] = []
        self.links: list[tuple[str, str]] = []
        self.ids: set[str] = set()
        self.attributes: set[str] = set()
        self.text = ""
        self._section: dict = {}
        self._table: dict = {}
        self._row: dict | None = None
        self._cell: dict | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.attributes.update(a)
        if "id" in a:
            self.ids.add(a["id"])
        self.links += [(tag, a[k]) for k in ("href", "src") if a.get(k)]
        if tag == "section":
            self._section = a
        elif tag == "table":
            self._table = a
        elif tag == "tr":
            self._row = {"section": self._section, "table": self._table, "attrs": a, "cells": []}
        elif tag in ("td", "th") and self._row is not None:
            self._cell = {"attrs": a, "text": ""}
            self._row["cells"].append(self._cell)

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag in ("td", "th"):
            self._cell = None
        elif tag == "section":
            self._section = {}

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._cell is not None:
            self._cell["text"] += data


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def board_rows(page: Page, scope: str, view: str, table: str) -> dict[str, dict]:
    """Rows of one board's ``ranked`` or ``unranked`` table, by method."""
    return {
        r["attrs"]["data-method"]: r
        for r in page.rows
        if r["section"].get("data-scope") == scope
        and r["section"].get("data-view") == view
        and r["table"].get("class", "").split()[0] == table
        and "data-method" in r["attrs"]
    }


def keyed_rows(page: Page, table: str, key: str) -> dict[str, dict]:
    """Body rows of every ``table.<table>`` on the page, by their ``key`` attribute."""
    return {r["attrs"][key]: r for r in page.rows if r["table"].get("class") == table and key in r["attrs"]}


def value(row: dict, index: int) -> float:
    return float(row["cells"][index]["attrs"]["data-value"])


def words(text: str) -> str:
    return " ".join(text.split())


SCOPES = {"all": TASKS, **{t: (t,) for t in TASKS}}


def summaries(repo: Path) -> list[Path]:
    """The summaries the board may use: every one under results/ and a valid submission's results/."""
    found = list((repo / "results").glob("*/*/*/budget-*.json"))
    for slug in (VERIFIED, HOSTILE):
        found += (repo / "submissions" / slug / "results").glob("*/*/*/budget-*.json")
    return [p for p in found if p.parent.name != UNSAFE and not p.name.endswith(".config.json")]


# --------------------------------------------------------------------------- files


def test_the_build_reports_what_it_refused(report, built):
    assert len(report.problems) == 2, report.problems
    assert any("Evil<script>" in p and "slug" in p for p in report.problems)  # not a valid slug
    assert any(UNSAFE in p and "not a safe page name" in p for p in report.problems)
    assert not (built / "methods" / f"{UNSAFE}.html").exists()
    assert all(
        set(p.relative_to(built).as_posix()) <= set("abcdefghijklmnopqrstuvwxyz0123456789_.-/")
        for p in built.rglob("*")
    )
    index = parse(built / "index.html")
    assert "could not be used" in index.text and UNSAFE in index.text  # listed, escaped, on the front page


def test_every_link_resolves_inside_the_build(report, built):
    pages = sorted(built.rglob("*.html"))
    methods = len(BUILT_IN) + 2
    assert len(pages) == report.pages == 5 + len(TASKS) + len(TASKS) * len(MODELS) * 2 + methods
    for page in pages:
        parsed = parse(page)
        for tag, link in parsed.links:
            url = urlparse(link)
            if url.scheme in ("http", "https"):
                assert tag == "a", f"{page}: external resource {link} (the site must work offline)"
                continue
            assert not url.scheme and not url.netloc, f"{page}: {link}"
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            assert target.is_file(), f"{page.relative_to(built)} links to missing {link}"
            assert built.resolve() in target.parents, f"{page}: {link} leaves the build"
            if url.fragment and target.suffix == ".html" and "=" not in url.fragment:
                assert url.fragment in parse(target).ids, f"{page}: {link} has no such anchor"


def test_headline_and_budget_figures_are_the_per_case_numbers(built, repo):
    index = parse(built / "index.html")
    for scope, tasks in SCOPES.items():
        rows = {**board_rows(index, scope, "headline", "ranked")}
        assert rows, scope
        for method, row in rows.items():
            assert value(row, 4) == pytest.approx(expected_headline(repo, method, tasks), abs=1e-9)
            for i, budget in enumerate(BUDGETS):
                instances = [f"{t}/{m}" for t in tasks for _, m in MODELS]
                ap = np.mean([case_ap(repo, inst, method, budget).mean() for inst in instances])
                assert value(row, 5 + i) == pytest.approx(ap, abs=1e-9)
                spent = [
                    json.loads(line)["cost"]["rows"]
                    for inst in instances
                    for line in (result_root(repo, method) / inst / method / f"budget-{budget}.cases.jsonl").open()
                ]
                assert f"{np.mean(spent):.1f} rows" in row["cells"][5 + i]["text"]  # rows actually spent, beside it
        unranked = board_rows(index, scope, "headline", "unranked")
        for method, row in unranked.items():
            assert value(row, 4) == pytest.approx(expected_headline(repo, method, tasks), abs=1e-9)


def test_ranks_ties_and_the_unranked_table(built, repo):
    index = parse(built / "index.html")
    ranked = board_rows(index, "all", "headline", "ranked")
    unranked = board_rows(index, "all", "headline", "unranked")
    assert set(ranked) == {"random", "occlusion", VERIFIED}
    assert set(unranked) == {"attention", HOSTILE}  # the probe is in neither: it is in the sanity panel
    assert words(unranked["attention"]["cells"][3]["text"]).startswith("incomplete: 64 rows")
    assert "unverified" in unranked[HOSTILE]["cells"][3]["text"]
    assert "badge-verified" in (built / "index.html").read_text()
    # occ-copy carries occlusion's records: identical per-case values can never be told apart, so they tie
    for task in TASKS:
        for _, model in MODELS:
            for b in BUDGETS:
                assert np.array_equal(case_ap(repo, f"{task}/{model}", "occlusion", b),
                                      case_ap(repo, f"{task}/{model}", VERIFIED, b))  # fmt: skip
    occlusion, copy = (words(ranked[m]["cells"][0]["text"]) for m in ("occlusion", VERIFIED))
    assert occlusion == copy and occlusion.endswith("=")
    ranks = [(int(words(r["cells"][0]["text"]).rstrip("=")), value(r, 4)) for r in ranked.values()]
    assert [r for r, _ in ranks] == sorted(r for r, _ in ranks)  # ranked rows in rank order
    for (rank_a, mean_a), (rank_b, mean_b) in itertools.pairwise(ranks):
        assert mean_a >= mean_b - 1e-12 and (rank_a == rank_b or mean_a > mean_b)
    alpha = board_rows(index, "alpha", "headline", "ranked")
    assert "attention" in alpha  # complete on alpha, so ranked there and only there
    assert "attention" in board_rows(index, "beta", "headline", "unranked")


def test_sanity_panel_gives_a_verdict_from_the_numbers(built, repo):
    index = parse(built / "index.html")
    sanity = list(keyed_rows(index, "sanity", "data-scope").values())
    assert {(r["attrs"]["data-scope"], r["attrs"]["data-probe"]) for r in sanity} == {(s, "dev_lookup") for s in SCOPES}
    for row in sanity:
        tasks = SCOPES[row["attrs"]["data-scope"]]
        probe, chance = expected_headline(repo, "dev_lookup", tasks), expected_headline(repo, "random", tasks)
        assert value(row, 2) == pytest.approx(probe, abs=1e-9) and value(row, 3) == pytest.approx(chance, abs=1e-9)
        at_chance = abs(probe - chance) <= 0.05
        verdict = row["cells"][5]
        assert verdict["attrs"]["class"].split() == ["verdict", "ok" if at_chance else "bad"]
        assert ("NOT at chance" in verdict["text"]) != at_chance


def test_recurrence_panel_recomputes_from_the_case_files(built, repo):
    """One row per scope; its numbers are the probe's on the test cases, pooled per model over its instances."""
    from halbench.metrics import average_precision
    from halbench.tasks.recurrence import recurrence_scores

    rows = keyed_rows(parse(built / "index.html"), "sanity recurrence", "data-scope")
    assert set(rows) == set(SCOPES)
    cases = {}
    for path in sorted((repo / "tasks").glob("*/*/cases.jsonl")):
        tests = [r for r in map(json.loads, path.read_text().splitlines()) if r["split"] == "test"]
        cases[f"{path.parent.parent.name}/{path.parent.name}"] = tests
    pools: dict[str, list[dict]] = {}
    for name, tests in cases.items():
        pools.setdefault(name.split("/")[1], []).extend(tests)
    for scope, tasks in SCOPES.items():
        names = [n for n in cases if n.split("/")[0] in tasks]
        means = [
            np.mean([average_precision(recurrence_scores(r, pools[n.split("/")[1]]), r["causes"], r["editable"])
                     for r in cases[n]])
            for n in names
        ]  # fmt: skip
        assert value(rows[scope], 2) == pytest.approx(float(np.mean(means)), abs=1e-9)
        assert 0.0 < value(rows[scope], 3) <= 1.0 and 0.0 < value(rows[scope], 4) < 1.0


def test_consistency_page_shows_the_spread_and_kendall_tau(built, repo):
    from scipy.stats import kendalltau

    page = parse(built / "consistency.html")
    models = [m for _, m in MODELS]
    per_model = keyed_rows(page, "per-model", "data-method")
    expected: dict[str, dict[str, float]] = {m: {} for m in models}
    for method, row in per_model.items():
        for cell in row["cells"][2:-1]:
            model = cell["attrs"]["data-model"]
            complete = not (method == SHORT[1] and model == SHORT[0].split("/")[1])
            if not complete:
                assert cell["attrs"]["data-value"] == ""  # incomplete on that model: no number
                continue
            expected[model][method] = expected_headline(repo, method, models=(model,))
            assert float(cell["attrs"]["data-value"]) == pytest.approx(expected[model][method], abs=1e-9)
    assert set(per_model) == {"random", "occlusion", "attention", VERIFIED, HOSTILE}
    trusted = {m: {k: v for k, v in values.items() if k != HOSTILE} for m, values in expected.items()}
    common = sorted(set(trusted[models[0]]) & set(trusted[models[1]]))
    tau = kendalltau([trusted[models[0]][m] for m in common], [trusted[models[1]][m] for m in common]).statistic
    cell = next(c for r in page.rows for c in r["cells"] if c["attrs"].get("data-pair") == f"{models[0]}|{models[1]}")
    assert float(cell["attrs"]["data-value"]) == pytest.approx(tau)
    facts = {r["cells"][0]["text"]: r for r in page.rows if r["table"].get("class") == "models"}
    for arch, model in MODELS:
        manifest = json.loads((repo / "tasks" / "_models" / model / "MANIFEST.json").read_text())
        assert facts[model]["cells"][1]["text"] == arch == manifest["arch"]
        assert int(facts[model]["cells"][2]["attrs"]["data-value"]) == manifest["parameters"]


def test_task_page_states_the_facts_in_words(built, repo):
    page = parse(built / "tasks" / "alpha.html")
    assert "Tiny test task alpha." in page.text
    rows = keyed_rows(page, "instances", "data-model")
    assert set(rows) == {m for _, m in MODELS}
    for model, row in rows.items():
        manifest = json.loads((repo / "tasks" / "alpha" / model / "MANIFEST.json").read_text())
        length = manifest["prompt_length"]
        assert row["cells"][6]["text"] == f"{length['min']}-{length['max']} (mean {length['mean']:g})"
        records = [json.loads(x) for x in (repo / "tasks" / "alpha" / model / "cases.jsonl").open()]
        counts: dict[str, int] = {}
        for r in (r for r in records if r["split"] == "test"):
            counts[r["mechanisms"][0]] = counts.get(r["mechanisms"][0], 0) + 1
        assert words(row["cells"][7]["text"]) == ", ".join(f"{m} × {n}" for m, n in sorted(counts.items()))
    assert "{'" not in page.text and '{"' not in page.text  # no raw dict anywhere
    assert board_rows(page, "alpha", "headline", "ranked")  # the task's own board is on its page


def test_method_pages_link_papers_and_escape_submissions(built):
    from halbench.methods.base import registered

    occlusion = parse(built / "methods" / "occlusion.html")
    assert ("a", registered()["occlusion"].paper) in occlusion.links
    assert "halbench/methods/occlusion.py" in occlusion.text
    hostile = (built / "methods" / f"{HOSTILE}.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile and "&lt;img src=x" in hostile
    assert "<b>Mallory</b>" not in hostile and "&lt;b&gt;Mallory&lt;/b&gt;" in hostile
    parsed = parse(built / "methods" / f"{HOSTILE}.html")
    assert ("a", HOSTILE_PAPER) in parsed.links  # the quote stayed inside the attribute
    for page in built.rglob("*.html"):
        text = page.read_text()
        assert "<script>alert" not in text and "<img src=x" not in text, page
        assert not [a for a in parse(page).attributes if a.startswith("on")], page  # no event handler got in


def test_metrics_page_states_the_rules(built):
    from halbench.metrics import METRICS

    page = parse(built / "metrics.html")
    assert set(METRICS) <= page.ids
    text = words(page.text)
    for phrase in ("counts at the metric's worst value", "hierarchical bootstrap", "Only complete, trusted entries",
                   "p_rep@0.25 is ERASER's sufficiency", "the paper's reproducibility", "the probability variant",
                   "written by the model itself"):  # fmt: skip
        assert phrase in text, phrase


def test_downloads_match_the_results(built, repo):
    files = summaries(repo)
    expected = {
        (p.parts[-4], p.parts[-3], p.parts[-2], int(p.stem.split("-")[1])): json.loads(p.read_text()) for p in files
    }
    got = json.loads((built / "downloads" / "results.json").read_text())
    assert {(s["task"], s["model"], s["method"], s["budget"]) for s in got} == set(expected)
    with open(built / "downloads" / "results.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(expected)
    for row in rows:
        summary = expected[(row["task"], row["model"], row["method"], int(row["budget"]))]
        assert float(row["average_precision_mean"]) == summary["metrics"]["average_precision"]["mean"]
        assert row["status"] == {VERIFIED: "verified", HOSTILE: "unverified"}.get(row["method"], "built-in")
    with open(built / "downloads" / "cases.csv") as handle:
        cases = list(csv.DictReader(handle))
    lines = sum(len(p.with_name(p.stem + ".cases.jsonl").read_text().splitlines()) for p in files)
    assert len(cases) == lines


def test_built_files_are_world_readable(built):
    assert stat.S_IMODE(built.stat().st_mode) == 0o755
    for path in built.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o755 if path.is_dir() else 0o644), path


def test_publish_makes_the_site_world_readable_whatever_the_umask(tmp_path):
    from halbench.site.publish import publish

    def fill(staging: Path) -> None:
        (staging / "cases").mkdir()
        (staging / "cases" / "page.html").write_text("page")

    previous = os.umask(0o077)  # a private umask: mkdtemp's 700 and new files' 600 must both be undone
    try:
        publish(tmp_path / "site" / "_build", fill)
    finally:
        os.umask(previous)
    out = tmp_path / "site" / "_build"
    modes = {p.relative_to(out).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in [out, *out.rglob("*")]}
    assert modes == {".": 0o755, "cases": 0o755, "cases/page.html": 0o644}


def test_rebuild_is_byte_identical(repo, built, tmp_path):
    again = build_site(repo, tmp_path / "again", tasks_root=repo / "tasks", cases_per_model=2).index.parent
    first = {p.relative_to(built): p.read_bytes() for p in built.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []


def test_a_build_is_swapped_in_whole(repo, tmp_path, monkeypatch):
    from halbench.site import build

    out = tmp_path / "site"
    build_site(repo, out, tasks_root=repo / "tasks", cases_per_model=0)
    (out / "stale.html").write_text("from an older build")
    before = (out / "index.html").read_bytes()

    def broken(self):
        (self.root / "index.html").write_text("half a site")
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(build.Renderer, "all", broken)
    with pytest.raises(RuntimeError, match="rendering failed"):
        build_site(repo, out, tasks_root=repo / "tasks", cases_per_model=0)
    assert (out / "index.html").read_bytes() == before and (out / "stale.html").is_file()  # old site untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]  # no staging folder left behind
    monkeypatch.undo()
    build_site(repo, out, tasks_root=repo / "tasks", cases_per_model=0)
    assert not (out / "stale.html").exists()  # a good build replaces the whole folder


def test_building_never_imports_a_submission(repo, report, tmp_path):
    import subprocess

    probe = tmp_path / "probe"
    shutil.copytree(repo / "submissions" / HOSTILE, probe, ignore=shutil.ignore_patterns("results"))
    ran = subprocess.run([sys.executable, str(probe / "method.py")], capture_output=True, text=True)
    assert ran.returncode != 0 and (probe / MARKER).is_file()  # the marker does show an import
    for slug in (VERIFIED, HOSTILE):
        assert not (repo / "submissions" / slug / MARKER).exists()
    submissions = (repo / "submissions").resolve()
    loaded = [m for m in list(sys.modules.values()) if getattr(m, "__file__", None)]
    assert not [m for m in loaded if submissions in Path(m.__file__).resolve().parents]


def test_bad_results_are_reported_and_left_out(repo, tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy)
    (copy / "results" / "alpha" / "m-gpt2" / "random" / "budget-64.json").write_text("{ not json")
    stale = copy / "results" / "beta" / "m-gpt2" / "occlusion" / "budget-16.json"
    stale.write_text(json.dumps({**json.loads(stale.read_text()), "task_hash": "another-build"}))
    spoof = copy / "submissions" / VERIFIED / "results" / "alpha" / "m-gpt2" / "random"
    _relabel(copy / "results" / "alpha" / "m-gpt2" / "occlusion", spoof, "random", "baseline")
    report = build_site(copy, tmp_path / "out", tasks_root=copy / "tasks", cases_per_model=0)
    problems = "\n".join(report.problems)
    assert "budget-64.json" in problems and "not valid JSON" in problems
    assert "computed on another build of beta/m-gpt2" in problems
    assert f"{VERIFIED}: alpha/m-gpt2/random: a submission may only hold results of its own method" in problems
    index = parse(report.index)
    unranked = board_rows(index, "all", "headline", "unranked")
    assert {"random", "occlusion"} <= set(unranked)  # each lost a file, so each is incomplete now
    assert value(unranked["random"], 4) < expected_headline(repo, "random")  # missing cases count at the worst value


def test_site_build_cli_prints_the_index(repo, tmp_path):
    args = ("site", "build", "--root", str(repo), "--tasks", str(repo / "tasks"), "--cases-per-model", "1")
    result = invoke(*args, "--out", str(tmp_path / "cli"))
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == str((tmp_path / "cli" / "index.html").resolve())
    (tmp_path / "file").write_text("")
    result = invoke(*args, "--out", str(tmp_path / "file"))
    assert result.exit_code == 1 and "not a folder" in result.output and "Traceback" not in result.output


def test_pareto_front_keeps_only_undominated_points():
    pts = [Point("a", 64, 10, 0.5), Point("b", 64, 5, 0.6), Point("c", 256, 50, 0.9), Point("d", 256, 60, 0.8)]
    assert [p.method for p in pareto_front(pts)] == ["b", "c"]


def test_site_serve_answers_on_loopback(built):
    import subprocess
    import urllib.request

    cmd = [sys.executable, "-c", "from halbench.cli import main; main()", "site", "serve", "--dir", str(built)]
    server = subprocess.Popen([*cmd, "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()  # "serving ... at http://127.0.0.1:PORT/ ..."
        url = line.split(" at ")[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "index.html", timeout=10) as response:
            assert response.status == 200 and b'<section class="board"' in response.read()
    finally:
        server.terminate()
        server.wait(timeout=10)


# --------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def browser():
    yield from headless_chromium("1400,1000")


def shown_rows(driver, scope: str, view: str, table: str = "ranked") -> list:
    section = driver.find_element("css selector", f'section.board[data-scope="{scope}"][data-view="{view}"]')
    assert section.is_displayed()
    rows = section.find_elements("css selector", f"table.{table} tbody tr")
    return [r for r in rows if r.is_displayed()]


def methods_of(rows: list) -> list[str]:
    return [r.get_attribute("data-method") for r in rows]


def test_leaderboard_sorts_filters_and_switches_in_chromium(browser, built, repo):
    from selenium.webdriver.support.ui import Select

    browser.get((built / "index.html").as_uri())
    visible = [s for s in browser.find_elements("css selector", "section.board") if s.is_displayed()]
    assert [(s.get_attribute("data-scope"), s.get_attribute("data-view")) for s in visible] == [("all", "headline")]
    assert set(methods_of(shown_rows(browser, "all", "headline"))) == {"random", "occlusion", VERIFIED}
    section = 'section.board[data-scope="all"][data-view="headline"]'
    header = browser.find_element("css selector", f"{section} table.ranked th:nth-child(6)")
    assert header.text.startswith(f"AP @ {BUDGETS[0]} rows")
    for expected in ("descending", "ascending"):  # a numeric column sorts best first, then flips
        header.click()
        assert header.get_attribute("aria-sort") == expected
        cells = browser.find_elements("css selector", f"{section} table.ranked tbody td:nth-child(6)")
        values = [float(c.get_attribute("data-value")) for c in cells]
        assert values == sorted(values, reverse=expected == "descending")
    browser.find_element("css selector", f"{section} table.ranked th:nth-child(2)").click()  # method, A-Z
    names = methods_of(browser.find_elements("css selector", f"{section} table.ranked tbody tr"))
    assert names == sorted(names)

    browser.find_element("css selector", '.kind-filter[value="baseline"]').click()  # hide baselines
    assert "random" not in methods_of(shown_rows(browser, "all", "headline"))
    assert methods_of(shown_rows(browser, "all", "headline", "unranked")) == ["attention"]  # hostile-sub is a baseline
    Select(browser.find_element("id", "scope")).select_by_value("alpha")
    Select(browser.find_element("id", "view")).select_by_value(str(BUDGETS[0]))
    alpha = methods_of(shown_rows(browser, "alpha", str(BUDGETS[0])))
    assert "attention" in alpha and "random" not in alpha  # complete on alpha; the kind filter holds
    assert browser.current_url.endswith(f"#scope=alpha&view={BUDGETS[0]}")
    browser.find_element("css selector", '.kind-filter[value="baseline"]').click()
    assert "random" in methods_of(shown_rows(browser, "alpha", str(BUDGETS[0])))

    browser.get((built / "index.html").as_uri() + f"#scope=beta&view={BUDGETS[1]}")  # a shared link opens its board
    assert "attention" in methods_of(shown_rows(browser, "beta", str(BUDGETS[1]), "unranked"))
    verdicts = browser.find_elements("css selector", "table.sanity:not(.recurrence) td.verdict")
    assert len(verdicts) == len(SCOPES) and all(v.is_displayed() and "chance" in v.text for v in verdicts)
    recurrence = browser.find_elements("css selector", "table.recurrence td.verdict")
    assert len(recurrence) == len(SCOPES) and all(v.is_displayed() and "chance" in v.text for v in recurrence)


def test_case_drilldown_in_chromium(browser, built, repo):
    from selenium.webdriver.support.ui import Select

    browser.get((built / "tasks" / "alpha.html").as_uri())
    link = browser.find_elements("css selector", "a.case-link")[0]
    case_id = link.text
    link.click()
    instance = f"alpha/{MODELS[0][1]}"
    assert browser.current_url.endswith(f"cases/{instance}/{case_id}.html")
    lines = (repo / "tasks" / instance / "cases.jsonl").read_text().splitlines()
    case = next(r for r in map(json.loads, lines) if r["id"] == case_id)
    assert browser.find_element("id", "target").text == " ".join(map(str, case["target_tokens"] or case["target_ids"]))
    label = case["mechanisms"][0]
    kind, number = label.split("-")
    ordinal = ("first", "second", "third")[int(number)]
    assert f"{label} = the model's {ordinal} planted {kind}" in browser.find_element("id", "mechanisms").text
    assert "fourth planted pair of trigger words" in browser.find_element("id", "legend").text
    causes = {p for alt in case["causes"] for p in alt}
    k = min(len(alt) for alt in case["causes"])
    traces = [t for t in browser.find_elements("css selector", "tr.trace") if t.is_displayed()]
    assert {t.get_attribute("data-budget") for t in traces} == {str(BUDGETS[-1])}
    assert {t.get_attribute("data-method") for t in traces} == {*BUILT_IN, VERIFIED, HOSTILE}
    for trace in traces:
        method = trace.get_attribute("data-method")
        path = result_root(repo, method) / instance / method / f"budget-{BUDGETS[-1]}.cases.jsonl"
        record = next(r for r in map(json.loads, path.read_text().splitlines()) if r["id"] == case_id)
        tokens = trace.find_elements("css selector", "td.prompt .tok")
        assert len(tokens) == len(case["prompt_ids"])
        classes = [t.get_attribute("class").split() for t in tokens]
        assert {i for i, c in enumerate(classes) if "cause" in c} == causes
        assert {i for i, c in enumerate(classes) if "inert" in c} == set(case["decoys"])
        marks = trace.find_elements("css selector", ".topmark")
        assert len(marks) == k
        assert all(m.size["height"] >= 14 and m.size["width"] >= 14 for m in marks)  # not an asterisk-sized glyph
        scores = np.asarray(record["scores"])
        best = max(case["editable"], key=lambda p: (scores[p], -p))
        first = next(
            i
            for i, c in enumerate(classes)
            if "top" in c and tokens[i].find_element("css selector", ".topmark").text == "1"
        )
        assert first == best
        assert trace.find_element("css selector", "td.ap").text == f"{record['metrics']['average_precision']:.3f}"
    Select(browser.find_element("id", "trace-budget")).select_by_value(str(BUDGETS[0]))
    shown = [t for t in browser.find_elements("css selector", "tr.trace") if t.is_displayed()]
    assert shown and {t.get_attribute("data-budget") for t in shown} == {str(BUDGETS[0])}


def test_hostile_text_stays_text_in_chromium(browser, built):
    from selenium.common.exceptions import NoAlertPresentException

    for page in ("index.html", "consistency.html", f"methods/{HOSTILE}.html"):  # the method page last: read below
        browser.get((built / page).as_uri())
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018  (nothing ran)
        scripts = browser.find_elements("css selector", "script")
        assert [s.get_attribute("src").rsplit("/", 1)[-1] for s in scripts] == ["site.js"]
    assert browser.find_element("id", "display-name").text == HOSTILE_NAME
    assert words(browser.find_element("id", "description").text) == words(HOSTILE_DESCRIPTION)
    assert browser.find_element("id", "authors").text == "<b>Mallory</b>"
    paper = browser.find_element("css selector", "a.paper")
    assert (
        paper.get_dom_attribute("href") == paper.text == HOSTILE_PAPER
        and paper.get_dom_attribute("onmouseover") is None
    )
