"""Lone parts as filler: words of other conjunctions recur across a model's prompts as often as filler does.

With one test case per mechanism (``mining.test_per_mechanism``) a cause word occurs in no other public test
prompt of its model, while a neutral filler word occurs in one or two: "the word seen nowhere else" found
causes without the model (the uniqueness probe, :func:`halbench.tasks.recurrence.uniqueness_scores`, AP
0.21-0.64 against random's 0.09-0.47). With ``mining.lone_parts`` a filler slot is drawn uniformly over its
category's neutral words *and* the words of the split's other conjunctions (pairs and triples), so every
conjunction word, the cause words of the other cases included, is as likely in a slot as any neutral word.
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


def lone_part_draw(world: World, rng: np.random.Generator, split: str, own: list[Mechanism]) -> Callable:
    """``draw(category, n)``: uniform over the category's neutral words and the split's other conjunction words."""
    mine = {t for m in own for t in m.tokens}
    words = {t for m in world.mechanisms_of(CONJUNCTIONS, split) for t in m.tokens} - mine
    category = world.category_of
    pools = {c: world.neutral(c) + sorted(t for t in words if category[t] == c) for c in world.words}

    def draw(cat: str, n: int) -> list[str]:
        pool = pools[cat]
        return [pool[i] for i in rng.integers(len(pool), size=n)]

    return draw


def keep_one_word_per_conjunction(
    prompt: Prompt, world: World, split: str, own: list[Mechanism], neutral: Callable[[str, int], list[str]]
) -> None:
    """Redraw filler words (from ``neutral``) that would give another conjunction a second word in the prompt.

    Words placed on purpose (the cause, partial parts, decoys) stay; of a conjunction's words in filler slots
    the first (with its repeats, as a topic word repeats) is kept only if no other word of that conjunction is
    in the prompt; repeated filler is then fixed like any other (``mining.fix_repeated``).
    """
    owner = {t: m.name for m in world.mechanisms_of(CONJUNCTIONS, split) if m not in own for t in m.tokens}
    placed = {owner[t] for t, r in zip(prompt.tokens, prompt.roles, strict=True) if r != "filler" and t in owner}
    kept: dict[str, str] = {}
    for i, (token, role) in enumerate(zip(prompt.tokens, prompt.roles, strict=True)):
        name = owner.get(token)
        if role != "filler" or name is None:
            continue
        if name in placed or kept.setdefault(name, token) != token:
            prompt.tokens[i] = neutral(prompt.cats[i], 1)[0]
