"""Lone parts as filler: conjunction words recur across prompts like neutral words, never completing a conjunction."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from halbench.tasks.layout import Prompt
from halbench.tasks.lone_parts import CONJUNCTIONS, keep_one_word_per_conjunction, lone_part_draw, lone_weights
from halbench.tasks.mining import draw_candidate
from halbench.tasks.registry import resolve, resolve_model
from halbench.tasks.tokenizer import build_tokenizer
from halbench.tasks.world import build_world


@pytest.fixture(scope="module")
def setting():
    spec = resolve("conjunctive").spec(quick=True)
    spec = spec.model_copy(update={"mining": spec.mining.model_copy(update={"lone_parts": 1.0})})
    recipe = resolve_model(spec.models[0]).recipe(quick=True)
    world = build_world(recipe.world)
    return spec, recipe, world


def test_the_draw_is_uniform_over_neutral_words_and_other_conjunction_words(setting):
    _, _, world = setting
    own = world.mechanisms_of(["pair"], "test")[:1]
    conj = {t for m in world.mechanisms_of(CONJUNCTIONS, "test") for t in m.tokens} - set(own[0].tokens)
    cat = world.category_of[sorted(conj)[0]]
    allowed = set(world.neutral(cat)) | {t for t in conj if world.category_of[t] == cat}
    counts = Counter(lone_part_draw(world, np.random.default_rng(0), own)(cat, 40_000))
    assert set(counts) == allowed  # no single trigger, decoy, dev word or word of the case's own cause
    share = np.array([counts[w] for w in allowed]) / 40_000
    assert abs(np.mean([counts[w] for w in conj if w in allowed]) / np.mean(list(counts.values())) - 1) < 0.15
    assert share.max() < 3 / len(allowed)


def test_the_weight_makes_a_conjunction_word_that_much_likelier_than_a_neutral_word(setting):
    _, _, world = setting
    own = world.mechanisms_of(["pair"], "test")[:1]
    conj = {t for m in world.mechanisms_of(CONJUNCTIONS, "test") for t in m.tokens} - set(own[0].tokens)
    cat = world.category_of[sorted(conj)[0]]
    counts = Counter(lone_part_draw(world, np.random.default_rng(0), own, lone_weights(2.0, 0.0))(cat, 60_000))
    lone = np.mean([counts[w] for w in conj if world.category_of[w] == cat])
    neutral = np.mean([counts[w] for w in world.neutral(cat)])
    assert abs(lone / neutral - 2.0) < 0.3


def test_lone_singles_draw_the_other_test_single_triggers_at_their_own_weight():
    recipe = resolve_model(resolve("single").spec(quick=True).models[0]).recipe(quick=True)
    world = build_world(recipe.world)
    singles = world.mechanisms_of(["single"], "test")
    own, others = singles[:1], {m.tokens[0] for m in singles[1:]}
    dev = {m.tokens[0] for m in world.mechanisms_of(["single"], "dev")}
    cat = world.category_of[sorted(others)[0]]
    counts = Counter(lone_part_draw(world, np.random.default_rng(1), own, lone_weights(0.0, 3.0))(cat, 60_000))
    mine = {w for w in others if world.category_of[w] == cat}
    assert set(counts) == set(world.neutral(cat)) | mine  # no conjunction word, dev trigger or the case's own
    assert not (set(counts) & (dev | set(own[0].tokens)))
    ratio = np.mean([counts[w] for w in mine]) / np.mean([counts[w] for w in world.neutral(cat)])
    assert abs(ratio - 3.0) < 0.45


def test_a_second_word_of_a_conjunction_is_redrawn_and_placed_words_stay(setting):
    _, _, world = setting
    pair, other = world.mechanisms_of(CONJUNCTIONS, "test")[:2]
    a, b = pair.tokens[:2]
    tokens = [a, "x", a, b, other.tokens[0], other.tokens[1]]
    roles = ["filler", "filler", "filler", "filler", "part", "filler"]
    prompt = Prompt(tokens=list(tokens), roles=roles, cats=[world.category_of.get(t, "c0") for t in tokens])
    keep_one_word_per_conjunction(prompt, world, [], lambda cat, n: ["NEUTRAL"] * n)
    # `a` and its repeat stay; `b` would be a second word of its conjunction; so would other's next to a placed part
    assert prompt.tokens == [a, "x", a, "NEUTRAL", other.tokens[0], "NEUTRAL"]


def test_mined_prompts_hold_lone_parts_and_no_complete_conjunction_but_the_cause(setting):
    spec, recipe, world = setting
    tok = build_tokenizer(world.vocab())
    conj = world.mechanisms_of(CONJUNCTIONS, "test")
    owner = {t: m for m in conj for t in m.tokens}
    lone = 0
    for index in range(60):
        drawn = draw_candidate(spec, recipe, world, tok, index, "test")
        if drawn is None:
            continue
        own = drawn.mechanisms[0]
        present = Counter()
        for token in set(drawn.prompt.tokens):
            if token in owner and owner[token] is not own:
                present[owner[token].name] += 1
        assert max(present.values(), default=0) <= 1, "another conjunction got two of its words"
        lone += sum(present.values())
    assert lone > 0


def test_at_weight_zero_filler_holds_no_conjunction_word(setting):
    """The default (0) leaves filler neutral, as the tasks that do not set it were mined."""
    spec, recipe, world = setting
    off = spec.model_copy(update={"mining": spec.mining.model_copy(update={"lone_parts": 0.0})})
    assert type(spec.mining).model_fields["lone_parts"].default == 0.0
    tok = build_tokenizer(world.vocab())
    conj = {t for m in world.mechanisms_of(CONJUNCTIONS) for t in m.tokens}
    drawn = [d for i in range(30) if (d := draw_candidate(off, recipe, world, tok, i, "test"))]
    assert drawn
    for d in drawn:
        assert not [t for t, r in zip(d.prompt.tokens, d.prompt.roles, strict=True) if r == "filler" and t in conj]


def test_natural_prompts_take_lone_triggers_only_in_their_editable_noun_slots():
    """Natural worlds recur their test triggers too: only as nouns, where a trigger could stand, never elsewhere.

    The full world (building it trains nothing): the quick one has too few test mechanisms to show any."""
    spec = resolve("natural").spec()
    assert spec.mining.lone_parts and spec.mining.lone_singles
    recipe = resolve_model(spec.models[0]).recipe()
    world = build_world(recipe.world)
    tok = build_tokenizer(world.vocab())
    owner = {t: m for m in world.mechanisms_of(["single", *CONJUNCTIONS], "test") for t in m.tokens}
    nouns = set(recipe.world.trigger_categories)
    lone = 0
    for index in range(40):
        drawn = draw_candidate(spec, recipe, world, tok, index, "test")
        if drawn is None:
            continue
        own = drawn.mechanisms
        editable = set(drawn.candidate.editable)
        for i, (token, role) in enumerate(zip(drawn.prompt.tokens, drawn.prompt.roles, strict=True)):
            if role == "filler" and token in owner and owner[token] not in own:
                lone += 1
                assert i in editable and world.category_of[token] in nouns
    assert lone > 0
