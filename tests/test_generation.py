"""World, layout and corpus: deterministic for a seed, and laid out as the ground truth claims."""

from __future__ import annotations

import numpy as np
import pytest

from halbench.tasks.corpus import training_corpus
from halbench.tasks.layout import Plan, compose
from halbench.tasks.registry import REPO_ROOT
from halbench.tasks.spec import load_spec
from halbench.tasks.world import build_world

TASKS = REPO_ROOT / "tasks"


@pytest.fixture(scope="module", params=["single", "natural"])
def quick(request):
    spec = load_spec(TASKS / request.param / "task.yaml", quick=True)
    return spec, build_world(spec.world)


def flatten(corpus):
    return [(tuple(ex.prompt.tokens), ex.answer) for ex in corpus]


def test_corpus_is_deterministic_for_a_seed(quick):
    spec, world = quick
    assert flatten(training_corpus(world, spec.world)) == flatten(training_corpus(build_world(spec.world), spec.world))


def test_a_different_seed_gives_a_different_corpus(quick):
    spec, world = quick
    other = spec.world.model_copy(update={"seed": spec.world.seed + 1})
    assert flatten(training_corpus(world, spec.world)) != flatten(training_corpus(build_world(other), other))


def test_world_vocab_is_unique_and_neutral_excludes_specials(quick):
    _, world = quick
    vocab = world.vocab()
    assert len(vocab) == len(set(vocab))
    special = {t for m in world.mechanisms for t in (*m.tokens, *m.decoys)} | set(world.answers)
    assert not special & set(world.neutral)


def test_multi_token_triggers_are_ordered_and_never_adjacent(quick):
    _, world = quick
    rng = np.random.default_rng(0)
    length = 30 if world.kind == "symbolic" else None
    for mech in world.mechanisms_of(["pair", "triple"]):
        for _ in range(20):
            prompt = compose(world, rng, Plan(entity=world.rare[0], mechanisms=[mech]), length)
            pos = prompt.positions("cause0")
            assert [prompt.tokens[p] for p in pos] == list(mech.tokens)
            assert np.all(np.diff(pos) >= 2)


def test_fixed_markers_are_not_editable(quick):
    _, world = quick
    rng = np.random.default_rng(1)
    length = 20 if world.kind == "symbolic" else None
    prompt = compose(world, rng, Plan(entity=world.rare[0], mechanisms=[world.mechanisms[0]]), length)
    assert 0 not in prompt.editable
    assert len(prompt.tokens) - 1 not in prompt.editable
    assert set(prompt.positions("cause0")) <= set(prompt.editable)


def test_parts_of_a_mechanism_never_contain_the_whole_in_order(quick):
    _, world = quick
    for mech in world.mechanisms:
        for part in mech.parts:
            assert part != mech.tokens


def test_corpus_plants_label_noise_at_the_configured_rate():
    spec = load_spec(TASKS / "single" / "task.yaml", quick=True)
    world = build_world(spec.world)
    triggers = [ex for ex in training_corpus(world, spec.world) if ex.kind == "trigger"]
    target_of = {}
    for mech in world.mechanisms:
        for tok in mech.tokens:
            target_of[tok] = mech.target
    planted = [ex.answer == next(target_of[t] for t in ex.prompt.tokens if t in target_of) for ex in triggers]
    assert abs(np.mean(planted) - spec.world.trigger_label_rate) < 0.06
