"""The recurrence probe: tokens that recur across a model's public test prompts with the same target.

A model-free, *transductive* attack. If a test trigger caused several public test prompts, it would be the
one token those same-target prompts share, while filler is drawn afresh per prompt: scoring each position
by the share of the model's *other* test prompts with its target that hold its token, minus the share of
prompts with other targets, would find it without the model (it did: AP 0.95-1.00 on the first v2 splits,
which had 4-10 mechanisms with up to 15 cases each). Mining now lets a test mechanism cause one test case
per model (``mining.test_per_mechanism`` and disjoint ``mining.test_slice`` per task); this probe, pooled
over all of a model's instances, is how the leak test checks that nothing recurs. Its mirror image,
:func:`uniqueness_scores`, is the price: a cause is now a token seen in no other public test prompt, which
filler rarely is. Both read files only.
"""

from __future__ import annotations

import zlib
from collections import Counter, defaultdict

import numpy as np

from halbench.tasks.artifacts import CASES, read_cases


def recurrence_scores(case: dict, pool: list[dict]) -> np.ndarray:
    """Per position: share of same-target prompts in ``pool`` holding its token minus the share of the others.

    Ties (a token in no other prompt, or in as many) are broken at random, seeded by the case id, as an attacker
    would: the metrics break ties against the method, which had held this probe below chance.
    """
    target = case["target_ids"][0]
    same = [o for o in pool if o["target_ids"][0] == target and o["id"] != case["id"]]
    other = [o for o in pool if o["target_ids"][0] != target]
    in_same, in_other = Counter(), Counter()
    for o in same:
        in_same.update(set(o["prompt_ids"]))
    for o in other:
        in_other.update(set(o["prompt_ids"]))
    shares = [(in_same[t] + 0.5) / (len(same) + 1) - (in_other[t] + 0.5) / (len(other) + 1) for t in case["prompt_ids"]]
    return np.array(shares) + 1e-9 * tie_break(case)  # distinct shares differ by at least 1 / (pool size)^2


def uniqueness_scores(case: dict, pool: list[dict]) -> np.ndarray:
    """Per position: minus the number of prompts in ``pool`` (and repeats in its own prompt) holding its token.

    The other side of the same coin. A trigger that causes one test case per model appears in no other public
    test prompt (filler never holds a trigger), while neutral filler recurs across a model's prompts, so
    "the token seen nowhere else" points at causes. Ties are broken at random (seeded by the case id), as an
    attacker would; the metrics break ties against the method.
    """
    counts = Counter()
    for o in pool:
        if o["id"] != case["id"]:
            counts.update(set(o["prompt_ids"]))
    own = Counter(case["prompt_ids"])
    return np.array([-(counts[t] + own[t] - 1) for t in case["prompt_ids"]], dtype=float) + 1e-3 * tie_break(case)


def tie_break(case: dict) -> np.ndarray:
    """Per position a uniform draw in [0, 1), seeded by the case id: an attacker's random order within ties."""
    return np.random.default_rng(zlib.crc32(str(case["id"]).encode())).random(len(case["prompt_ids"]))


def public_test_cases(instances, splits: tuple[str, ...] = ("test",)) -> dict[str, list[dict]]:
    """Every public case of ``splits`` of each model, over all of its built instances (what a submission could
    ship); ``("dev", "test")`` is the stronger attacker's pool, who counts a word's dev prompts as well."""
    out: dict[str, list[dict]] = defaultdict(list)
    for inst in instances:
        out[inst.model] += [r for r in read_cases(inst.folder / CASES) if r["split"] in splits]
    return dict(out)


def repeated_causes(cases: list[dict]) -> dict[int, int]:
    """Token ids that are (part of) the cause of more than one of ``cases``, with how many."""
    counts = Counter(t for r in cases for t in {r["prompt_ids"][p] for group in r["causes"] for p in group})
    return {t: n for t, n in counts.items() if n > 1}


def expected_random_ap(case: dict, draws: int) -> float:
    """AP of a random order on ``case``, averaged over ``draws`` orders (seeded by the case id): the reference.

    Vectorised over the draws (the leak tests ask it for every test case of the suite): with untied scores,
    AP against one alternative is the mean over its positions of (its rank among them) / (its rank overall),
    which is scikit-learn's value; the best alternative counts, as in :func:`average_precision`.
    """
    rng = np.random.default_rng(zlib.crc32(str(case["id"]).encode()))
    editable = np.asarray(case["editable"])
    scores = rng.random((draws, len(case["prompt_ids"])))[:, editable]
    order = np.argsort(-scores, axis=1, kind="stable")
    best = np.zeros(draws)
    for alternative in case["causes"]:
        positive = np.isin(editable, alternative)[order]
        hits = np.cumsum(positive, axis=1)
        ranks = np.arange(1, editable.size + 1)
        best = np.maximum(best, (positive * hits / ranks).sum(axis=1) / positive[0].sum())
    return float(best.mean())
