"""SAT against the reference code's own rules (github.com/sunyiyou/SAT), not against halbench's port of them.

The first half transcribes the reference's search and answer rule (``utils/subseq.py`` and
``SubsequenceCausalAnalyzer.compute_probability`` / ``analyze_subsequences`` in ``utils/causal_analyzer.py``)
function by function, loop by loop, so that a reader can hold each function beside its upstream namesake;
only printing, timing and unused branches are left out. Halbench's :func:`fast_search` must then return
exactly what the transcription returns: every candidate of every level with its score (bit for bit), each
beam, each level's top, and the answer. The one documented difference, the order of the first level's
candidates (upstream iterates a Python ``set``), is a hook of the transcription: left as the literal set
where that set iterates in ascending order, replaced by ascending order elsewhere, and shown to matter only
through ties.

The second half checks the perturbations (``utils/perturbation.py``: ``rgrand``, the neighbour filters)
and the sampled-text mode.
"""

from __future__ import annotations

import dataclasses
import gc
import math
from collections.abc import Callable

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from halbench.methods import sat as sat_module
from halbench.methods import sat_reference
from halbench.methods.base import MethodError, get_method, masked_scores
from halbench.methods.sat_reference import (
    ReferenceReplacer,
    clean_token,
    contains_target,
    filter_candidates,
    perturbation_mask,
    reference_replacer,
    token_category,
)
from halbench.methods.sat_search import fast_search, per_token_scores
from halbench.replacements import Replacements
from halbench.scoring import Scorer

from .tiny import make_tiny_instance

# =========================================================================== the reference, transcribed
# utils/subseq.py


def is_subsequence(subseq, sequence) -> bool:
    """Two pointers: advance in ``subseq`` on a match, always advance in ``sequence``."""
    i, j = 0, 0
    while i < len(subseq) and j < len(sequence):
        if subseq[i] == sequence[j]:
            i += 1
        j += 1
    return i == len(subseq)


def count_occurrences(sequences, candidate) -> int:
    """Number of sequences that contain ``candidate`` as a (non-contiguous) subsequence."""
    count = 0
    for seq in sequences:
        if is_subsequence(candidate, seq):
            count += 1
    return count


def find_subsequence_occurrences(c, s) -> list[list[int]]:
    """Every index list of ``s`` spelling ``c``, by backtracking: skip ``s[start]`` first, then use it."""
    results: list[list[int]] = []

    def backtrack(start: int, matched: int, chosen: list[int]) -> None:
        if matched == len(c):
            results.append(chosen[:])
            return
        if start >= len(s):
            return
        backtrack(start + 1, matched, chosen)
        if s[start] == c[matched]:
            chosen.append(start)
            backtrack(start + 1, matched + 1, chosen)
            chosen.pop()

    backtrack(0, 0, [])
    return results


def expand_by_one(s, subseq_indices) -> list[tuple]:
    """Insert one index of ``s`` into each gap of ``subseq_indices`` (before, between, after); as tokens."""
    expansions = []
    k = len(subseq_indices)
    bounds = [-1, *subseq_indices, len(s)]
    for gap in range(k + 1):
        for m in range(bounds[gap] + 1, bounds[gap + 1]):
            new_indices = [*subseq_indices[:gap], m, *subseq_indices[gap:]]
            expansions.append(tuple(s[idx] for idx in new_indices))
    return expansions


def generate_candidates(prev_level_candidates, s) -> list[tuple]:
    """All one-longer token tuples from every occurrence of every kept candidate; a sorted set."""
    new_candidates = set()
    for cand in prev_level_candidates:
        for occ_indices in find_subsequence_occurrences(cand, s):
            for expansion in expand_by_one(s, occ_indices):
                new_candidates.add(expansion)
    return sorted(new_candidates)


def most_frequent_subsequence(sequences, k, s, beam, scoring_func, first_level: Callable | None = None):
    """Level-by-level beam search; returns (best at length k, its score, every level's scores).

    ``first_level`` is halbench's hook on the one order upstream leaves to CPython: the level-1 candidates
    come from ``set(s)``; the hook may reorder them (None: the set's own order).
    """
    all_items = set(s)
    level_candidates = [(item,) for item in all_items]
    if first_level is not None:
        level_candidates = first_level(level_candidates)
    best_subsequence = None
    best_count = 0
    all_frequencies = {}
    current_length = 1
    while current_length <= k and level_candidates:
        freq_dict = {}
        for cand in level_candidates:
            freq = scoring_func(cand)
            freq_dict[cand] = freq
            if freq > best_count and len(cand) == k:
                best_count = freq
                best_subsequence = cand
        all_frequencies[current_length] = freq_dict
        if current_length == k:
            break
        kept_items = sorted(freq_dict.items(), key=lambda x: x[1], reverse=True)[:beam]
        level_candidates = generate_candidates([c for c, _ in kept_items], s)
        current_length += 1
    return best_subsequence, best_count, all_frequencies


# utils/causal_analyzer.py (SubsequenceCausalAnalyzer)


def compute_probability(subsequence, perturbed_sequences, target_subseq_sequences) -> float:
    """p(yh | xs) = (co_freq / N) / (xs_freq / N); 0 when no perturbed prompt contains the subsequence."""
    xs_freq = count_occurrences(perturbed_sequences, subsequence)
    co_freq = count_occurrences(target_subseq_sequences, subsequence)
    if xs_freq == 0:
        return 0
    pxs = xs_freq / len(perturbed_sequences)
    pxsyh = co_freq / len(perturbed_sequences)
    return pxsyh / pxs


def analyze_subsequences(raw_sequence, perturbed_sequences, hallucinated, beam, max_subseq_len_rate=0.9, **hook):
    """Steps 4 to 7 of upstream's pipeline, given the perturbed prompts and which of them hallucinated."""
    indices = [i for i, hit in enumerate(hallucinated) if hit]
    yh_sequences = [perturbed_sequences[i] for i in indices]

    def condition_prob(seq):
        return compute_probability(seq, perturbed_sequences, yh_sequences)

    _, _, all_x_subseqs = most_frequent_subsequence(
        yh_sequences,
        math.ceil(max_subseq_len_rate * len(raw_sequence)),
        raw_sequence,
        beam=beam,
        scoring_func=condition_prob,
        **hook,
    )
    most_frequent_sequence = None
    highest_score = 0
    freq_sequence_at_level = {}
    for level, subseqs in all_x_subseqs.items():
        freq_sequence, score = sorted(subseqs.items(), key=lambda x: x[1], reverse=True)[0]
        freq_sequence_at_level[level] = (freq_sequence, score)
        if score > highest_score:
            highest_score = score
            most_frequent_sequence = freq_sequence
    return {
        "freq_sequence_at_level": freq_sequence_at_level,
        "best_sequence": most_frequent_sequence,
        "best_score": highest_score,
        "all_x_subseqs": all_x_subseqs,
    }


# =========================================================================== halbench against it


@st.composite
def traced_prompts(draw: st.DrawFn, wide: bool) -> dict:
    """A prompt (repeated tokens likely), fixed markers around it that may reuse its tokens, perturbed
    prompts made by halbench's own masks with replacements inside and outside the prompt, and 0/1
    hallucinations, either random or planted on kept positions (so some candidates clearly win)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_editable = draw(st.integers(1, 10))
    vocab = rng.choice(60_000, size=5, replace=False) if wide else rng.choice(8, size=5, replace=False)
    vocab = vocab[: draw(st.integers(1, 5))]
    content = rng.choice(vocab, n_editable)
    head, tail = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    markers = rng.choice([*vocab, 60_001], head + tail)  # fixed tokens, some equal to content tokens
    original = np.concatenate([markers[:head], content, markers[head:]]).astype(np.int64)
    editable = list(range(head, head + n_editable))
    n_rows = draw(st.integers(1, 40))
    mode = draw(st.sampled_from(["rgrand", "bernoulli"]))
    mask = perturbation_mask(rng, n_rows, original.size, editable, draw(st.sampled_from([0.3, 0.5, 0.9])), mode)
    pool = np.array([*vocab, 60_002, 60_003])
    perturbed = np.where(mask, rng.choice(pool, mask.shape), original)
    if draw(st.booleans()):
        y = rng.integers(0, 2, n_rows).astype(float)
    else:
        planted = rng.choice(editable, min(n_editable, draw(st.integers(1, 2))), replace=False)
        y = (~mask[:, planted]).all(1).astype(float)
        flip = rng.random(n_rows) < 0.1  # a little noise
        y[flip] = 1.0 - y[flip]
    return {"original": original, "editable": editable, "perturbed": perturbed, "y": y, "beam": draw(st.integers(1, 5))}


def _upstream(case: dict, first_level: Callable | None) -> dict:
    """The transcription on what upstream would see: the raw (editable) prompt and its perturbed copies."""
    pos = case["editable"]
    raw = [int(t) for t in case["original"][pos]]
    rows = [[int(t) for t in row] for row in case["perturbed"][:, pos]]
    return analyze_subsequences(raw, rows, case["y"] == 1.0, case["beam"], first_level=first_level)


def _halbench(case: dict):
    return fast_search(case["original"], case["perturbed"], case["y"], case["editable"], beam=case["beam"])


def _assert_same(ours, upstream: dict, level_one: str = "ordered") -> None:
    """Everything agrees. ``level_one``: ``"ordered"`` (same candidates in the same order), ``"as_set"`` (the
    same candidates and scores, in any order), or ``"only"`` (compare the first level's scores, nothing else)."""
    levels = upstream["all_x_subseqs"]
    first = ours.levels[0]
    assert dict(zip(map(tuple, first.tokens.tolist()), first.scores.tolist(), strict=True)) == levels[1]
    if level_one == "only":
        return
    assert [t.level for t in ours.levels] == list(levels)
    for table in ours.levels:
        theirs = levels[table.level]
        mine = list(zip(map(tuple, table.tokens.tolist()), table.scores.tolist(), strict=True))
        if table.level > 1 or level_one == "ordered":
            assert mine == list(theirs.items())  # same candidates, same order, same float scores
        beam = sorted(theirs.items(), key=lambda x: x[1], reverse=True)[: table.kept]
        assert [mine[k] for k in table.order[: table.kept].tolist()] == beam
        top = mine[int(table.order[0])]
        assert top == upstream["freq_sequence_at_level"][table.level]
    if upstream["best_sequence"] is None:
        assert ours.best is None
    else:
        assert ours.best is not None
        assert (ours.best.tokens, ours.best.score) == (upstream["best_sequence"], upstream["best_score"])


@settings(max_examples=300, deadline=None)
@given(traced_prompts(wide=False))
def test_search_is_the_reference_literally(case: dict) -> None:
    """Token ids below 8: CPython iterates such a set in ascending order, the order halbench uses."""
    content = case["original"][case["editable"]].tolist()
    assert list(set(content)) == sorted(set(content))
    _assert_same(_halbench(case), _upstream(case, first_level=None))


@settings(max_examples=150, deadline=None)
@given(traced_prompts(wide=True))
def test_search_is_the_reference_with_level_one_ascending(case: dict) -> None:
    """Real token ids: with the first level in ascending order (halbench's documented choice), all agrees."""
    _assert_same(_halbench(case), _upstream(case, first_level=sorted))


@settings(max_examples=150, deadline=None)
@given(traced_prompts(wide=True))
def test_level_one_order_only_breaks_ties(case: dict) -> None:
    """With upstream's literal set order, the first level's scores agree, and everything does without ties."""
    ours, upstream = _halbench(case), _upstream(case, first_level=None)
    level_one = list(upstream["all_x_subseqs"][1].values())
    tied = len(set(level_one)) < len(level_one)
    _assert_same(ours, upstream, level_one="only" if tied else "as_set")
    if tied:  # then the order decides the beam and the answer: upstream in ascending order agrees again
        _assert_same(ours, _upstream(case, first_level=sorted))


def test_transcription_on_upstreams_own_example() -> None:
    """Sanity of the transcription itself; upstream's docstring example, in the order its code finds them."""
    assert find_subsequence_occurrences(("A", "D"), ("A", "B", "A", "D")) == [[2, 3], [0, 3]]
    assert generate_candidates([(1,)], [1, 2, 1]) == [(1, 1), (1, 2), (2, 1)]
    assert compute_probability((1, 2), [[1, 2], [2, 1], [1, 3, 2]], [[1, 2]]) == 0.5
    assert compute_probability((9,), [[1, 2]], []) == 0


# =========================================================================== perturbations


def test_rgrand_draws_k_uniformly_then_positions_uniformly() -> None:
    rng = np.random.default_rng(0)
    editable = list(range(2, 12))  # E = 10, fixed 0, 1 and 12
    mask = perturbation_mask(rng, 20_000, 13, editable, 0.5, "rgrand")
    assert not mask[:, [0, 1, 12]].any()
    k = mask.sum(1)
    counts = np.bincount(k, minlength=7)
    assert counts[0] == 0 and counts[6] == 0  # k in 1..floor(0.5 * 10)
    assert np.all(np.abs(counts[1:6] - 4000) < 5 * math.sqrt(4000 * 0.8))
    share = mask[:, editable].mean(0)  # E[k] / E = 3 / 10 at every position
    assert np.all(np.abs(share - 0.3) < 5 * math.sqrt(0.3 * 0.7 / 20_000))


@pytest.mark.parametrize(("n_editable", "rate", "most"), [(1, 0.5, 1), (5, 0.1, 1), (7, 0.5, 3), (9, 1.0, 9)])
def test_rgrand_and_rgfix_sizes(n_editable: int, rate: float, most: int) -> None:
    rng = np.random.default_rng(1)
    editable = list(range(n_editable))
    k = perturbation_mask(rng, 4000, n_editable, editable, rate, "rgrand").sum(1)
    assert k.min() == 1 and k.max() == most
    assert np.all(perturbation_mask(rng, 50, n_editable, editable, rate, "rgfix").sum(1) == most)


def test_bernoulli_mask_is_the_scorers() -> None:
    editable = [1, 2, 3, 5]
    mask = perturbation_mask(np.random.default_rng(4), 64, 7, editable, 0.5, "bernoulli")
    allowed = np.zeros(7, dtype=bool)
    allowed[editable] = True
    assert np.array_equal(mask, (np.random.default_rng(4).random((64, 7)) < 0.5) & allowed)
    with pytest.raises(ValueError, match="unknown perturbation mode"):
        perturbation_mask(np.random.default_rng(4), 2, 7, editable, 0.5, "rand")


@pytest.mark.parametrize(
    ("token", "category"),
    [("123", "digit"), ("Paris", "identifier"), ("word", "identifier"), ("1st", "alphanumeric_mixed"),
     ("  ", "whitespace"), ("\n", "whitespace"), ("+=", "operator"), ("(", "bracket"), (".", "punctuation"),
     ("", "unknown"), ("--", "unknown"), ("é", "identifier")],
)  # fmt: skip
def test_token_category(token: str, category: str) -> None:
    assert token_category(token) == category


def test_clean_token_maps_space_markers() -> None:
    assert clean_token("ĠParis") == " Paris" and clean_token("Ċ") == "\n" and clean_token("▁Paris") == " Paris"
    assert clean_token("<|endoftext|>") == "<EOS>"


class _Strings:
    """A stand-in tokenizer: ``decode([i])`` is the i-th string."""

    def __init__(self, strings: list[str]):
        self.strings = strings

    def decode(self, ids: list[int]) -> str:
        return "".join(self.strings[i] for i in ids)


_VOCAB = [" Paris", "paris", " Parisian", "Par", " London", " london", "<|endoftext|>", " 42", ",", " Rome",
          "Berlin", " 1st", " Vienna"]  # fmt: skip


def _ranked_replacements(pool: list[int]) -> Replacements:
    """Token i sits at angle 0.1 * i on the unit circle: cosine to token 0 falls with i."""
    angles = 0.1 * torch.arange(len(_VOCAB), dtype=torch.float32)
    return Replacements(torch.stack([angles.cos(), angles.sin()], 1), pool)


def test_reference_filters() -> None:
    pool = [i for i in range(len(_VOCAB)) if i != 9]  # " Rome" is a special token here
    allowed = np.isin(np.arange(len(_VOCAB)), pool)
    ranked = list(range(len(_VOCAB)))
    text = dict(enumerate(_VOCAB))
    # dropped: itself, "paris" and " Parisian" (contain it), "Par" (contained), " london" (same normal form as
    # " London"), end of text, " 42" (digit), "," (punctuation), " Rome" (special), " 1st" (other class)
    assert filter_candidates(" Paris", ranked, text, allowed).tolist() == [4, 10, 12]
    assert filter_candidates("ĠParis", ranked, text, allowed).tolist() == [4, 10, 12]
    assert filter_candidates(" 1st", ranked, text, allowed).tolist() == []  # " 1st" is itself the only one
    assert filter_candidates(" 7", ranked, text, allowed).tolist() == [7]


def test_reference_replacer_takes_the_top_k_first() -> None:
    reps = _ranked_replacements(list(range(len(_VOCAB))))
    assert reps.nearest(0, 5).tolist() == [0, 1, 2, 3, 4]  # itself included, most similar first
    tok = _Strings(_VOCAB)
    assert ReferenceReplacer(reps, tok, top_k=5).candidates(0).tolist() == [4]
    assert ReferenceReplacer(reps, tok, top_k=50).candidates(0).tolist() == [4, 9, 10, 12]
    shared = reference_replacer(reps, tok, 50)
    assert reference_replacer(reps, tok, 50) is shared and reference_replacer(reps, tok, 5) is not shared
    with pytest.raises(ValueError, match="tokenizer"):
        reference_replacer(reps, None)


def test_replacer_leaves_positions_without_candidates() -> None:
    reps = _ranked_replacements(list(range(len(_VOCAB))))
    replacer = ReferenceReplacer(reps, _Strings(_VOCAB), top_k=50)
    prompt = np.array([0, 11, 8])  # " Paris" has candidates; " 1st" and "," have none
    rows = replacer.sample(np.random.default_rng(0), prompt, np.ones((200, 3), dtype=bool))
    assert set(rows[:, 0].tolist()) == {4, 9, 10, 12}
    assert np.all(rows[:, 1:] == prompt[1:])


def test_contains_target_ignores_case() -> None:
    texts = ["He was born in PARIS.", "born in Lyon", "", "parisian"]
    assert contains_target(texts, "Paris").tolist() == [True, False, False, True]


def test_responses_end_at_the_first_eos() -> None:
    generated = np.array([[5, 2, 7, 8], [5, 6, 7, 8], [2, 9, 9, 9]])
    assert sat_module._until_end(generated, 2).tolist() == [[5, 2, 2, 2], [5, 6, 7, 8], [2, 2, 2, 2]]
    assert sat_module._until_end(generated, None).tolist() == generated.tolist()


# =========================================================================== the method on a tiny model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from halbench.tasks.bundle import load_bundle

    return load_bundle(make_tiny_instance(tmp_path_factory.mktemp("tiny"), cases=4, dev=0), device="cpu")


def _captured(monkeypatch) -> list[dict]:
    """Calls of the search made by ``sat`` (its perturbed prompts and hallucination values)."""
    calls: list[dict] = []

    def spy(original, perturbed, y, positions, **options):
        calls.append({"perturbed": np.asarray(perturbed), "y": np.asarray(y)})
        return fast_search(original, perturbed, y, positions, **options)

    monkeypatch.setattr(sat_module, "fast_search", spy)
    return calls


def test_defaults_perturb_as_the_reference(tiny, monkeypatch) -> None:
    calls = _captured(monkeypatch)
    record = tiny.cases()[0]
    scorer = tiny.scorer(record, budget=64)
    attribution = get_method("sat").attribute(scorer.case, scorer, np.random.default_rng(0))
    attribution.validate(scorer.case)
    assert scorer.cost.rows == 64 and attribution.extras["perturbations"] == 64
    prompt, editable = scorer.prompt, list(scorer.case.editable)
    changed = calls[0]["perturbed"] != prompt
    fixed = np.setdiff1d(np.arange(prompt.size), editable)
    assert not changed[:, fixed].any()
    assert changed.sum(1).min() >= 1 and changed.sum(1).max() <= max(1, len(editable) // 2)
    replacer = reference_replacer(tiny.replacements, tiny.tokenizer)
    for row, where in zip(calls[0]["perturbed"], changed, strict=True):
        for p in np.flatnonzero(where):
            assert row[p] in set(replacer.candidates(int(prompt[p])).tolist())


def test_bernoulli_with_a_shared_strategy_perturbs_as_before(tiny) -> None:
    record = tiny.cases()[1]
    scorer = tiny.scorer(record, budget=64)
    ours = get_method("sat", mode="bernoulli", replacement=None).attribute(
        scorer.case, scorer, np.random.default_rng(5)
    )
    before = tiny.scorer(record, budget=64)
    rng = np.random.default_rng(5)
    perturbed, _ = before.perturb(rng, 64, 0.5, None)
    result = fast_search(before.prompt, perturbed, before.target_prob(perturbed), list(before.case.editable))
    assert np.array_equal(ours.scores, masked_scores(per_token_scores(result, before.case.length), before.case))


def test_other_strategies_and_refusals(tiny) -> None:
    record = tiny.cases()[2]
    for replacement in ("unigram", "neighbours", "mask"):
        scorer = tiny.scorer(record, budget=32)
        get_method("sat", replacement=replacement).attribute(scorer.case, scorer, np.random.default_rng(0))
        assert scorer.cost.rows == 32
    bare = Scorer(tiny.model, scorer.case, tiny.replacements, budget=32)  # no tokenizer: no token strings
    with pytest.raises(ValueError, match="tokenizer"):
        get_method("sat").attribute(bare.case, bare, np.random.default_rng(0))
    for bad in ({"mode": "rand"}, {"replacement": "bert"}):
        with pytest.raises(MethodError):
            get_method("sat", **bad).attribute(bare.case, bare, np.random.default_rng(0))


@pytest.mark.parametrize(("target", "expected"), [("W0", 1.0), ("zzz", 0.0)])
def test_text_mode_samples_and_matches_strings(tiny, monkeypatch, target: str, expected: float) -> None:
    calls = _captured(monkeypatch)
    record = tiny.cases()[3]
    case = dataclasses.replace(tiny.scorer(record).case, target_text=target)
    scorer = Scorer(tiny.model, case, tiny.replacements, budget=2 * 3 * 8 + 5, tokenizer=tiny.tokenizer)
    sat = get_method("sat", samples=2, max_new_tokens=3)
    attribution = sat.attribute(case, scorer, np.random.default_rng(0))
    assert attribution.extras["perturbations"] == 8  # one row per generated token per sample
    assert scorer.cost.rows == 8 * 2 * 3
    y = calls[0]["y"]
    assert y.shape == (8,) and set(np.unique(y * 2).tolist()) <= {0.0, 1.0, 2.0}
    # every response of three tiny-model tokens holds some "w0.." word unless all three are special tokens
    assert abs(y.mean() - expected) <= 0.15
    if expected == 0.0:
        assert attribution.subsequence is None


def test_without_target_text_sampling_matches_ids(tiny) -> None:
    record = tiny.cases()[0]
    scorer = tiny.scorer(record, budget=40)  # a word-level case: no target_text
    attribution = get_method("sat", samples=4).attribute(scorer.case, scorer, np.random.default_rng(0))
    assert attribution.extras["perturbations"] == 40 // (4 * len(record["target_ids"]))


def test_shared_replacers_go_with_their_replacements() -> None:
    """The shared cache holds replacers weakly by their replacements: no model's tables outlive it."""
    before = len(sat_reference._REPLACERS)
    reps = _ranked_replacements(list(range(len(_VOCAB))))
    reference_replacer(reps, _Strings(_VOCAB)).candidates(0)
    assert len(sat_reference._REPLACERS) == before + 1
    del reps
    gc.collect()
    assert len(sat_reference._REPLACERS) == before
