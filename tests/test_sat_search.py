"""SAT's search core: the vectorised search must return exactly what the plain reference returns.

``reference_search`` is halbench's own plain port; the comparison with the upstream code's rules, transcribed
function by function from github.com/sunyiyou/SAT, is in ``tests/test_sat_fidelity.py``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from halbench.methods import sat_search
from halbench.methods.sat_search import (
    SearchResult,
    Subsequence,
    fast_search,
    per_token_scores,
    reference_search,
)

# --------------------------------------------------------------------------- fast == reference


@st.composite
def search_inputs(draw: st.DrawFn) -> dict:
    """Small prompts over a tiny vocabulary (tokens repeat, replacements hit prompt tokens), odd y."""
    length = draw(st.integers(3, 10))
    n_rows = draw(st.integers(1, 40))
    vocab = draw(
        st.lists(st.integers(-3, 2**21 + 5), min_size=1, max_size=5, unique=True)  # ids beyond a lookup table
        if draw(st.booleans())
        else st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True)
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    original = rng.choice(vocab, length)
    outside = max(vocab) + 1  # a replacement that is no prompt token
    pool = np.array([*vocab, outside])
    rate = draw(st.sampled_from([0.0, 0.3, 0.5, 0.9]))
    perturbed = np.where(rng.random((n_rows, length)) < rate, rng.choice(pool, (n_rows, length)), original)
    kind = draw(st.sampled_from(["float", "indicator", "constant", "few", "signed"]))
    y = {
        "float": rng.random(n_rows),
        "indicator": rng.integers(0, 2, n_rows).astype(float),
        "constant": np.full(n_rows, draw(st.sampled_from([0.0, 0.25, 1.0]))),
        "few": rng.choice([0.1, 0.2, 0.7], n_rows),
        "signed": rng.choice([-0.0, 0.0, -0.5, 0.5, 1e-17, 1.0], n_rows),
    }[kind]
    if draw(st.booleans()):
        positions = list(range(length))
    else:
        keep = rng.random(length) < 0.7
        keep[rng.integers(length)] = True
        positions = np.flatnonzero(keep).tolist()
    max_level = draw(st.one_of(st.none(), st.integers(0, length + 2)))
    return {
        "original": original,
        "perturbed": perturbed,
        "y": y,
        "positions": positions,
        "beam": draw(st.integers(1, 5)),
        "max_level": max_level,
        "shrinkage": draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 4.0])),
    }


@settings(max_examples=400, deadline=None)
@given(search_inputs())
def test_fast_equals_reference(case: dict) -> None:
    args = (case["original"], case["perturbed"], case["y"], case["positions"])
    options = {"beam": case["beam"], "max_level": case["max_level"], "shrinkage": case["shrinkage"]}
    ref = reference_search(*args, **options)
    fast = fast_search(*args, **options)
    assert fast == ref
    for a, b in zip(fast.levels, ref.levels, strict=True):  # bit for bit, not just ==
        assert a.scores.tobytes() == b.scores.tobytes()


def test_fast_equals_reference_on_a_larger_prompt() -> None:
    rng = np.random.default_rng(7)
    original = rng.integers(0, 12, 20)
    perturbed = np.where(rng.random((300, 20)) < 0.5, rng.integers(0, 16, (300, 20)), original)
    y = rng.random(300)
    assert fast_search(original, perturbed, y, beam=6) == reference_search(original, perturbed, y, beam=6)


# --------------------------------------------------------------------------- reference semantics


def _literal_expand(kept: list[tuple[int, ...]], s: list[int]) -> list[tuple[int, ...]]:
    """The reference's generate_candidates, literally: every occurrence of every kept candidate in s,
    extended by one index of s in every gap, deduplicated as token tuples, sorted."""
    out = set()
    for cand in kept:
        occurrences = [
            idx for idx in itertools.combinations(range(len(s)), len(cand)) if [s[i] for i in idx] == list(cand)
        ]
        for occ in occurrences:
            bounds = [-1, *occ, len(s)]
            for gap in range(len(cand) + 1):
                for new in range(bounds[gap] + 1, bounds[gap + 1]):
                    idx = [*occ[:gap], new, *occ[gap:]]
                    out.add(tuple(s[i] for i in idx))
    return sorted(out)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.data())
def test_gap_window_expansion_is_the_literal_one(s: list[int], data: st.DataObject) -> None:
    subsequences = sorted(
        {tuple(s[i] for i in idx) for k in range(len(s) + 1) for idx in itertools.combinations(range(len(s)), k)}
    )
    kept = data.draw(st.lists(st.sampled_from(subsequences), min_size=1, max_size=4, unique=True))
    assert sat_search._expand_reference(kept, s) == _literal_expand(kept, s)


def test_containment_is_by_token_not_by_kept_position() -> None:
    # the only 1s of the perturbed row sit where the prompt had a 2: "(1,)" is still contained
    result = reference_search([1, 2, 1], [[2, 1, 7]], [1.0], beam=3, max_level=2)
    level1 = dict(zip(map(tuple, result.levels[0].tokens.tolist()), result.levels[0].support.tolist(), strict=True))
    assert level1 == {(1,): 1, (2,): 1}
    level2 = dict(zip(map(tuple, result.levels[1].tokens.tolist()), result.levels[1].support.tolist(), strict=True))
    assert level2 == {(1, 1): 0, (1, 2): 0, (2, 1): 1}
    assert fast_search([1, 2, 1], [[2, 1, 7]], [1.0], beam=3, max_level=2) == result


def test_ties_follow_generation_order() -> None:
    # every candidate is in every row with the same y: all score 0.5, so ties decide everything
    original = [5, 3, 9]
    rows = [original] * 3
    for search in (reference_search, fast_search):
        result = search(original, rows, [0.5] * 3, beam=2)
        assert result.max_level == 3  # ceil(0.9 * 3)
        assert [t.tokens.tolist() for t in result.levels] == [
            [[3], [5], [9]],  # level 1: ascending token id
            [[3, 9], [5, 3], [5, 9]],  # next levels: lexicographic, from the kept (3,) and (5,)
            [[5, 3, 9]],
        ]
        assert [t.order.tolist() for t in result.levels] == [[0, 1, 2], [0, 1, 2], [0]]
        assert [(sub.tokens, sub.positions, sub.level) for sub in result.ranked] == [
            ((3,), (1,), 1),
            ((5,), (0,), 1),
            ((3, 9), (1, 2), 2),
            ((5, 3), (0, 1), 2),
            ((5, 3, 9), (0, 1, 2), 3),
        ]
        assert result.best == result.ranked[0]  # first level reaching the best score


def _planted(seed: int = 0, n_rows: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct prompt tokens, replacements outside the prompt; y = 1 iff positions 2 and 5 are kept."""
    rng = np.random.default_rng(seed)
    original = np.arange(10, 18)
    replaced = rng.random((n_rows, 8)) < 0.5
    perturbed = np.where(replaced, rng.integers(100, 110, (n_rows, 8)), original)
    y = (~replaced[:, 2] & ~replaced[:, 5]).astype(float)
    return original, perturbed, y


def test_planted_pair_is_the_answer() -> None:
    original, perturbed, y = _planted()
    for search in (reference_search, fast_search):
        result = search(original, perturbed, y, beam=5)
        assert result.best is not None
        assert result.best.positions == (2, 5)
        assert result.best.tokens == (12, 15)
        assert result.best.score == 1.0
        assert result.best.level == 2
        assert result.best.support == int(y.sum())
        assert result.ranked[0] == result.best
        assert [sub.score for sub in result.ranked] == sorted((sub.score for sub in result.ranked), reverse=True)


def test_fixed_positions_are_never_used() -> None:
    original = np.array([0, 4, 5, 4])  # position 0: a BOS marker
    rng = np.random.default_rng(1)
    perturbed = np.where(rng.random((30, 4)) < 0.5, rng.integers(0, 7, (30, 4)), original)
    perturbed[:, 0] = 0
    y = rng.random(30)
    result = fast_search(original, perturbed, y, positions=[1, 2, 3], beam=3)
    assert result == reference_search(original, perturbed, y, positions=[1, 2, 3], beam=3)
    assert result.levels[0].tokens.ravel().tolist() == [4, 5]
    assert all(0 not in sub.positions for sub in result.ranked)
    assert result.max_level == math.ceil(0.9 * 3)


def test_fixed_tokens_never_complete_a_candidate() -> None:
    # the query word 4 at fixed position 3 repeats the content's 4: only the editable part is searched,
    # as upstream searches the raw prompt without its template, so (3, 4) is absent where its 4 was replaced
    original = [7, 3, 4, 4]
    perturbed = [[7, 3, 9, 4], [7, 3, 4, 4]]
    for search in (reference_search, fast_search):
        result = search(original, perturbed, [1.0, 0.0], positions=[1, 2], beam=3)
        level2 = dict(zip(map(tuple, result.levels[1].tokens.tolist()), result.levels[1].support.tolist(), strict=True))
        assert level2 == {(3, 4): 1}
        assert result.best is not None and result.best.tokens == (3,)


def test_degenerate_levels() -> None:
    original, perturbed, y = _planted(n_rows=20)
    for search in (reference_search, fast_search):
        assert search(original, perturbed, y, max_level=0) == SearchResult([], None, [], 0)
        deep = search(original, perturbed, y, max_level=20, beam=2)
        assert len(deep.levels) == 8  # the prompt has 8 tokens: level 9 has no candidate
        no_signal = search(original, perturbed, np.zeros(20), beam=2)
        assert no_signal.best is None


@pytest.mark.parametrize(
    ("original", "perturbed", "y", "positions"),
    [
        ([], [[]], [1.0], None),
        ([1, 2], [[1, 2, 3]], [1.0], None),
        ([1, 2], [[1, 2]], [1.0, 0.0], None),
        ([1, 2], [[1, 2]], [float("nan")], None),
        ([1, 2], [[1.5, 2]], [1.0], None),
        ([1, 2], [[1, 2]], [1.0], [1, 0]),
        ([1, 2], [[1, 2]], [1.0], [2]),
        ([1, 2], [[1, 2]], [1.0], []),
    ],
)
def test_bad_inputs_are_refused(original: list, perturbed: list, y: list, positions: list | None) -> None:
    for search in (reference_search, fast_search):
        with pytest.raises(ValueError):
            search(original, perturbed, y, positions)


def test_column_sums_round_like_a_loop() -> None:
    rng = np.random.default_rng(3)
    for shape in [(0, 3), (1, 1), (300, 1), (300, 2), (129, 7)]:
        values = rng.random(shape) * 10.0 ** rng.integers(-20, 5, shape)
        expected = []
        for col in values.T:
            total = 0.0
            for value in col:
                total += value
            expected.append(total)
        assert sat_search._column_sums(values).tolist() == expected
    assert sat_search._reduce_is_sequential()  # the fast path is the one in use on this numpy


# --------------------------------------------------------------------------- per_token_scores


def test_per_token_scores_follow_the_ranking() -> None:
    ranked = [
        Subsequence((3, 5), (0, 0), 0.9, 4, 2),
        Subsequence((1, 3, 5), (0, 0, 0), 0.8, 2, 3),
        Subsequence((0,), (0,), 0.8, 9, 1),
        Subsequence((1, 2), (0, 0), 0.7, 3, 2),
    ]
    result = SearchResult(ranked, ranked[0], [], 3)
    scores = per_token_scores(result, 8)
    # 3 and 5 (best subsequence; 3 used twice, 5 used twice: tie -> position), then 1 (rank 1),
    # then 0 (rank 2), then 2 (rank 3), then the unused 4, 6, 7 by position
    assert np.argsort(-scores, kind="stable").tolist() == [3, 5, 1, 0, 2, 4, 6, 7]
    assert scores.tolist() == [5 / 8, 6 / 8, 4 / 8, 1.0, 3 / 8, 7 / 8, 2 / 8, 1 / 8]
    with pytest.raises(ValueError):
        per_token_scores(result, 5)


def test_per_token_scores_put_the_planted_pair_first() -> None:
    original, perturbed, y = _planted()
    scores = per_token_scores(fast_search(original, perturbed, y, beam=5), 8)
    assert set(np.argsort(-scores)[:2].tolist()) == {2, 5}
    assert len(set(scores.tolist())) == 8
    assert scores.min() > 0.0 and scores.max() == 1.0
    empty = per_token_scores(SearchResult([], None, [], 0), 4)
    assert empty.tolist() == [1.0, 0.75, 0.5, 0.25]
