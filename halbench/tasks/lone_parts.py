"""Lone parts as filler: words of other conjunctions recur across a model's prompts as often as filler does.

With one test case per mechanism (``mining.test_per_mechanism``) a cause word occurs in no other public test
prompt of its model, while a neutral filler word occurs in one or two: "the word seen nowhere else" found
causes without the model (the uniqueness probe, :func:`halbench.tasks.recurrence.uniqueness_scores`, AP
0.21-0.64 against random's 0.09-0.47). With ``mining.lone_parts`` (a weight) a filler slot is drawn over its
category's neutral words *and* the words of the test split's conjunctions (pairs and triples) other than the
case's own, so every test conjunction word, the cause words of the other cases included, recurs in slots as
a neutral word does. Verification turns away prompts where a lone part is not inert, so admitted prompts hold
fewer lone parts than were drawn; the weight makes up for that, and is set so that *admitted dev prompts*
hold a conjunction word about as often as a neutral word (``scripts/lone_part_rates.py``; on
context/grammar-gpt2-d the dev ratio was 0.71 at weight 1 and 1.91 at weight 2, so the suite uses 1.3).
Dev prompts draw from the same *test* words: an attacker who pools every public prompt (dev as well as
test) then sees a test cause word recur as often as neutral filler does, and a dev cause word never appears
in a test prompt (``dev_lookup`` stays blind).
A conjunction is complete only with all of its words in order, and training teaches that a lone part is
inert (``world.part_sequences``); at most one word per other conjunction stays (a second is redrawn from the
neutral words), and verification (stability) admits only cases where refilling the filler changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from halbench.tasks.layout import Prompt
from halbench.tasks.world import Mechanism, World

CONJUNCTIONS = ["pair", "triple"]
LONE_SPLIT = "test"  # whose conjunction words lone parts are, in the prompts of both splits


def lone_weights(lone_parts: float, lone_singles: float) -> dict[str, float]:
    """Each mechanism kind's weight against a neutral word, from ``mining.lone_parts`` and ``mining.lone_singles``."""
    return {kind: lone_parts for kind in CONJUNCTIONS} | {"single": lone_singles}


def lone_part_draw(
    world: World, rng: np.random.Generator, own: list[Mechanism], weights: dict[str, float] | None = None
) -> Callable:
    """``draw(category, n)``: over the category's neutral words and the words of the other test mechanisms, a
    word of a ``kind`` mechanism ``weights[kind]`` times as likely as a neutral word (default: conjunction words
    as likely as a neutral word, no single trigger)."""
    weights = weights if weights is not None else lone_weights(1.0, 0.0)
    mine = {t for m in own for t in m.tokens}
    kinds = [k for k, w in weights.items() if w > 0]
    weight = {t: weights[m.kind] for m in world.mechanisms_of(kinds, LONE_SPLIT) for t in m.tokens if t not in mine}
    category = world.category_of
    pools, probs = {}, {}
    for c in world.words:
        neutral, lone = world.neutral(c), sorted(t for t in weight if category[t] == c)
        pools[c] = neutral + lone
        w = np.array([1.0] * len(neutral) + [weight[t] for t in lone])
        probs[c] = w / w.sum()

    def draw(cat: str, n: int) -> list[str]:
        pool = pools[cat]
        return [pool[i] for i in rng.choice(len(pool), size=n, p=probs[cat])]

    return draw


def keep_one_word_per_conjunction(
    prompt: Prompt, world: World, own: list[Mechanism], neutral: Callable[[str, int], list[str]]
) -> None:
    """Redraw filler words (from ``neutral``) that would give another conjunction a second word in the prompt.

    Words placed on purpose (the cause, partial parts, decoys) stay; of a conjunction's words in filler slots
    the first (with its repeats, as a topic word repeats) is kept only if no other word of that conjunction is
    in the prompt; repeated filler is then fixed like any other (``mining.fix_repeated``).
    """
    kinds = [*CONJUNCTIONS, "single"]  # a single has one word: only its being placed on purpose redraws it
    owner = {t: m.name for m in world.mechanisms_of(kinds, LONE_SPLIT) if m not in own for t in m.tokens}
    placed = {owner[t] for t, r in zip(prompt.tokens, prompt.roles, strict=True) if r != "filler" and t in owner}
    kept: dict[str, str] = {}
    for i, (token, role) in enumerate(zip(prompt.tokens, prompt.roles, strict=True)):
        name = owner.get(token)
        if role != "filler" or name is None:
            continue
        if name in placed or kept.setdefault(name, token) != token:
            prompt.tokens[i] = neutral(prompt.cats[i], 1)[0]
