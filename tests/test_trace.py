"""``halbench trace`` end to end: a project model and a random tiny Llama, terminal summary and HTML report.

The report is opened in headless Chromium: the heat map must render (one coloured box per prompt
token), its script must run (hovering a subsequence marks its tokens) and hostile text must stay text.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from halbench.methods.sat_reference import perturbation_mask
from halbench.methods.sat_search import fast_search
from halbench.trace.report import beam_by_level, render_html, summary_text
from halbench.trace.run import TraceSettings, run_trace

from .browser import headless_chromium
from .conftest import invoke
from .hf_models import make_hf_model
from .tiny import make_tiny_instance

HOSTILE = "Tell me a bio of <img src=x onerror=\"document.title='owned'\"> Mira Olsen."
FAST = ("--budget", "32", "--refills", "4", "--lm-refills", "4", "--no-progress")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return make_hf_model(tmp_path_factory.mktemp("llama") / "tiny-llama", "llama")


@pytest.fixture(scope="module")
def project_model(tmp_path_factory):
    """A halbench model folder (``model/`` beside ``unigram.json``), as ``tasks build`` lays one out."""
    ref = make_tiny_instance(tmp_path_factory.mktemp("project"), "gpt2", cases=2, dev=1)
    return ref.model_folder


def _heat_cells(html: str) -> list[str]:
    return re.findall(r'<span class="tok[^"]*" data-pos="(\d+)"', html)


def test_trace_on_a_random_tiny_llama_prints_and_writes_the_report(llama, tmp_path):
    out = tmp_path / "report.html"
    result = invoke("trace", "--model", str(llama), "--prompt", "Tell me a bio of Mira Olsen.",
                    "--hallucination", "She was born in Lund", "--chat-template", "--out", str(out), *FAST)  # fmt: skip
    assert result.exit_code == 0, result.output
    for part in ("halbench trace: sat", "(llama,", "inside the chat template", "per-token scores",
                 "reproducibility", "s_rep_lm", "fixed", "report:"):  # fmt: skip
        assert part in result.output, part
    html = out.read_text()
    prompt_tokens = int(re.search(r"prompt: (\d+) tokens", result.output).group(1))
    assert len(_heat_cells(html)) == prompt_tokens
    assert "http://" not in html and "https://" not in html and "<link" not in html  # self-contained


def test_trace_on_a_project_model_folder(project_model, tmp_path):
    out = tmp_path / "report.html"
    prompt = "[BOS] w001 w002 w003 w004 w005 w006 w007 w008 [Q]"
    result = invoke("trace", "--model", str(project_model), "--prompt", prompt, "--hallucination", "w010",
                    "--out", str(out), *FAST)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "(gpt2," in result.output and "w004" in result.output
    assert "10 tokens, 8 editable" in result.output  # the markers written in the prompt stay fixed
    assert len(_heat_cells(out.read_text())) == 10


def test_trace_refuses_what_it_cannot_run(llama, tmp_path):
    result = invoke("trace", "--model", str(tmp_path), "--prompt", "x", "--hallucination", "y")
    assert result.exit_code == 1 and "no config.json" in result.output
    result = invoke("trace", "--model", str(llama), "--prompt", "x", "--hallucination", "y", "--method", "nope")
    assert result.exit_code == 1 and "unknown method 'nope'" in result.output


# ------------------------------------------------------------------------------------------ the beam


def _with_beam(trace, seed: int = 0):
    """The trace with a real SAT search over perturbations of its own prompt (for methods that report none)."""
    if trace.search is not None:
        return trace
    from transformers import AutoTokenizer

    from halbench.case import PublicCase
    from halbench.scoring import Scorer
    from halbench.tasks.bundle import load_model, replacements_for

    model = load_model(trace.model_path, torch.device("cpu"))
    tok = AutoTokenizer.from_pretrained(trace.model_path)
    case = PublicCase.from_record(trace.record)
    scorer = Scorer(model, case, replacements_for(model, tok, None), budget=None, tokenizer=tok)
    rng = np.random.default_rng(seed)
    mask = perturbation_mask(rng, 64, case.length, case.editable, 0.5, "rgrand")
    rows = scorer.replacements.sample(rng, scorer.prompt, mask, "uniform")
    search = fast_search(scorer.prompt, rows, scorer.target_prob(rows), list(case.editable), beam=5)
    best = None if search.best is None else search.best.positions
    return replace(trace, search=search, subsequence=best)


@pytest.fixture(scope="module")
def traced(llama):
    settings = TraceSettings(budget=32, refills=4, lm_refills=4, device="cpu", chat_template=True)
    return _with_beam(run_trace(llama, HOSTILE, "She was born in Lund", settings, progress=False))


def test_summary_lists_top_subsequences_with_score_and_support(traced):
    text = summary_text(traced)
    assert "top subsequences" in text and "support" in text
    best = traced.search.ranked[0]
    assert f"{best.score:.4g}" in text and str(best.support) in text


def test_report_shows_the_beam_by_level_and_escapes_everything(traced):
    html = render_html(traced)
    levels = beam_by_level(traced)
    assert len(levels) == traced.search.levels[-1].level
    assert html.count('<details class="level"') == len(levels)
    assert "<img src=x" not in html and "&lt;img src=x" in html
    assert 'onerror="document' not in html


@pytest.fixture(scope="module")
def browser():
    yield from headless_chromium("1200,900")


def test_heat_map_renders_in_chromium(traced, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    path = tmp_path / "report.html"
    path.write_text(render_html(traced), encoding="utf-8")
    browser.get(path.as_uri())
    assert browser.find_element("css selector", "body").get_attribute("data-ready") == "1"  # the script ran
    assert browser.title != "owned" and "<img src=x" in browser.find_element("id", "case").text
    cells = browser.find_elements("css selector", "#heatmap .tok")
    assert len(cells) == len(traced.tokens)
    assert all(c.is_displayed() and c.size["width"] > 0 for c in cells)
    colours = {c.value_of_css_property("background-color") for c in cells if "fixed" not in c.get_attribute("class")}
    assert len(colours) > 1 and "rgba(0, 0, 0, 0)" not in colours  # scored tokens are coloured, differently
    row = browser.find_element("css selector", "table.top tbody tr")
    ActionChains(browser).move_to_element(row).perform()
    marked = {int(c.get_attribute("data-pos")) for c in cells if "hl" in c.get_attribute("class").split()}
    assert marked == set(traced.search.ranked[0].positions)
    assert len(browser.find_elements("css selector", "#curve polyline.series")) == 3
