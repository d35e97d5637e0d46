"""The static leaderboard: built from real (small) results, checked as files and in headless Chromium."""

from __future__ import annotations

import csv
import json
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from halbench.runner import EvalConfig, evaluate
from halbench.site.build import build_site
from halbench.site.plots import Point, pareto_front
from halbench.tasks.bundle import load_bundle

from .conftest import BUILT, TASKS, invoke

pytestmark = pytest.mark.skipif("single" not in BUILT, reason="single not built")
METHODS = ("occlusion", "random", "attention")
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def site_repo(tmp_path_factory) -> Path:
    """A results tree from real runs: three methods on two tasks at two budgets, six cases each."""
    repo = tmp_path_factory.mktemp("repo")
    for task in ("single", "conjunctive"):
        bundle = load_bundle(TASKS / task, device="cpu")
        for method in METHODS:
            for budget in (64, 256):
                config = EvalConfig(method, budget=budget, limit=6, out=repo / "results")
                evaluate(bundle, config, progress=False)
    return repo


@pytest.fixture(scope="module")
def built(site_repo, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "_build"
    report = build_site(site_repo, out, cases_per_task=3)
    assert report.index == out / "index.html" and report.index.is_file()
    assert report.problems == []
    return out


# --------------------------------------------------------------------------- files


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for key in ("href", "src"):
            if attrs.get(key):
                self.links.append((tag, attrs[key]))


def parse(path: Path) -> Links:
    parser = Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_every_link_resolves_inside_the_build(built):
    pages = sorted(built.rglob("*.html"))
    assert len(pages) >= 4 + 2 + 2 * 3 + len(METHODS)  # index, cost, metrics, downloads; tasks; cases; methods
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
            if url.fragment and target.suffix == ".html":
                assert url.fragment in parse(target).ids, f"{page}: {link} has no such anchor"


def test_pages_hold_what_they_promise(built):
    index = (built / "index.html").read_text()
    for method in METHODS:
        assert f'data-method="{method}"' in index
    assert index.count('<table class="board"') == 3 * 2  # (all, single, conjunctive) x two budgets
    assert "<svg" in (built / "cost.html").read_text()  # a matplotlib plot, inlined
    metrics = (built / "metrics.html").read_text()
    assert 'id="average_precision"' in metrics and "needs ground truth" in metrics
    task = (built / "tasks" / "single.html").read_text()
    assert "single" in task and "cases/single/" in task and "<svg" in task
    method = (built / "methods" / "occlusion.html").read_text()
    assert "arxiv.org/abs/1311.2901" in method and "halbench/methods/occlusion.py" in method


def test_downloads_match_the_results(built, site_repo):
    summaries = json.loads((built / "downloads" / "results.json").read_text())
    assert len(summaries) == 2 * len(METHODS) * 2
    assert all(s["task_hash"] and s["source"] == "built-in" for s in summaries)
    with open(built / "downloads" / "results.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(summaries) and float(rows[0]["average_precision_mean"]) >= 0
    with open(built / "downloads" / "cases.csv") as handle:
        cases = list(csv.DictReader(handle))
    assert len(cases) == 2 * len(METHODS) * 2 * 6


def test_rebuild_is_byte_identical(site_repo, built, tmp_path):
    again = build_site(site_repo, tmp_path / "again", cases_per_task=3).index.parent
    first = {p.relative_to(built): p.read_bytes() for p in built.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []


def test_a_broken_summary_is_reported_not_fatal(site_repo, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(site_repo / "results", repo / "results")
    (repo / "results" / "single" / "random" / "budget-64.json").write_text("{ not json")
    report = build_site(repo, tmp_path / "out", cases_per_task=1)
    assert any("budget-64.json" in p and "not valid JSON" in p for p in report.problems)
    assert 'data-method="random"' in (report.index).read_text()  # still there at budget 256


def test_site_build_cli_prints_the_index(site_repo, tmp_path):
    result = invoke("site", "build", "--root", str(site_repo), "--out", str(tmp_path / "cli"), "--cases-per-task", "1")
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].endswith("index.html")


def test_pareto_front_keeps_only_undominated_points():
    pts = [Point("a", 64, 10, 0.5), Point("b", 64, 5, 0.6), Point("c", 256, 50, 0.9), Point("d", 256, 60, 0.8)]
    assert [p.method for p in pareto_front(pts)] == ["b", "c"]


# --------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        if os.environ.get("CI"):
            pytest.fail("CI must provide Debian's chromium and chromium-driver (see .ci/run)")
        pytest.skip("chromium / chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    yield driver
    driver.quit()


def visible_rows(driver, scope: str, budget: int) -> list:
    table = driver.find_element("css selector", f'table.board[data-scope="{scope}"][data-budget="{budget}"]')
    assert table.is_displayed()
    return [r for r in table.find_elements("css selector", "tbody tr") if r.is_displayed()]


def test_leaderboard_sorts_and_filters_in_chromium(browser, built):
    from selenium.webdriver.support.ui import Select

    browser.get((built / "index.html").as_uri())
    rows = visible_rows(browser, "all", 256)
    assert {r.get_attribute("data-method") for r in rows} == set(METHODS)
    header = browser.find_element(
        "xpath", '//table[@data-scope="all"][@data-budget="256"]//th[starts-with(normalize-space(.), "hit_at_k")]'
    )
    for expected in ("descending", "ascending"):  # numeric columns sort best-first, then flip
        header.click()
        assert header.get_attribute("aria-sort") == expected
        cells = browser.find_elements(
            "css selector", 'table.board[data-scope="all"][data-budget="256"] tbody tr td:nth-child(6)'
        )
        values = [float(c.get_attribute("data-value")) for c in cells]
        assert values == sorted(values, reverse=expected == "descending")
    Select(browser.find_element("id", "scope")).select_by_value("conjunctive")
    Select(browser.find_element("id", "budget")).select_by_value("64")
    assert len(visible_rows(browser, "conjunctive", 64)) == 3
    browser.find_element("css selector", '.kind-filter[value="baseline"]').click()
    shown = {r.get_attribute("data-method") for r in visible_rows(browser, "conjunctive", 64)}
    assert "random" not in shown and "occlusion" in shown


def test_case_drilldown_in_chromium(browser, built):
    from selenium.webdriver.support.ui import Select

    browser.get((built / "tasks" / "conjunctive.html").as_uri())
    link = browser.find_elements("css selector", "a.case-link")[0]
    case_id = link.text
    link.click()
    assert browser.current_url.endswith(f"cases/conjunctive/{case_id}.html")
    record = next(json.loads(line) for line in (TASKS / "conjunctive" / "cases.jsonl").open() if case_id in line)
    assert browser.find_element("id", "target").text == " ".join(record["target_tokens"])
    assert browser.find_element("id", "faithful").text == " ".join(record["faithful_tokens"])
    traces = [t for t in browser.find_elements("css selector", "tr.trace") if t.is_displayed()]
    assert {t.get_attribute("data-method") for t in traces} == set(METHODS)
    assert {t.get_attribute("data-budget") for t in traces} == {"256"}
    causes = {p for alt in record["causes"] for p in alt}
    k = min(len(alt) for alt in record["causes"])
    for trace in traces:
        tokens = trace.find_elements("css selector", "td.prompt .tok")
        assert len(tokens) == len(record["prompt_ids"])
        outlined = [i for i, t in enumerate(tokens) if "cause" in t.get_attribute("class").split()]
        assert set(outlined) == causes
        assert sum("top" in t.get_attribute("class").split() for t in tokens) == k
    occlusion = next(t for t in traces if t.get_attribute("data-method") == "occlusion")
    assert occlusion.find_element("css selector", "td.ap").text == "1.000"  # leave-one-out finds an AND
    Select(browser.find_element("id", "trace-budget")).select_by_value("64")
    shown = [t for t in browser.find_elements("css selector", "tr.trace") if t.is_displayed()]
    assert {t.get_attribute("data-budget") for t in shown} == {"64"}


def test_site_serve_answers_on_loopback(built):
    import subprocess
    import sys
    import urllib.request

    cmd = [sys.executable, "-c", "from halbench.cli import main; main()", "site", "serve", "--dir", str(built)]
    server = subprocess.Popen([*cmd, "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()  # "serving ... at http://127.0.0.1:PORT/ ..."
        url = line.split(" at ")[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "index.html", timeout=10) as response:
            assert response.status == 200 and b'class="board"' in response.read()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_hostile_submission_is_escaped_or_refused(site_repo, tmp_path):
    import yaml

    from halbench.submissions import load_submission, run_submission
    from halbench.tasks.registry import REPO_ROOT

    repo = tmp_path / "repo"
    shutil.copytree(site_repo / "results", repo / "results")
    hostile = "<script>alert(1)</script>"
    for folder in ("occlusion-pairs", "Evil<script>"):
        target = repo / "submissions" / folder
        shutil.copytree(REPO_ROOT / "submissions" / "occlusion-pairs", target, ignore=shutil.ignore_patterns("results"))
        spec = yaml.safe_load((target / "submission.yaml").read_text())
        spec.update(name=hostile, description=f'<img src=x onerror="alert(2)"> {hostile}', authors=[hostile])
        (target / "submission.yaml").write_text(yaml.safe_dump(spec))
        (target / "verification.json").unlink()
    submission = load_submission(repo / "submissions" / "occlusion-pairs")
    run_submission(submission, ["single"], (64,), limit=2, progress=False)
    report = build_site(repo, tmp_path / "out", cases_per_task=1)
    assert any("Evil<script>" in p for p in report.problems)  # refused: not a valid slug
    page = (tmp_path / "out" / "methods" / "occlusion-pairs.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x" in page
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "badge-unverified" in page  # its results were never verified
    every = "".join(p.read_text() for p in (tmp_path / "out").rglob("*.html"))
    assert "<script>alert" not in every
