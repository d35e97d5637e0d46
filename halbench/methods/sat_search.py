"""The search core of SAT, the subsequence-association tracer of Sun et al. (NeurIPS 2025), twice.

Why two implementations: :func:`reference_search` is a plain-loop port that can be read line by line
against the reference code (github.com/sunyiyou/SAT) and trusted; :func:`fast_search` is the one to
run (numpy, two to three orders of magnitude faster), and the tests hold it to *exact* equality with
the plain one: same candidates in the same order, bit-identical scores, same ties.

Semantics (reference file and function in brackets)
---------------------------------------------------
* ``s`` is the original prompt restricted to the editable ``positions`` (the reference searches the
  raw prompt without chat template, so it has no fixed markers; ``positions`` generalises that).
  Candidates are TOKEN tuples, never position tuples.
* Level 1 scores every distinct token of ``s`` (``utils/subseq.py: most_frequent_subsequence``,
  ``[(item,) for item in set(s)]``). The reference iterates a Python ``set``, whose order is an
  implementation detail; here it is ascending token id (CPython's order for small non-negative
  ids; for large ids the reference's tie order at level 1 is arbitrary).
* A candidate ``c`` is *contained* in a perturbed prompt when it is an ordered, not necessarily
  contiguous, subsequence of the row's editable positions, tokens compared by value (``is_subsequence``,
  ``count_occurrences``). The reference's rows are the raw prompt, its chat template added only to
  generate; halbench's fixed positions play the template's part, so they are left out of the rows too
  (else a query word after the content, like ``in`` of "was born in", would complete every candidate
  ending in ``in``). With repeated tokens, or a replacement equal to another prompt token, containment
  differs from "all of c's positions were kept"; that is the reference's behaviour and it is kept.
* Score (``utils/causal_analyzer.py: SubsequenceCausalAnalyzer.compute_probability``):
  with ``count`` the number of containing prompts, ``total`` the sum of their ``y`` added left to
  right in prompt order and ``N`` the number of prompts, ``score = (total / N) / (count / N)``, and
  ``0.0`` when ``count == 0``. With indicator ``y`` this is the reference's ``p(yh | xs)``
  (``co_freq / N`` over ``xs_freq / N``); with probabilities it is their mean over the containing
  prompts. The float expression is the reference's, so ties break the same way. The reference has
  no minimum support: an uncontained candidate simply scores 0.
* Beam (``most_frequent_subsequence``): the scored candidates of a level are sorted by score,
  descending, with a stable sort (ties keep generation order); the first ``beam`` are kept.
  The level ``max_level = ceil(0.9 * len(s))`` (``analyze_subsequences``'s ``max_subseq_len_rate``)
  is scored and not expanded; the search also stops when a level has no candidate.
* Expansion (``generate_candidates``, ``find_subsequence_occurrences``, ``expand_by_one``): for each
  kept candidate, every occurrence of it in ``s`` is extended by one position of ``s`` in any gap;
  the next level is the set of resulting token tuples, sorted lexicographically. Enumerating the
  occurrences is exponential with repeated tokens, so both implementations use the equivalent
  rule: ``c[:i] + (u,) + c[i:]`` is generated iff ``s[q] == u`` for some ``q`` with
  ``lm(c[:i]) <= q < rm(c[i:])``, where ``lm`` is the end of the leftmost match of a prefix in ``s``
  and ``rm`` the start of the rightmost match of a suffix (tests check it against the literal rule).
* Answer (``analyze_subsequences``): per level the top candidate (first of the sorted list); the
  overall best is the first level whose top score is strictly above all earlier ones and above 0
  (``None`` if no score is positive).

Returned: every scored candidate per level (:class:`LevelTable`), the ranked list of the kept
(beam) candidates of all levels (score descending, then level, then rank in level), each with the
original positions of its leftmost match in ``s``, and the reference's answer.

Fast algorithm: the tokens of ``s`` become a small alphabet. For every row (each perturbed prompt,
``s`` itself, and a dead row) two transition tables, NEXT (first ``u`` at or after ``p``) and PREV
(last ``u`` before ``q``), are stored as flat state offsets, so advancing a state is one gather.
Each kept candidate carries, in ``s`` and in every prompt that contains it, the state after each of
its prefixes (leftmost match) and before each of its suffixes (rightmost match). A child
``c[:i] + (u,) + c[i:]`` is in a row iff ``NEXT[lm(c[:i]), u] < rm(c[i:])``, and it can only be
where ``c`` is, so only the parent's containing prompts are checked, as one ``[slots, children]``
block: a few gathers and a comparison per (child, prompt). Supports are column counts; totals are
column sums that add row after row, the reference's left-to-right loop, hence bit-identical. The
same tables on ``s`` give each gap's window of insertable positions; children are packed into int64
words for the lexicographic sort and deduplication.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = [
    "LevelTable",
    "SearchResult",
    "Subsequence",
    "fast_search",
    "per_token_scores",
    "reference_search",
]


class Subsequence(NamedTuple):
    """One kept candidate: the original positions of its leftmost match in ``s``, its tokens, stats."""

    positions: tuple[int, ...]
    tokens: tuple[int, ...]
    score: float
    support: int
    level: int


@dataclass(eq=False)
class LevelTable:
    """All candidates scored at one level, in generation order (lexicographic by tokens).

    ``order`` is the stable score-descending order; its first ``kept`` entries form the beam.
    """

    level: int
    tokens: np.ndarray  # [M, level] int64
    scores: np.ndarray  # [M] float64
    support: np.ndarray  # [M] int64
    order: np.ndarray  # [M] int64
    kept: int

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LevelTable):
            return NotImplemented
        return (
            self.level == other.level
            and self.kept == other.kept
            and np.array_equal(self.tokens, other.tokens)
            and self.scores.dtype == other.scores.dtype == np.float64
            and np.array_equal(self.scores.view(np.uint64), other.scores.view(np.uint64))
            and np.array_equal(self.support, other.support)
            and np.array_equal(self.order, other.order)
        )


@dataclass
class SearchResult:
    """What a search returns; ``best`` is the reference's answer (``analyze_subsequences``)."""

    ranked: list[Subsequence]
    best: Subsequence | None
    levels: list[LevelTable]
    max_level: int


@dataclass(frozen=True)
class _Inputs:
    original: np.ndarray  # [L] int64
    perturbed: np.ndarray  # [N, L] int64
    y: np.ndarray  # [N] float64, finite, no negative zero
    positions: np.ndarray  # [E] int64, strictly increasing
    beam: int
    max_level: int


def _prepare(
    original: Sequence[int] | np.ndarray,
    perturbed: Sequence[Sequence[int]] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    positions: Sequence[int] | np.ndarray | None,
    beam: int,
    max_level: int | None,
    max_level_rate: float,
    shrinkage: float = 0.0,
) -> _Inputs:
    """Check the inputs and normalise dtypes; ``max_level`` defaults to ``ceil(rate * len(s))``."""
    orig = np.asarray(original)
    rows = np.asarray(perturbed)
    if orig.ndim != 1 or orig.size == 0 or not np.issubdtype(orig.dtype, np.integer):
        raise ValueError("original must be a non-empty 1-D integer array")
    if rows.ndim != 2 or rows.shape[1] != orig.size or rows.shape[0] == 0:
        raise ValueError("perturbed must be [N >= 1, len(original)]")
    if not np.issubdtype(rows.dtype, np.integer):
        raise ValueError("perturbed must hold integer token ids")
    values = np.asarray(y, dtype=np.float64)
    if values.shape != (rows.shape[0],) or not np.all(np.isfinite(values)):
        raise ValueError("y must be N finite values")
    pos = np.arange(orig.size) if positions is None else np.asarray(positions)
    if pos.ndim != 1 or pos.size == 0 or not np.issubdtype(pos.dtype, np.integer):
        raise ValueError("positions must be a non-empty 1-D integer array")
    if np.any(np.diff(pos) <= 0) or pos[0] < 0 or pos[-1] >= orig.size:
        raise ValueError("positions must be strictly increasing positions of the prompt")
    if beam < 1:
        raise ValueError("beam must be >= 1")
    if not shrinkage >= 0:
        raise ValueError("shrinkage must be >= 0")
    level = math.ceil(max_level_rate * pos.size) if max_level is None else int(max_level)
    if level < 0:
        raise ValueError("max_level must be >= 0")
    return _Inputs(
        original=orig.astype(np.int64),
        perturbed=rows.astype(np.int64),
        y=values + 0.0,  # turns -0.0 into 0.0 so both sums agree to the bit
        positions=pos.astype(np.int64),
        beam=int(beam),
        max_level=level,
    )


# --------------------------------------------------------------------------- reference (plain loops)


def _is_subsequence(sub: tuple[int, ...], seq: list[int]) -> bool:
    """Two-pointer check, the reference's ``is_subsequence`` loop as written there."""
    i, j = 0, 0
    while i < len(sub) and j < len(seq):
        if sub[i] == seq[j]:
            i += 1
        j += 1
    return i == len(sub)


def _reference_score(
    cand: tuple[int, ...], rows: list[list[int]], ys: list[float], shrinkage: float = 0.0
) -> tuple[float, int]:
    """``(score, support)`` of one candidate, with the reference's float expression (or the shrunk one)."""
    count = 0
    total = 0.0
    for seq, value in zip(rows, ys, strict=True):
        if _is_subsequence(cand, seq):
            count += 1
            total += value
    if shrinkage > 0:
        return _shrunk(total, count, shrinkage, _prior(ys)), count
    if count == 0:
        return 0.0, 0
    n = len(rows)
    return (total / n) / (count / n), count


def _prior(ys: Sequence[float] | np.ndarray) -> float:
    """The mean hallucination over all perturbed prompts, summed left to right like the totals."""
    total = 0.0
    for value in ys:
        total += float(value)
    return total / len(ys)


def _shrunk(total, count, shrinkage: float, prior: float):
    """Posterior-mean score: ``shrinkage`` pseudo-prompts at the overall mean join the candidate's own.

    Why: with no minimum support the reference ranks a long candidate seen in one or two prompts
    above the short cause seen in dozens; shrinking toward the mean weighs each estimate by its support.
    """
    return (total + shrinkage * prior) / (count + shrinkage)


def _leftmost_ends(cand: tuple[int, ...], s: list[int]) -> list[int]:
    """``ends[i]``: index just past the leftmost match of ``cand[:i]`` in ``s`` (``cand`` occurs in ``s``)."""
    ends = [0]
    j = 0
    for tok in cand:
        while s[j] != tok:
            j += 1
        j += 1
        ends.append(j)
    return ends


def _rightmost_starts(cand: tuple[int, ...], s: list[int]) -> list[int]:
    """``starts[i]``: index of the first token of the rightmost match of ``cand[i:]`` in ``s``."""
    starts = [len(s)]
    j = len(s)
    for tok in reversed(cand):
        j -= 1
        while s[j] != tok:
            j -= 1
        starts.append(j)
    return starts[::-1]


def _expand_reference(kept: list[tuple[int, ...]], s: list[int]) -> list[tuple[int, ...]]:
    """Next level: the reference's ``generate_candidates``, by the equivalent gap-window rule."""
    out: set[tuple[int, ...]] = set()
    for cand in kept:
        ends = _leftmost_ends(cand, s)
        starts = _rightmost_starts(cand, s)
        for i in range(len(cand) + 1):
            for q in range(ends[i], starts[i]):
                out.add((*cand[:i], s[q], *cand[i:]))
    return sorted(out)


def _leftmost_positions(cand: tuple[int, ...], s: list[int], positions: list[int]) -> tuple[int, ...]:
    ends = _leftmost_ends(cand, s)
    return tuple(positions[e - 1] for e in ends[1:])


def reference_search(
    original: Sequence[int] | np.ndarray,
    perturbed: Sequence[Sequence[int]] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    positions: Sequence[int] | np.ndarray | None = None,
    *,
    beam: int = 20,
    max_level: int | None = None,
    max_level_rate: float = 0.9,
    shrinkage: float = 0.0,
) -> SearchResult:
    """SAT's beam search over token subsequences, in plain loops like the reference.

    ``original``: prompt token ids [L]; ``perturbed``: [N, L] perturbed prompts; ``y``: [N] hallucination
    value per perturbed prompt (indicator or probability); ``positions``: editable positions (default
    all); ``beam``: beam width; ``max_level``: deepest level (default ``ceil(max_level_rate * E)``);
    ``shrinkage``: 0 is the paper's score, ``m > 0`` scores ``(total + m * mean(y)) / (support + m)``.
    """
    inp = _prepare(original, perturbed, y, positions, beam, max_level, max_level_rate, shrinkage)
    pos = inp.positions.tolist()
    s = [int(inp.original[p]) for p in pos]
    rows = inp.perturbed[:, inp.positions].tolist()  # the editable part: the reference's raw prompt
    ys = inp.y.tolist()
    cands = [(tok,) for tok in sorted(set(s))]
    levels: list[LevelTable] = []
    kept_per_level: list[list[Subsequence]] = []
    level = 1
    while level <= inp.max_level and cands:
        stats = [_reference_score(c, rows, ys, shrinkage) for c in cands]
        order = sorted(range(len(cands)), key=lambda k: stats[k][0], reverse=True)
        kept = [cands[k] for k in order[: inp.beam]]
        levels.append(_reference_table(level, cands, stats, order, len(kept)))
        kept_per_level.append(
            [Subsequence(_leftmost_positions(cands[k], s, pos), cands[k], *stats[k], level) for k in order[: inp.beam]]
        )
        if level == inp.max_level:
            break
        cands = _expand_reference(kept, s)
        level += 1
    flat = [sub for subs in kept_per_level for sub in subs]
    ranked = sorted(flat, key=lambda sub: sub.score, reverse=True)
    return SearchResult(ranked=ranked, best=_reference_best(kept_per_level), levels=levels, max_level=inp.max_level)


def _reference_best(kept_per_level: list[list[Subsequence]]) -> Subsequence | None:
    """``analyze_subsequences``: each level's top; the first level whose top beats all before, and 0."""
    best: Subsequence | None = None
    highest = 0.0
    for subs in kept_per_level:
        if subs[0].score > highest:
            highest = subs[0].score
            best = subs[0]
    return best


def _reference_table(
    level: int, cands: list[tuple[int, ...]], stats: list[tuple[float, int]], order: list[int], kept: int
) -> LevelTable:
    return LevelTable(
        level=level,
        tokens=np.array(cands, dtype=np.int64).reshape(len(cands), level),
        scores=np.array([st[0] for st in stats], dtype=np.float64),
        support=np.array([st[1] for st in stats], dtype=np.int64),
        order=np.array(order, dtype=np.int64),
        kept=kept,
    )


# --------------------------------------------------------------------------- fast (numpy)


class _Scratch:
    """Named, reusable flat buffers for the big temporaries.

    Fresh multi-megabyte arrays cost page faults that rival the arithmetic, so buffers are reused
    across levels and, per thread, across calls (SAT runs once per prompt of a data set). A buffer
    only grows; what it holds is meaningless outside the search that wrote it.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        size = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != dtype:
            grown = 0 if buf is None else 2 * buf.size
            buf = self._buffers[name] = np.empty(max(size, grown), dtype=dtype)
        return buf[:size].reshape(shape)


_LOCAL = threading.local()


def _scratch() -> _Scratch:
    if not hasattr(_LOCAL, "scratch"):
        _LOCAL.scratch = _Scratch()
    return _LOCAL.scratch


@dataclass(frozen=True)
class _Tables:
    """NEXT and PREV transition tables of R rows of length L over ``width = V + 1`` token codes.

    ``table`` is flat ``[R, 2, L + 2, width]``: per row its NEXT, then its PREV (at offset ``half``),
    so a row's lookups stay in one small slab. A state is a flat offset ``r * slab + p * width``, so
    that advancing it by token ``u`` is the single gather ``table[state + u]``. A prefix state's ``p``
    is the next free position of a leftmost match (``L + 1``: failed); NEXT moves it past the first
    ``u`` at or after ``p``. A suffix state's ``p`` is ``q + 1`` for a rightmost match starting at
    ``q`` (``q = L``: empty, ``q = -1``: failed); PREV (read at ``state + half + u``) moves it to the
    last ``u`` strictly before ``q``. Code ``V`` stands for tokens outside the alphabet, never looked up.
    The rows are the perturbed prompts, then ``s`` (padded), then a dead row without any token.
    States are int32 whenever the table is small enough (half the memory traffic).
    """

    table: np.ndarray
    width: int
    length: int
    rows: int
    s_codes: np.ndarray  # codes of s

    @property
    def half(self) -> int:
        return (self.length + 2) * self.width

    @property
    def slab(self) -> int:
        return 2 * self.half

    @property
    def fail(self) -> int:
        """Offset of the failed prefix state (and of the empty suffix state) within a row's slab."""
        return (self.length + 1) * self.width

    @property
    def s_row(self) -> int:
        return self.rows - 2

    @property
    def dead(self) -> int:
        return self.rows - 1

    def position(self, states: np.ndarray) -> np.ndarray:
        return states % self.slab // self.width


def _tables(prompts: np.ndarray, s: np.ndarray, alpha: int, scratch: _Scratch) -> _Tables:
    """Build both tables (prompt rows, then ``s``, then the dead row) by one sweep each way."""
    n_rows, length = prompts.shape[0] + 2, prompts.shape[1]
    codes = np.full((n_rows, length), alpha, dtype=np.int64)
    codes[:-2] = prompts
    codes[-2, : s.size] = s
    tab = _Tables(np.empty(0), alpha + 1, length, n_rows, s)
    dtype = np.int32 if n_rows * tab.slab < 2**31 else np.int64
    base = np.arange(n_rows, dtype=np.int64) * tab.slab
    table = scratch.get("table", (n_rows, 2, length + 2, tab.width), dtype)
    fwd, bwd = table[:, 0], table[:, 1]
    fwd[:, length:] = (base + tab.fail)[:, None, None]
    bwd[:, :2] = base[:, None, None]
    rows = np.arange(n_rows)
    for p in range(length - 1, -1, -1):
        fwd[:, p] = fwd[:, p + 1]
        fwd[rows, p, codes[:, p]] = base + (p + 1) * tab.width
    for p in range(length):
        bwd[:, p + 2] = bwd[:, p + 1]
        bwd[rows, p + 2, codes[:, p]] = base + (p + 1) * tab.width
    return _Tables(table.ravel(), tab.width, length, n_rows, s)


def _walk(
    codes: np.ndarray, first: np.ndarray, tab: _Tables, scratch: _Scratch, key: str
) -> tuple[np.ndarray, np.ndarray]:
    """States [l + 1, pairs] of every prefix (leftmost match) and suffix (rightmost match) of the
    candidates ``codes [B, l]``, from the empty-prefix states ``first``; pair ``k`` belongs to candidate
    ``k % B``. Both walks share one gather per step. The states live in scratch buffer ``key``."""
    length, n_cand = codes.shape[1], codes.shape[0]
    steps = scratch.get("steps", (length, 2, first.size // n_cand, n_cand), np.int64)
    steps[:, 0] = codes.T[:, None, :]
    np.add(steps[::-1, 0], tab.half, out=steps[:, 1])
    steps = steps.reshape(length, 2, first.size)
    states = scratch.get(key, (length + 1, 2, first.size), tab.table.dtype)
    states[0, 0] = first
    np.add(first, tab.fail, out=states[0, 1])
    here = scratch.get("here", (2, first.size), np.int64)
    for j in range(length):
        np.add(states[j], steps[j], out=here)
        tab.table.take(here, out=states[j + 1], mode="clip")
    return states[:, 0], states[::-1, 1]


@dataclass(frozen=True)
class _Beam:
    """Kept candidates; for each, its states in ``s`` and in the K (padded) prompts that contain it.

    Prompt-side arrays are slot-major (``[K, ...]``) so that the per-child work is laid out as
    ``[K, children]`` and reduced over axis 0. Padding slots hold the dead row (nothing is ever found
    in it) and ``y = 0``.
    """

    codes: np.ndarray  # [B, l] alphabet codes
    packed: np.ndarray  # [B, words] codes packed into int64 words (see ``_children``)
    pre_s: np.ndarray  # [l + 1, B] prefix states in s
    suf_s: np.ndarray  # [l + 1, B] suffix states in s
    pre: np.ndarray  # [K, (l + 1) * B] prefix states in the containing prompts; column j * B + b
    suf: np.ndarray  # [K, (l + 1) * B]
    rows: np.ndarray  # [K, B] prompt of each slot, ascending (padding: the dead row)
    y: np.ndarray  # [K, B] its hallucination value (padding: 0.0)
    support: np.ndarray  # [B]


def _beam(
    codes: np.ndarray,
    packed: np.ndarray,
    rows: np.ndarray,
    support: np.ndarray,
    tab: _Tables,
    y_rows: np.ndarray,
    scratch: _Scratch,
    key: str,
) -> _Beam:
    """States of new beam members, kept in scratch buffers named after ``key`` (alternate it per level)."""
    slots, n_cand = rows.shape
    length = codes.shape[1]
    first = scratch.get("first", (slots + 1, n_cand), np.int64)
    first[0] = tab.s_row * tab.slab
    np.multiply(rows, tab.slab, out=first[1:])
    pre, suf = _walk(codes, first.ravel(), tab, scratch, key)

    def slot_major(states: np.ndarray, name: str) -> np.ndarray:
        out = scratch.get(name, (slots, length + 1, n_cand), tab.table.dtype)
        out[...] = states[:, n_cand:].reshape(length + 1, slots, n_cand).transpose(1, 0, 2)
        return out.reshape(slots, (length + 1) * n_cand)

    pre_k, suf_k = slot_major(pre, key + "pre"), slot_major(suf, key + "suf")
    return _Beam(codes, packed, pre[:, :n_cand], suf[:, :n_cand], pre_k, suf_k, rows, y_rows[rows], support)


@dataclass(frozen=True)
class _Children:
    """The next level's candidates in the reference's (lexicographic) order, each with one way to
    make it from a beam member: insert ``tok`` at ``gap`` of member ``parent``."""

    codes: np.ndarray  # [M, l + 1]
    packed: np.ndarray  # [M, words]
    gap: np.ndarray
    parent: np.ndarray
    tok: np.ndarray
    grouped: np.ndarray  # a permutation listing children with the same (gap, parent) together


def _children(beam: _Beam, tab: _Tables, bits: int) -> _Children:
    """Distinct one-token extensions that occur in ``s``, sorted as the reference sorts them.

    Inserting at gap ``i`` of ``c`` may use any position of ``s`` between the leftmost match of
    ``c[:i]`` and the rightmost match of ``c[i:]``. Candidates are packed ``per = 62 // bits`` codes to
    an int64 word, most significant first, so an insertion is a few shifts per word and the
    lexicographic order of candidates is the order of their word tuples.
    """
    n_cand, length = beam.codes.shape
    low = tab.position(beam.pre_s).ravel()  # gap-major: window of (gap i, candidate b) at i * B + b
    width = np.minimum(tab.position(beam.suf_s).ravel() - 1, tab.s_codes.size) - low
    ends = np.cumsum(width)
    where = np.arange(ends[-1]) + np.repeat(low - ends + width, width)
    gap, parent = np.divmod(np.repeat(np.arange(width.size), width), n_cand)
    tok = tab.s_codes[where]
    per = 62 // bits
    words = beam.packed[parent]
    if words.shape[1] <= length // per:  # one more word needed
        words = np.concatenate([words, np.zeros((words.shape[0], 1), dtype=np.int64)], axis=1)
    at, digit = np.divmod(gap, per)
    cut = bits * (per - digit)  # bits below the codes that stay in place in the insertion word
    row = np.arange(words.shape[0])
    word = words[row, at]
    high = (word >> cut) << cut
    inserted = high | (tok << (cut - bits)) | ((word - high) >> bits)
    if words.shape[1] > 1:  # words after the insertion shift by one code, taking the previous word's last
        shifted = words >> bits
        shifted[:, 1:] |= (words[:, :-1] & ((1 << bits) - 1)) << (bits * (per - 1))
        words = np.where(np.arange(words.shape[1]) > at[:, None], shifted, words)
    words[row, at] = inserted
    first = _sorted_unique(words)
    packed = words[first]
    shifts = bits * np.arange(per - 1, -1, -1)
    codes = ((packed[:, :, None] >> shifts) & ((1 << bits) - 1)).reshape(packed.shape[0], per * packed.shape[1])
    return _Children(codes[:, : length + 1], packed, gap[first], parent[first], tok[first], first.argsort())


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """Indices of the first of each distinct row of ``keys``, in lexicographic order of the rows."""
    if keys.shape[1] == 1 or keys.shape[0] == 0:
        return np.unique(keys[:, 0], return_index=True)[1]
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    new = np.ones(keys.shape[0], dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    return order[new]


def _inside(
    beam: _Beam, parent: np.ndarray, gap: np.ndarray, tok: np.ndarray, tab: _Tables, scratch: _Scratch
) -> np.ndarray:
    """``[W, m]``: is ``parent[:gap] + tok + parent[gap:]`` in the parent's t-th containing prompt?

    ``c[:i] + (u,) + c[i:]`` occurs in a row iff the first ``u`` after the leftmost match of ``c[:i]``
    lies before the rightmost match of ``c[i:]``; and it can only occur where ``c`` does. The result
    is a scratch buffer, valid until the next call.
    """
    shape = (int(beam.support[parent].max(initial=0)), parent.size)
    split = gap * beam.codes.shape[0] + parent
    state = scratch.get("state", shape, tab.table.dtype)
    index = scratch.get("index", shape, np.int64)
    bound = scratch.get("bound", shape, tab.table.dtype)
    beam.pre[: shape[0]].take(split, axis=1, out=state, mode="clip")
    np.add(state, tok, out=index)
    tab.table.take(index, out=state, mode="clip")
    beam.suf[: shape[0]].take(split, axis=1, out=bound, mode="clip")
    return np.less(state, bound, out=scratch.get("inside", shape, np.bool_))


def _column_sums(values: np.ndarray) -> np.ndarray:
    """Sum each column top to bottom, rounding after every addition like the reference's loop.

    ``np.add.reduce`` over the outer axis of a C-contiguous array adds row after row (``np.sum`` along
    a contiguous axis would be pairwise); that is checked once at run time, else ``accumulate``
    (sequential by definition, but slow) is used. A single column is never reduced (its axis would be
    contiguous).
    """
    if values.shape[1] >= 2 and _reduce_is_sequential():
        return np.add.reduce(values, axis=0)
    return np.add.accumulate(values, axis=0)[-1] if values.shape[0] else np.zeros(values.shape[1])


@functools.cache
def _reduce_is_sequential() -> bool:
    probe = np.full((301, 3), 2.0**-53)
    probe[0] = 1.0  # sequentially every tiny addend is rounded away; pairwise they add up first
    expected = 1.0
    for value in probe[1:, 0]:
        expected += value
    return bool(np.all(np.add.reduce(probe, axis=0) == expected))


def _sums(
    beam: _Beam, parent: np.ndarray, gap: np.ndarray, tok: np.ndarray, tab: _Tables, scratch: _Scratch
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Containment ``[W, m]``, support and left-to-right sum of ``y`` over the containing prompts."""
    inside = _inside(beam, parent, gap, tok, tab, scratch)
    values = scratch.get("values", inside.shape, np.float64)
    beam.y[: inside.shape[0]].take(parent, axis=1, out=values, mode="clip")
    values *= inside  # y or (+/-)0.0; adding a signed zero never changes a sum that has a real term
    return inside, inside.sum(axis=0), _column_sums(values)


def _score_children(
    beam: _Beam, ch: _Children, tab: _Tables, scratch: _Scratch, n: int, shrink: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(scores, support, inside)`` with the reference's arithmetic.

    Children are evaluated grouped by ``(gap, parent)`` (neighbours read the same table rows), in one
    block padded to the largest parent support, or, when that would more than double the work, in
    blocks of parents with supports within a power of two. ``inside`` (columns in ``ch.grouped``
    order) is returned for the one-block case.
    """
    support = np.zeros(ch.gap.size, dtype=np.int64)
    total = np.zeros(ch.gap.size, dtype=np.float64)
    inside = None
    if beam.support.any():
        order = ch.grouped
        parent, gap, tok = ch.parent[order], ch.gap[order], ch.tok[order]
        sizes = beam.support[parent]
        if sizes.size * int(sizes.max()) <= 2 * int(sizes.sum()) + 4096:
            inside, support[order], total[order] = _sums(beam, parent, gap, tok, tab, scratch)
        else:
            bucket = np.frexp(sizes)[1]
            for level in np.unique(bucket[bucket > 0]):
                sel = np.flatnonzero(bucket == level)
                _, support[order[sel]], total[order[sel]] = _sums(beam, parent[sel], gap[sel], tok[sel], tab, scratch)
    if shrink[0] > 0:
        return _shrunk(total, support, *shrink), support, inside
    scores = np.zeros(ch.gap.size, dtype=np.float64)
    np.divide(total / n, support / n, out=scores, where=support > 0)
    return scores, support, inside


def _next_beam(
    beam: _Beam,
    ch: _Children,
    kept: np.ndarray,
    inside: np.ndarray | None,
    tab: _Tables,
    y_rows: np.ndarray,
    scratch: _Scratch,
) -> _Beam:
    """The kept children, each with the prompts that contain it (ascending), padded to a common width."""
    parent = ch.parent[kept]
    if inside is None:
        inside = _inside(beam, parent, ch.gap[kept], ch.tok[kept], tab, scratch)
    else:
        inside = inside[:, ch.grouped.argsort()[kept]]
    support = inside.sum(axis=0)
    slots = int(support.max(initial=0))
    pick = (~inside).argsort(axis=0, kind="stable")[:slots]  # contained slots first, in order
    rows = np.where(np.arange(slots)[:, None] < support, beam.rows[pick, parent], tab.dead)
    packed = ch.packed[kept]
    key = "odd" if beam.codes.shape[1] % 2 else "even"  # never the buffers of the beam being read
    return _beam(ch.codes[kept], packed, rows, support, tab, y_rows, scratch, key)


def _alphabet_codes(values: np.ndarray, alphabet: np.ndarray) -> np.ndarray:
    """Codes ``0..V-1`` for alphabet tokens, ``V`` for anything else."""
    low, high = int(values.min()), int(values.max())
    if low >= 0 and high < 1 << 20:  # token ids: a lookup table is one gather
        lut = np.full(max(high, int(alphabet[-1])) + 1, alphabet.size, dtype=np.int64)
        lut[alphabet] = np.arange(alphabet.size)
        return lut[values]
    idx = np.minimum(np.searchsorted(alphabet, values), alphabet.size - 1)
    return np.where(alphabet[idx] == values, idx, alphabet.size)


def fast_search(
    original: Sequence[int] | np.ndarray,
    perturbed: Sequence[Sequence[int]] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    positions: Sequence[int] | np.ndarray | None = None,
    *,
    beam: int = 20,
    max_level: int | None = None,
    max_level_rate: float = 0.9,
    shrinkage: float = 0.0,
) -> SearchResult:
    """Vectorised :func:`reference_search`: same arguments, identical result (see the module docstring).

    Work buffers are kept per thread between calls (tens of MB for 1024 perturbations of a 64-token
    prompt), so running it prompt after prompt does not pay for fresh memory each time.
    """
    inp = _prepare(original, perturbed, y, positions, beam, max_level, max_level_rate, shrinkage)
    s = inp.original[inp.positions]
    alphabet = np.unique(s)
    bits = max(1, (alphabet.size - 1).bit_length())
    n_rows = inp.perturbed.shape[0]
    scratch = _scratch()
    rows = inp.perturbed[:, inp.positions]  # containment is checked in the editable part only
    tab = _tables(_alphabet_codes(rows, alphabet), _alphabet_codes(s, alphabet), alphabet.size, scratch)
    y_rows = np.concatenate([inp.y, [0.0, 0.0]])  # s and the dead row carry no y
    shrink = (float(shrinkage), _prior(inp.y) if shrinkage > 0 else 0.0)
    empty = np.zeros((1, 0), dtype=np.int64)  # the empty parent of level 1, in every prompt
    every = np.arange(n_rows)[:, None]
    state = _beam(empty, np.zeros((1, 1), np.int64), every, np.array([n_rows]), tab, y_rows, scratch, "odd")
    levels: list[LevelTable] = []
    where: list[np.ndarray] = []
    for level in range(1, inp.max_level + 1):
        ch = _children(state, tab, bits)
        if ch.gap.size == 0:
            break
        scores, support, inside = _score_children(state, ch, tab, scratch, n_rows, shrink)
        order = (-scores).argsort(kind="stable")
        kept = order[: inp.beam]
        levels.append(LevelTable(level, alphabet[ch.codes], scores, support, order, kept.size))
        if level < inp.max_level:
            state = _next_beam(state, ch, kept, inside, tab, y_rows, scratch)
            s_pre = state.pre_s
        else:
            s_start = np.full(kept.size, tab.s_row * tab.slab, dtype=np.int64)
            s_pre = _walk(ch.codes[kept], s_start, tab, scratch, "last")[0]
        where.append(inp.positions[(tab.position(s_pre[1:]) - 1).T])
    ranked = _ranked(levels, where)
    best = ranked[0] if ranked and ranked[0].score > 0 else None
    return SearchResult(ranked=ranked, best=best, levels=levels, max_level=inp.max_level)


def _ranked(levels: list[LevelTable], where: list[np.ndarray]) -> list[Subsequence]:
    """Kept candidates of all levels, score descending; ties: lower level, then rank in level."""
    entries: list[Subsequence] = []
    for table, positions in zip(levels, where, strict=True):
        rank = table.order[: table.kept]
        fields = (
            map(tuple, positions.tolist()),
            map(tuple, table.tokens[rank].tolist()),
            table.scores[rank].tolist(),
            table.support[rank].tolist(),
            itertools.repeat(table.level),
        )
        entries.extend(map(Subsequence, *fields))
    scores = np.array([entry.score for entry in entries], dtype=np.float64)
    return [entries[k] for k in (-scores).argsort(kind="stable").tolist()]


# --------------------------------------------------------------------------- per-position scores


def per_token_scores(result: SearchResult, length: int) -> np.ndarray:
    """One score per prompt position, keeping SAT's ranking; higher means more implicated.

    Positions are ordered by (1) the rank in ``result.ranked`` of the first (best) subsequence whose
    leftmost match uses the position, so the best subsequence's positions come first; (2) the number
    of ranked subsequences using it, more first; (3) the position, earlier first. Positions in no
    ranked subsequence (fixed markers included) come last. The k-th position in this total order
    (k = 0, 1, ...) scores ``(length - k) / length``, so scores are distinct and lie in ``(0, 1]``.
    """
    first = np.full(length, len(result.ranked), dtype=np.int64)
    count = np.zeros(length, dtype=np.int64)
    for rank, sub in enumerate(result.ranked):
        for p in sub.positions:
            if not 0 <= p < length:
                raise ValueError(f"position {p} outside a prompt of length {length}")
            count[p] += 1
            first[p] = min(first[p], rank)
    order = np.lexsort((np.arange(length), -count, first))
    scores = np.empty(length, dtype=np.float64)
    scores[order] = (length - np.arange(length)) / length
    return scores
