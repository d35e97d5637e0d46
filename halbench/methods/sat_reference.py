"""SAT's perturbations as its reference code makes them (github.com/sunyiyou/SAT, ``utils/perturbation.py``).

Why a module of its own: the search (:mod:`halbench.methods.sat_search`) only sees perturbed prompts, and
what the paper's numbers rest on is how those prompts were made. Three pieces, each written from the
reference's rules (not its code):

* which positions a perturbed prompt replaces (:func:`perturbation_mask`): ``rgrand``, the reference's
  default, draws ``k ~ U{1..max(1, floor(rate * E))}`` of the ``E`` editable positions uniformly without
  replacement; ``rgfix`` replaces exactly ``max(1, floor(rate * E))``; ``bernoulli`` (halbench's earlier
  default) replaces each editable position independently with probability ``rate``;
* what replaces a token (:class:`ReferenceReplacer`): a uniform choice among its ``top_k`` nearest tokens
  by input-embedding cosine that pass the reference's filters (same :func:`token_category`, neither string
  contained in the other ignoring case, no end-of-text token, one token per normalised string); a token
  with no such neighbour is left as it is;
* how a sampled response counts as the hallucination (:func:`contains_target`): the target string occurs
  in the decoded text, ignoring case (the reference's ``has_subseq`` on one string).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from halbench.replacements import Replacements

MODES = ("rgrand", "rgfix", "bernoulli")
END_OF_TEXT = "<|endoftext|>"

_OPERATORS = frozenset(
    {"+", "-", "*", "/", "%", "//", "**", "=", "+=", "-=", "*=", "/=", "%=", "==", "!=", ">", "<", ">=", "<="}
    | {"&", "|", "^", "~", ">>", "<<"}
)
_BRACKETS = frozenset("()[]{}")
_PUNCTUATION = frozenset({".", ",", ";", ":", "?", "!", "@", "#", "$"})


def token_category(token: str) -> str:
    """The reference's coarse token class, checked from specific to general.

    The reference asks NLTK's part-of-speech tagger about alphanumeric tokens that are neither digits nor
    identifiers; halbench has no NLTK, and those tokens are rare (they start with a digit and hold a letter,
    like ``1st`` or ``3d``: Python calls ``word`` or ``Paris`` identifiers), so they all share one class,
    ``alphanumeric_mixed``, the reference's own fallback when the tag is not in its table.
    """
    if token.isalnum():
        if token.isdigit():
            return "digit"
        if token.isidentifier():
            return "identifier"
        return "alphanumeric_mixed"
    if token.isspace():
        return "whitespace"
    if token in _OPERATORS:
        return "operator"
    if token in _BRACKETS:
        return "bracket"
    if token in _PUNCTUATION:
        return "punctuation"
    return "unknown"


def clean_token(token: str) -> str:
    """Byte-level BPE's space and newline markers as text (the reference's ``clean_token``), and SentencePiece's.

    The reference maps ``Ġ`` and ``Ċ`` only; SentencePiece's ``▁`` is mapped here too, else every word of a
    Llama-2-style vocabulary would fall in the ``unknown`` class and have no neighbour of its own class.
    """
    if token == END_OF_TEXT:
        return "<EOS>"
    return token.replace("Ġ", " ").replace("Ċ", "\n").replace("▁", " ")


def filter_candidates(source: str, ranked: Sequence[int], text: dict[int, str], allowed: np.ndarray) -> np.ndarray:
    """The reference's filters over ``ranked`` ids (most similar first); the survivors, in that order.

    ``text[i]`` is token ``i`` decoded on its own; ``allowed[i]`` is False for ids that may never be a
    replacement (halbench's special tokens and task markers; the reference only drops ``<|endoftext|>``).
    """
    src = clean_token(source).strip()
    category = token_category(src)
    low = src.lower()
    seen: set[str] = set()
    out: list[int] = []
    for idx in ranked:
        candidate = text[idx]
        normal = candidate.lower().strip()
        if low in candidate.lower() or candidate.lower() in low or candidate == END_OF_TEXT:
            continue
        if not allowed[idx] or token_category(normal) != category or normal in seen:
            continue
        seen.add(normal)
        out.append(int(idx))
    return np.asarray(out, dtype=np.int64)


def perturbation_mask(
    rng: np.random.Generator, n: int, length: int, editable: Sequence[int], rate: float, mode: str
) -> np.ndarray:
    """``[n, length]`` booleans: the positions each perturbed prompt replaces (editable ones only)."""
    if mode not in MODES:
        raise ValueError(f"unknown perturbation mode {mode!r} (one of {', '.join(MODES)})")
    positions = np.asarray(editable, dtype=np.int64)
    mask = np.zeros((n, length), dtype=bool)
    if mode == "bernoulli":  # Scorer.perturb's draws: the earlier perturbations, bit for bit
        mask[:, positions] = True
        return (rng.random((n, length)) < rate) & mask
    if positions.size == 0:
        return mask
    most = max(1, int(positions.size * rate))
    k = rng.integers(1, most + 1, size=n) if mode == "rgrand" else np.full(n, most)
    k = np.minimum(k, positions.size)
    order = rng.random((n, positions.size)).argsort(axis=1)  # a uniform permutation per row
    rows, ranks = np.nonzero(np.arange(positions.size)[None, :] < k[:, None])
    mask[rows, positions[order[rows, ranks]]] = True
    return mask


class ReferenceReplacer:
    """Per token, the reference's replacement candidates, computed once per model and tokenizer."""

    def __init__(self, replacements: Replacements, tokenizer, top_k: int = 50):
        self._replacements = weakref.ref(replacements)  # the shared cache is keyed weakly by it
        self.tokenizer = tokenizer
        self.top_k = int(top_k)
        size = replacements.vocabulary_size
        self.allowed = np.zeros(size, dtype=bool)
        self.allowed[replacements.pool[replacements.pool < size]] = True
        self._text: dict[int, str] = {}
        self._candidates: dict[int, np.ndarray] = {}

    @property
    def replacements(self) -> Replacements:
        found = self._replacements()
        if found is None:
            raise RuntimeError("the replacements this replacer was made for are gone")
        return found

    def text(self, idx: int) -> str:
        if idx not in self._text:
            self._text[idx] = self.tokenizer.decode([int(idx)])
        return self._text[idx]

    def candidates(self, token: int) -> np.ndarray:
        """Ids that may replace ``token``, most similar first (possibly none)."""
        token = int(token)
        if token not in self._candidates:
            ranked = self.replacements.nearest(token, self.top_k).tolist()
            text = {i: self.text(i) if self.allowed[i] else "" for i in ranked}  # the rest is dropped anyway
            self._candidates[token] = filter_candidates(self.text(token), ranked, text, self.allowed)
        return self._candidates[token]

    def sample(self, rng: np.random.Generator, prompt: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Copy of ``prompt`` per row of ``mask`` with masked positions replaced (unchanged without candidates)."""
        rows = np.broadcast_to(np.asarray(prompt, dtype=np.int64), mask.shape).copy()
        for pos in np.flatnonzero(mask.any(0)):
            options = self.candidates(int(prompt[pos]))
            if options.size == 0:
                continue
            draws = options[rng.integers(options.size, size=mask.shape[0])]
            rows[mask[:, pos], pos] = draws[mask[:, pos]]
        return rows


_REPLACERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def reference_replacer(replacements: Replacements, tokenizer, top_k: int = 50) -> ReferenceReplacer:
    """The shared replacer for this model's replacements and tokenizer (candidates are cached across cases)."""
    if tokenizer is None:
        raise ValueError(
            "replacement 'reference' needs the model's tokenizer (token strings for its filters); "
            "pass replacement=neighbours, unigram, uniform or mask instead"
        )
    by_setting = _REPLACERS.setdefault(replacements, {})
    key = (id(tokenizer), int(top_k))
    found = by_setting.get(key)
    if found is None or found.tokenizer is not tokenizer:
        found = by_setting[key] = ReferenceReplacer(replacements, tokenizer, top_k)
    return found


def contains_target(texts: Sequence[str], target: str) -> np.ndarray:
    """Whether each text contains ``target``, ignoring case: the reference's hallucination detector."""
    needle = target.lower()
    return np.array([needle in text.lower() for text in texts], dtype=bool)
