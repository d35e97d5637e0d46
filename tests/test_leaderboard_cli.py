"""``halbench leaderboard``: the site's board as text, on the same fake repository as the site tests.

Expected numbers are recomputed from the per-case files (``tests/test_site.py``'s helpers), and the
printed board is compared with the board the site renders from the same files.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from halbench.site.build import build_site

from .conftest import invoke
from .test_site import (
    BUDGETS,
    HOSTILE,
    MARKER,
    MODELS,
    TASKS,
    VERIFIED,
    board_rows,
    case_ap,
    expected_headline,
    fake_repo,
    parse,
    value,
    words,
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return fake_repo(tmp_path_factory)  # built once per session, shared with tests/test_site.py


def board(repo: Path, *args: str) -> str:
    result = invoke("leaderboard", "--root", str(repo), "--tasks", str(repo / "tasks"), *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def table(text: str, title: str | None = None) -> dict[str, list[str]]:
    """Rows of the first plain-text table after ``title`` (or of the first table), by method, as cells."""
    lines = text.splitlines()
    start = lines.index(title) + 1 if title else 0
    header = next(i for i in range(start, len(lines)) if lines[i].startswith(("rank ", "method ", "probe ")))
    rule = lines[header + 1]
    edges = [i for i, ch in enumerate(rule) if ch == "-" and (i == 0 or rule[i - 1] == " ")] + [len(rule) + 2]
    rows = {}
    for line in lines[header + 2 :]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in itertools.pairwise(edges)]
        rows[cells[1] if lines[header].startswith("rank") else cells[0]] = cells
    return rows


def test_headline_board_is_the_per_case_numbers(repo):
    text = board(repo)
    assert text.startswith(f"all tasks, headline (AP averaged over {'/'.join(map(str, BUDGETS))} rows)")
    ranked = table(text)
    assert set(ranked) == {"random", "occlusion", VERIFIED}
    for method, cells in ranked.items():
        assert cells[4].split()[0] == f"{expected_headline(repo, method):.3f}"
    assert ranked["occlusion"][0] == ranked[VERIFIED][0] and ranked["occlusion"][0].endswith("=")  # identical records
    unranked = table(text, "Not ranked:")
    assert unranked["attention"][3].startswith("incomplete") and unranked[HOSTILE][3].startswith("unverified")
    sanity = table(text, "Sanity (leak probes beside random):")
    gap = expected_headline(repo, "dev_lookup") - expected_headline(repo, "random")
    assert ("NOT at chance" in sanity["dev_lookup"][3]) == (abs(gap) > 0.05)


def test_it_prints_the_board_the_site_shows(repo, tmp_path):
    report = build_site(repo, tmp_path / "site", tasks_root=repo / "tasks", cases_per_model=0)
    index = parse(report.index)
    for scope in ("all", *TASKS):
        for view in ("headline", *map(str, BUDGETS)):
            printed = table(board(repo, "--scope", scope, "--budget", view))
            shown = board_rows(index, scope, view, "ranked")
            assert list(printed) == list(shown), (scope, view)  # same entries, same order
            for method, cells in printed.items():
                assert cells[0] == words(shown[method]["cells"][0]["text"])  # same rank, ties included
                assert float(cells[4].split()[0]) == pytest.approx(value(shown[method], 4), abs=5e-4)


def test_one_budget_and_markdown(repo):
    text = board(repo, "--scope", "alpha", "--budget", str(BUDGETS[0]))
    assert text.startswith(f"alpha, {BUDGETS[0]} rows per case")
    ranked = table(text)
    assert "attention" in ranked  # complete on alpha
    for method, cells in ranked.items():
        ap = np.mean([case_ap(repo, f"alpha/{m}", method, BUDGETS[0]).mean() for _, m in MODELS])
        assert cells[4].split()[0] == f"{ap:.3f}"
    markdown = board(repo, "--markdown").splitlines()
    assert "|---|---|" in "\n".join(markdown)
    assert any(line.startswith("| ") and f"| {VERIFIED} |" in line for line in markdown)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--scope", "nope"), 1, "unknown scope 'nope'"),
        (("--budget", "0"), 2, "'headline' or a budget"),
        (("--budget", "256"), 1, "no results at 256 rows per case"),
    ],
)
def test_bad_options_get_one_clear_line(repo, args, code, message):
    result = invoke("leaderboard", "--root", str(repo), "--tasks", str(repo / "tasks"), *args)
    assert result.exit_code == code and message in result.output and "Traceback" not in result.output


def test_the_leaderboard_imports_no_submission(repo):
    """In a fresh interpreter, so that nothing imported by other tests can hide or fake an import."""
    code = (
        "import sys\n"
        "from halbench.cli import cli\n"
        f"cli.main(args=['leaderboard', '--root', {str(repo)!r}, '--tasks', {str(repo / 'tasks')!r}], "
        "standalone_mode=False)\n"
        f"root = {str((repo / 'submissions').resolve())!r}\n"
        "print('FROM SUBMISSIONS:', [m for m, v in list(sys.modules.items()) "
        "if (getattr(v, '__file__', None) or '').startswith(root)])\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert VERIFIED in ran.stdout and "FROM SUBMISSIONS: []" in ran.stdout
    assert not [p for p in (repo / "submissions").rglob(MARKER)]
