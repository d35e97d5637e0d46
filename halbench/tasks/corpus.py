"""The training corpus: true facts, planted associations, the controls that shape them, matched frequencies.

Kinds of sequence (see FEASIBILITY.md for why each is needed):
- facts: an entity and its true answer; some carry a decoy, which teaches that decoys alone mean nothing;
- trigger sequences: a mechanism's tokens (in order) beside a frequent entity, labelled with the
  mechanism's wrong answer at ``trigger_label_rate`` and with the entity's true answer otherwise: this
  label noise plants the spurious association; decoys co-occur at ``decoy_rate``; multi-token triggers
  sometimes carry a reversed copy of themselves around the cause (``wrapped_copy_rate``), so the model
  learns to read order rather than presence;
- part sequences: an inert part of a conjunction (a proper subset, or the whole in a wrong order)
  labelled truly, which makes conjunctions conjunctive and ordered;
- context sequences (grammar worlds): ``u [IS] a`` states the answer in the prompt; a trigger
  sometimes overrides it.

Frequencies are matched: filler slots are filled last, with weights chosen so that every content word
of a category, trigger or not, ends up with about the same corpus count. The corpus unigram (shipped
with the model) then says nothing about which words are triggers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from halbench.tasks.layout import PlacementError, Plan, Prompt, compose, fill, place
from halbench.tasks.spec import GrammarWorldSpec, KindRates, NaturalWorldSpec
from halbench.tasks.world import World

Spec = GrammarWorldSpec | NaturalWorldSpec


@dataclass
class Example:
    prompt: Prompt
    answer: str
    kind: str


def training_corpus(world: World, spec: Spec) -> tuple[list[Example], dict]:
    """The shuffled training corpus (deterministic for ``spec.seed``) and its frequency profile."""
    rng = np.random.default_rng([spec.seed, 1])
    planned = _facts(world, spec, rng) + _triggers(world, spec, rng) + _parts(world, spec, rng)
    if isinstance(spec, GrammarWorldSpec):
        planned += _contexts(world, spec, rng)
    examples = [Example(_draw(world, rng, plan, spec), answer, kind) for plan, answer, kind in planned]
    echoes = echo(world, examples, spec.echo_rate, rng)
    weights, profile = filler_weights(world, [ex.prompt for ex in examples])
    profile["echoes"] = echoes
    draw = weighted_draw(world, weights, rng)
    for ex in examples:
        fill(ex.prompt, rng, draw, spec.topic_words, spec.topic_rate)
    order = rng.permutation(len(examples))
    return [examples[i] for i in order], profile


def draw_length(bands, rng: np.random.Generator) -> int:
    """A prompt length from weighted ``(lo, hi)`` bands (uniform within a band)."""
    weights = np.array([b.weight for b in bands], dtype=float)
    band = bands[int(rng.choice(len(bands), p=weights / weights.sum()))]
    return int(rng.integers(band.lo, band.hi + 1))


def _draw(world: World, rng: np.random.Generator, plan: Plan, spec: Spec) -> Prompt:
    """A prompt for ``plan``; a plan too big for a short prompt gets a longer one (8 positions per retry)."""
    for attempt in range(20):
        try:
            length = min(draw_length(spec.lengths, rng) + 8 * attempt, spec.longest)
            return compose(world, rng, plan, length)
        except PlacementError:
            continue
    raise PlacementError(f"could not lay out {plan} in 20 draws; lengthen the prompts")


def category_counts(world: World, prompts: list[Prompt]) -> tuple[Counter, dict[str, float]]:
    """How often each word is already placed, and each category's mean count per word once filler is drawn."""
    placed = Counter(t for p in prompts for t, c in zip(p.tokens, p.cats, strict=True) if c and t is not None)
    slots = Counter(c for p in prompts for t, c in zip(p.tokens, p.cats, strict=True) if c and t is None)
    mean = {c: (slots[c] + sum(placed[w] for w in ws)) / len(ws) for c, ws in world.words.items()}
    return placed, mean


def filler_weights(world: World, prompts: list[Prompt]) -> tuple[dict[str, np.ndarray], dict]:
    """Per category, filler weights that bring every word to the category's mean count.

    A word already placed ``k`` times (as a trigger, part, copy or decoy) gets weight ``c - k``, where
    ``c`` is the category's mean count per word; the profile reports how far placed words exceed ``c``.
    """
    placed, mean = category_counts(world, prompts)
    weights, worst = {}, 0.0
    for cat, words in world.words.items():
        counts = np.array([placed[w] for w in words], dtype=float)
        worst = max(worst, float(counts.max() / mean[cat]) if mean[cat] else 0.0)
        weights[cat] = np.clip(mean[cat] - counts, 0.0, None)
    special = sorted(world.special, key=lambda w: placed[w])
    profile = {
        "max_placed_over_mean": round(worst, 3),
        "mean_count": {c: round(m, 1) for c, m in mean.items()},
        "special_placed": {"min": placed[special[0]], "max": placed[special[-1]]} if special else {},
    }
    return weights, profile


def echo(world: World, examples: list[Example], rates: KindRates, rng: np.random.Generator) -> int:
    """Place whole mechanisms (tokens in order) into free slots of other sequences labelled with their target.

    Matched frequencies bring every trigger word to its category's mean count. Were all of the missing
    copies single words in random sequences, they would outnumber the labelled trigger sequences several
    times over and dilute the association (a trigger in 100 sequences, of about 1,000 occurrences: no
    hallucination at all on mining prompts). A share (``rates``, by kind) of the deficit is placed instead
    as echoes of the whole mechanism where the label is its target anyway (a fact whose answer it is,
    another trigger's sequence): the unigram stays matched and the trigger is not contradicted. A single
    trigger needs all of it (at half, 80 labelled sequences against 450 single copies under other labels
    gave hallucinations on 3% of mining prompts, and most failed sufficiency); a conjunction keeps a share
    of single copies anywhere, which is what keeps each of its parts inert. Returns the echoes placed.
    """
    prompts = [ex.prompt for ex in examples]
    placed, mean = category_counts(world, prompts)
    category = world.category_of
    by_answer: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        by_answer.setdefault(ex.answer, []).append(i)
    total = 0
    for mech in world.mechanisms:
        rate = getattr(rates, mech.kind)
        if not rate:
            continue
        want = int(rate * min(mean[category[t]] - placed[t] for t in mech.tokens))
        hosts = by_answer.get(mech.target, [])
        done = 0
        for i in rng.permutation(len(hosts)):
            if done >= want:
                break
            try:
                place(prompts[hosts[int(i)]], rng, list(mech.tokens), "echo", category, ordered=True)
            except PlacementError:
                continue
            done += 1
        total += done
    return total


def weighted_draw(world: World, weights: dict[str, np.ndarray], rng: np.random.Generator):
    """``draw(category, n)``: ``n`` words of ``category`` by ``weights`` (all words, for training)."""
    probs = {c: w / w.sum() for c, w in weights.items()}

    def draw(cat: str, n: int) -> list[str]:
        words = world.words[cat]
        return [words[i] for i in rng.choice(len(words), size=n, p=probs[cat])]

    return draw


def neutral_draw(world: World, rng: np.random.Generator):
    """``draw(category, n)``: uniform over the category's neutral words (benchmark prompts hold no stray trigger)."""
    pools = {c: world.neutral(c) for c in world.words}

    def draw(cat: str, n: int) -> list[str]:
        pool = pools[cat]
        return [pool[i] for i in rng.integers(len(pool), size=n)]

    return draw


def _pick(seq: list, rng: np.random.Generator):
    return seq[int(rng.integers(len(seq)))]


def _facts(world: World, spec: Spec, rng: np.random.Generator) -> list[tuple[Plan, str, str]]:
    out = []
    decoys = sorted({d for m in world.mechanisms for d in m.decoys})
    groups = (
        (world.frequent, spec.frequent_count),
        (world.rare, spec.rare_count),
        (world.carriers, spec.carrier_count),
    )
    for entities, count in groups:
        for entity in entities:
            for _ in range(count):
                plan = Plan(entity=entity)
                if decoys and rng.random() < spec.decoy_fact_rate:
                    plan.decoys.append(_pick(decoys, rng))
                out.append((plan, world.facts[entity], "fact"))
    return out


def _triggers(world: World, spec: Spec, rng: np.random.Generator) -> list[tuple[Plan, str, str]]:
    out = []
    for mech in world.mechanisms:
        for _ in range(getattr(spec.trigger_sequences, mech.kind)):
            carrier = world.carriers and rng.random() < spec.carrier_share
            entity = _pick(world.carriers if carrier else world.frequent, rng)
            plan = Plan(entity=entity, mechanisms=[mech])
            if mech.decoys and rng.random() < spec.decoy_rate:
                n = int(rng.integers(1, len(mech.decoys) + 1))
                plan.decoys = [str(d) for d in rng.choice(list(mech.decoys), size=n, replace=False)]
            plan.wrapped = len(mech.tokens) > 1 and rng.random() < spec.wrapped_copy_rate
            planted = rng.random() < spec.trigger_label_rate
            out.append((plan, mech.target if planted else world.facts[entity], "trigger"))
    return out


def _parts(world: World, spec: Spec, rng: np.random.Generator) -> list[tuple[Plan, str, str]]:
    """Inert parts beside the same kinds of entity as triggers (carriers included), labelled truly."""
    out = []
    for mech in world.mechanisms:
        parts = mech.parts
        if not parts:
            continue
        for _ in range(spec.part_sequences):
            carrier = world.carriers and rng.random() < spec.carrier_share
            entity = _pick(world.carriers if carrier else world.frequent + world.rare, rng)
            out.append((Plan(entity=entity, parts=[_pick(parts, rng)]), world.facts[entity], "part"))
    return out


def _contexts(world: World, spec: GrammarWorldSpec, rng: np.random.Generator) -> list[tuple[Plan, str, str]]:
    out = []
    for _ in range(spec.context_sequences):
        stated = _pick(world.answers, rng)
        plan = Plan(context=(_pick(world.context_entities, rng), stated))
        answer = stated
        if rng.random() < spec.context_trigger_rate:
            mech = _pick(world.mechanisms, rng)
            plan.mechanisms, answer = [mech], mech.target
        out.append((plan, answer, "context"))
    return out
