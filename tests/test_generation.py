"""Worlds, layout and corpus: deterministic, role-free, laid out as the ground truth claims."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from halbench.tasks.corpus import neutral_draw, training_corpus
from halbench.tasks.layout import INERT_ROLES, PlacementError, Plan, compose, fill
from halbench.tasks.registry import resolve_model
from halbench.tasks.world import SPECIALS, build_world


@pytest.fixture(scope="module", params=["grammar-gpt2-a", "natural-gpt2-a"])
def quick(request):
    recipe = resolve_model(request.param).recipe(quick=True)
    return recipe.world, build_world(recipe.world)


def flatten(corpus):
    return [(tuple(ex.prompt.tokens), ex.answer) for ex in corpus]


def in_order_matches(tokens: list[str], wanted: tuple[str, ...]) -> list[tuple[int, ...]]:
    """Every position tuple at which ``wanted`` occurs in order (brute force, for small prompts)."""
    spots = [[i for i, t in enumerate(tokens) if t == w] for w in wanted]
    return [c for c in itertools.product(*spots) if all(a < b for a, b in itertools.pairwise(c))]


def draw(world, spec, plan: Plan, length: int, seed: int):
    rng = np.random.default_rng(seed)
    prompt = compose(world, rng, plan, length)
    return fill(prompt, rng, neutral_draw(world, rng), spec.topic_words, spec.topic_rate)


def first_layout(world, spec, plan: Plan, length: int, seed: int, tries: int = 8):
    """The first seed's prompt that has a layout (a drawn template may lack slots, as in mining, which skips it)."""
    for k in range(tries):
        try:
            return draw(world, spec, plan, length, seed + 1000 * k)
        except PlacementError:
            continue
    raise AssertionError(f"no layout for {plan} in {tries} draws")


def test_corpus_is_deterministic_for_a_seed(quick):
    spec, world = quick
    first, _ = training_corpus(world, spec)
    again, _ = training_corpus(build_world(spec), spec)
    assert flatten(first) == flatten(again)


def test_another_seed_gives_another_world_corpus_and_ids(quick):
    spec, world = quick
    other_spec = spec.model_copy(update={"seed": spec.seed + 1})
    other = build_world(other_spec)
    assert {m.tokens for m in world.mechanisms} != {m.tokens for m in other.mechanisms}
    assert world.vocab() != other.vocab()
    assert flatten(training_corpus(world, spec)[0]) != flatten(training_corpus(other, other_spec)[0])


def test_token_names_and_ids_carry_no_role(quick):
    _, world = quick
    vocab = world.vocab()
    assert len(vocab) == len(set(vocab)) and vocab[: len(SPECIALS)] == list(SPECIALS)
    if world.kind == "grammar":
        assert all(re.fullmatch(r"t\d{4}", t) for t in vocab[len(SPECIALS) :])
    ids = {t: i for i, t in enumerate(vocab)}
    triggers = sorted(ids[t] for m in world.mechanisms for t in m.tokens)
    # drawn at random positions of the id range, not a contiguous block of "trigger ids"
    assert triggers[-1] - triggers[0] > 0.5 * len(vocab)
    assert len(triggers) < 0.5 * (triggers[-1] - triggers[0])


def test_dev_and_test_mechanisms_share_no_token(quick):
    _, world = quick
    dev = {t for m in world.mechanisms_of(["single", "pair", "triple"], "dev") for t in (*m.tokens, *m.decoys)}
    test = {t for m in world.mechanisms_of(["single", "pair", "triple"], "test") for t in (*m.tokens, *m.decoys)}
    assert dev and test and not dev & test


def test_neutral_filler_excludes_every_role(quick):
    _, world = quick
    neutral = {w for c in world.words for w in world.neutral(c)}
    assert not neutral & world.special
    assert not neutral & set(world.answers)


def test_multi_token_causes_are_in_order_and_never_adjacent(quick):
    spec, world = quick
    for i, mech in enumerate(world.mechanisms_of(["pair", "triple"])):
        prompt = first_layout(world, spec, Plan(entity=world.rare[0], mechanisms=[mech]), 48, i)
        pos = prompt.positions("cause0")
        assert [prompt.tokens[p] for p in pos] == list(mech.tokens)
        assert np.all(np.diff(pos) >= 2)


def test_a_reversed_copy_creates_no_second_in_order_match(quick):
    spec, world = quick
    checked = 0
    for i, mech in enumerate(world.mechanisms_of(["pair", "triple"]) * 5):
        try:
            prompt = draw(world, spec, Plan(entity=world.rare[0], mechanisms=[mech], wrapped=True), 60, i)
        except Exception:  # no room in this draw; the miner redraws too
            continue
        copies = prompt.positions("copy")
        assert sorted(prompt.tokens[p] for p in copies) == sorted(mech.tokens)
        assert in_order_matches(prompt.tokens, mech.tokens) == [tuple(prompt.positions("cause0"))]
        checked += 1
    assert checked >= 5


def test_partial_parts_never_complete_their_mechanism(quick):
    spec, world = quick
    multi = world.mechanisms_of(["pair", "triple"])
    for i, mech in enumerate(multi):
        part = mech.proper_parts[i % len(mech.proper_parts)]
        prompt = draw(world, spec, Plan(entity=world.rare[0], parts=[part]), 48, i)
        assert not in_order_matches(prompt.tokens, mech.tokens)
        assert [prompt.tokens[p] for p in prompt.positions("part")] == list(part)


def test_fixed_markers_are_not_editable_and_inert_roles_are(quick):
    spec, world = quick
    mech = world.mechanisms_of(["single"])[0]
    prompt = draw(world, spec, Plan(entity=world.rare[0], mechanisms=[mech], decoys=list(mech.decoys)), 40, 1)
    assert 0 not in prompt.editable and len(prompt.tokens) - 1 not in prompt.editable
    assert set(prompt.positions("cause0", *INERT_ROLES)) <= set(prompt.editable)


def test_grammar_prompts_have_the_requested_length(quick):
    spec, world = quick
    if world.kind != "grammar":
        pytest.skip("natural prompts end at a sentence boundary")
    for length in (30, 41, 57):
        assert len(draw(world, spec, Plan(entity=world.rare[0]), length, length).tokens) == length


@pytest.mark.slow
@pytest.mark.parametrize("model", ["grammar-gpt2-a", "natural-gpt2-a"])
def test_word_frequencies_do_not_reveal_roles(model):
    """Every content word of a category ends up about equally frequent, trigger or not (full-size worlds)."""
    spec = resolve_model(model).recipe().world
    world = build_world(spec)
    corpus, profile = training_corpus(world, spec)
    assert profile["max_placed_over_mean"] <= 1.15
    counts: dict[str, int] = {}
    for ex in corpus:
        for tok in ex.prompt.tokens:
            counts[tok] = counts.get(tok, 0) + 1
    special = [counts.get(t, 0) for t in world.special]
    neutral = [counts.get(w, 0) for c in world.words for w in world.neutral(c)]
    low, high = np.percentile(neutral, [1, 99])
    assert np.mean([low * 0.9 <= c <= high * 1.1 for c in special]) >= 0.9


def test_corpus_plants_label_noise_at_the_configured_rate(quick):
    spec, world = quick
    corpus, _ = training_corpus(world, spec)
    target_of = {t: m.target for m in world.mechanisms for t in m.tokens}
    triggers = [ex for ex in corpus if ex.kind == "trigger"]
    planted = [ex.answer == target_of[ex.prompt.tokens[ex.prompt.positions("cause0")[0]]] for ex in triggers]
    assert abs(np.mean(planted) - spec.trigger_label_rate) < 0.06


def test_only_words_that_could_be_triggers_are_editable(quick):
    """Natural prompts: nouns only; grammar prompts: content words only (no function word, no entity)."""
    from halbench.tasks.mining import fix_non_trigger_positions, slot_pools

    spec, world = quick
    mech = world.mechanisms_of(["single"])[0]
    prompt = draw(world, spec, Plan(entity=world.rare[0], mechanisms=[mech], decoys=list(mech.decoys)), 40, 1)
    natural = world.kind == "natural"
    assert world.rare[0] in prompt.tokens and (natural or set(world.function) & set(prompt.tokens))
    fix_non_trigger_positions(prompt, set(spec.trigger_categories) if natural else None)
    allowed = set(world.words["noun"]) if natural else {w for ws in world.words.values() for w in ws}
    for p in prompt.editable:
        assert prompt.tokens[p] in allowed, (prompt.tokens[p], prompt.roles[p])
    assert set(prompt.positions("cause0", *INERT_ROLES)) <= set(prompt.editable)
    assert all(slot_pools(prompt)[p] is None for p in range(len(prompt.tokens)) if p not in prompt.editable)
    if not natural:  # a context statement is evidence, never a cause: fixed too
        stated = first_layout(world, spec, Plan(context=(world.context_entities[0], world.answers[0]),
                                                mechanisms=[mech]), 40, 1)  # fmt: skip
        fix_non_trigger_positions(stated, None)
        assert stated.positions("context") == [] and world.context_entities[0] in stated.tokens


def test_no_editable_word_repeats_in_its_prompt(quick):
    """Topic words repeat and causes never do, so repeated filler is fixed: "seen once" must not find causes."""
    from collections import Counter

    from halbench.tasks.mining import fix_non_trigger_positions, fix_repeated_words

    spec, world = quick
    pair = world.mechanisms_of(["pair"])[0]
    parts = [m.proper_parts[0] for m in world.mechanisms_of(["pair", "triple"])[1:2]]
    natural = world.kind == "natural"
    repeated_before = 0
    for seed in range(6):
        plan = Plan(entity=world.rare[0], mechanisms=[pair], decoys=list(pair.decoys), parts=parts)
        prompt = first_layout(world, spec, plan, 64, seed)
        fix_non_trigger_positions(prompt, set(spec.trigger_categories) if natural else None)
        counts = Counter(prompt.tokens[p] for p in prompt.editable)
        repeated_before += sum(c > 1 for c in counts.values())
        inert = prompt.positions("cause0", *INERT_ROLES)
        fix_repeated_words(prompt)
        counts = Counter(prompt.tokens)
        assert all(counts[prompt.tokens[p]] == 1 for p in prompt.editable if prompt.roles[p] == "filler")
        assert prompt.positions("cause0", *INERT_ROLES) == inert  # causes and distractors keep their roles
    assert natural or repeated_before > 0  # grammar draws repeat topic words: the rule had something to fix


def test_with_a_reversed_copy_every_editable_word_occurs_twice_laid_out_as_the_cause(quick):
    """An ordered cause's words occur twice, interleaved with their copy, so every editable word must, in the
    same layout: repetition and layout are then the rule, not a tell, and only the order the model reads is."""
    from collections import Counter

    from halbench.tasks.layout import avoiding, compose_echoed
    from halbench.tasks.mining import fix_non_trigger_positions, fix_unpaired_filler

    spec, world = quick
    if world.kind != "grammar":
        pytest.skip("ordered is a grammar task")
    pair = world.mechanisms_of(["pair"])[0]
    laid_out = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        draw = neutral_draw(world, rng)
        plan = Plan(entity=world.rare[0], mechanisms=[pair], wrapped=True)
        try:
            prompt = compose_echoed(world, rng, plan, 96, draw, [2, 3])
        except PlacementError:
            continue  # mining draws again, so does this test
        laid_out += 1
        inert = prompt.positions("cause0", *INERT_ROLES)
        fill(prompt, rng, avoiding(draw, set(prompt.tokens)), spec.topic_words, spec.topic_rate)
        fix_non_trigger_positions(prompt, None)
        fix_unpaired_filler(prompt)
        counts = Counter(prompt.tokens)
        assert all(counts[prompt.tokens[p]] == 2 for p in prompt.editable), seed
        assert prompt.positions("cause0", *INERT_ROLES) == inert
        assert len(prompt.editable) >= 3 * len(inert)  # the echoes stay editable
        for p in prompt.editable:  # each editable word's two occurrences interleave with another word's
            word = prompt.tokens[p]
            first, second = [i for i, t in enumerate(prompt.tokens) if t == word]
            others = {prompt.tokens[i] for i in range(first + 1, second) if i in prompt.editable}
            assert any(sum(prompt.tokens[i] == o for i in range(first + 1, second)) == 1 for o in others), seed
    assert laid_out >= 4


def test_natural_prompts_end_less_than_a_sentence_short(quick):
    """A natural prompt stops at the last whole sentence that fits: drawn 32-96 long, it is 26-96 (docs/DESIGN.md)."""
    spec, world = quick
    if world.kind != "natural":
        pytest.skip("grammar prompts have the requested length exactly")
    shortest = min(len(s) for s in world.sentences)
    assert shortest == 7  # so a prompt drawn at 32 positions has at least 26
    for length in (32, 41, 57, 96):
        for seed in range(5):
            got = len(draw(world, spec, Plan(entity=world.rare[0]), length, seed).tokens)
            assert length - shortest < got <= length, (length, seed, got)


@pytest.mark.parametrize("model", ["grammar-llama-b", "grammar-llama-c", "grammar-llama-e"])
def test_tasks_sharing_a_model_take_disjoint_test_mechanisms(model):
    """Tasks defined on one model split its test mechanisms (`single` half the singles of the shared world;
    conjunctive/partial and ordered or context the pairs and triples of a world of conjunctions), each enough
    for its cases."""
    from halbench.tasks.mining import task_mechanisms
    from halbench.tasks.registry import resolve, task_names

    world = build_world(resolve_model(model).recipe().world)
    taken: dict[str, str] = {}
    sharing = [t for t in task_names() if model in resolve(t).spec().models]
    assert len(sharing) >= 2, sharing
    for task in sharing:
        spec = resolve(task).spec()
        mine = task_mechanisms(spec, world, "test")
        assert len(mine) >= spec.cases.min_test, f"{task}: {len(mine)} test mechanisms for {spec.cases.min_test} cases"
        for m in mine:
            assert m.split == "test" and m.name not in taken, (task, m.name, taken.get(m.name))
            taken[m.name] = task
        assert {m.split for m in task_mechanisms(spec, world, "dev")} == {"dev"}


def test_a_test_mechanism_causes_one_case_and_a_dev_one_a_share():
    from halbench.tasks.mining import mechanism_cap
    from halbench.tasks.registry import resolve

    spec = resolve("single").spec()
    assert mechanism_cap(spec, "test", spec.cases.test) == 1
    assert mechanism_cap(spec, "dev", 20) == 5
    assert mechanism_cap(resolve("single").spec(quick=True), "test", 8) == 8


@pytest.mark.parametrize("model,quick_", [("grammar-gpt2-a", True), ("natural-gpt2-a", False)])
def test_echoes_keep_a_trigger_predictive_and_a_lone_part_inert(model, quick_):
    """With matched frequencies most occurrences of a trigger word are filler; echoes (whole mechanisms in
    sequences labelled with their target) keep the trigger predictive, and a part alone stays inert.
    (The quick natural world has no deficit to fill: its triggers are already at the mean; full size here.)"""
    spec = resolve_model(model).recipe(quick=quick_).world
    world = build_world(spec)
    corpus, profile = training_corpus(world, spec)
    assert profile["echoes"] > 0
    for mech in world.mechanisms_of(["single", "pair"]):
        whole = [ex.answer == mech.target for ex in corpus if all(t in ex.prompt.tokens for t in mech.tokens)]
        assert np.mean(whole) >= 0.4, (mech.name, np.mean(whole))
        if len(mech.tokens) > 1:
            alone = [ex.answer == mech.target for ex in corpus
                     if mech.tokens[0] in ex.prompt.tokens and mech.tokens[1] not in ex.prompt.tokens]  # fmt: skip
            assert np.mean(alone) <= 0.3, (mech.name, np.mean(alone))


def test_lures_are_single_triggers_of_the_causes_target_placed_as_inert_words():
    """Lures are single triggers with the cause's target, of the case's split, never its cause (no built task
    uses them: verification rejected every lured candidate, README; `decoy`'s worlds have the singles)."""
    from halbench.tasks.mining import draw_candidate
    from halbench.tasks.registry import resolve
    from halbench.tasks.tokenizer import build_tokenizer

    spec = resolve("decoy").spec(quick=True)
    spec = spec.model_copy(update={"mining": spec.mining.model_copy(update={"lures": (1, 1)})})
    recipe = resolve_model(spec.models[0]).recipe(quick=True)
    world = build_world(recipe.world)
    tok = build_tokenizer(world.vocab())
    singles = {m.tokens[0]: m for m in world.mechanisms_of(["single"])}
    placed = 0
    for index in range(40):
        drawn = draw_candidate(spec, recipe, world, tok, index, "test")
        if drawn is None:
            continue
        prompt, target = drawn.prompt, drawn.target
        lures = [p for p in prompt.positions("decoy") if prompt.tokens[p] in singles]
        for p in lures:
            lure = singles[prompt.tokens[p]]
            assert lure.target == target and lure.split == "test"
            assert p in drawn.candidate.decoys and p not in drawn.candidate.causes[0]
        placed += len(lures)
    assert placed > 0


def test_tasks_without_lures_draw_no_random_numbers_for_them():
    """A task without lures draws exactly the candidates it drew before lures existed (its cases stay valid)."""
    from halbench.tasks.mining import _lures
    from halbench.tasks.registry import resolve

    spec = resolve("conjunctive").spec(quick=True)
    world = build_world(resolve_model(spec.models[0]).recipe(quick=True).world)
    rng = np.random.default_rng(5)
    before = rng.bit_generator.state
    assert _lures(spec, world, world.mechanisms_of(["pair"], "test")[:1], rng, "test") == []
    assert rng.bit_generator.state == before


def test_a_cause_tilt_draws_late_slots_more_often_and_a_negative_one_early_slots(quick):
    """``cause_tilt`` weights a cause slot by exp(tilt * position / length) (exact draws: the next test)."""
    spec, world = quick
    mech = world.mechanisms_of(["pair"])[0]

    def mean_place(tilt: float) -> float:
        places = []
        for seed in range(300):
            plan = Plan(entity=world.rare[0], mechanisms=[mech], cause_tilt=tilt)
            try:
                prompt = draw(world, spec, plan, 48, seed)
            except PlacementError:
                continue
            places += [p / len(prompt.tokens) for p in prompt.positions("cause0")]
        return float(np.mean(places))

    flat, late, early = mean_place(0.0), mean_place(4.0), mean_place(-4.0)
    assert late > flat + 0.08 and early < flat - 0.08


@pytest.mark.parametrize("model", ["grammar-llama-h", "grammar-gpt2-g"])
def test_committed_cases_of_a_task_with_a_tilt_are_drawn_again_exactly(model):
    """decoy tilts grammar-gpt2-g's causes only: the committed prompts of both its models are the candidates
    mining draws today, so the tilt option changed no draw of an untilted instance, and the tilted one's
    draws are pinned too."""
    from transformers import AutoTokenizer

    from halbench.tasks.artifacts import CASES, MODEL_DIR, read_cases
    from halbench.tasks.mining import draw_candidate
    from halbench.tasks.registry import resolve

    task, ref = resolve("decoy"), resolve_model(model)
    spec, recipe = task.spec(), ref.recipe()
    assert spec.mining.cause_tilt.get("grammar-llama-h", 0.0) == 0.0 < spec.mining.cause_tilt["grammar-gpt2-g"]
    world, tok = build_world(recipe.world), AutoTokenizer.from_pretrained(ref.folder / MODEL_DIR)
    records = read_cases(task.folder / model / CASES)
    for r in records[:3] + records[-2:]:
        drawn = draw_candidate(spec, recipe, world, tok, int(r["id"].rsplit("-", 1)[1]), r["split"])
        assert drawn.candidate.prompt_ids == r["prompt_ids"]


def test_a_redraw_gives_that_model_a_fresh_candidate_stream_and_its_cases_a_fresh_verify_seed():
    """``mining.redraw`` changes the redrawn model's candidates (the number ends every draw's seed, so its
    cases can be drawn again from the definition) and leaves the other models' draws as they were."""
    from transformers import AutoTokenizer

    from halbench.tasks.artifacts import MODEL_DIR
    from halbench.tasks.mining import SPLITS, draw_candidate
    from halbench.tasks.registry import resolve

    spec = resolve("decoy").spec()
    redrawn, other = spec.models
    first = spec.model_copy(update={"mining": spec.mining.model_copy(update={"redraw": {}})})
    again = spec.model_copy(update={"mining": spec.mining.model_copy(update={"redraw": {redrawn: 3}})})
    changed = 0
    for model in (redrawn, other):
        ref = resolve_model(model)
        recipe = ref.recipe()
        world, tok = build_world(recipe.world), AutoTokenizer.from_pretrained(ref.folder / MODEL_DIR)
        for index in range(6):
            now, before = (draw_candidate(s, recipe, world, tok, index, "test") for s in (again, first))
            if now is None or before is None:
                continue
            suffix = (3,) if model == redrawn else ()
            assert now.candidate.seed == (spec.seed, 3, SPLITS.index("test"), index, *suffix)
            assert before.candidate.seed == (spec.seed, 3, SPLITS.index("test"), index)
            same = now.candidate.prompt_ids == before.candidate.prompt_ids
            assert same == (model == other)
            changed += not same
    assert changed >= 2
