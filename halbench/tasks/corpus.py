"""The training corpus: true facts, planted associations and the controls that shape them.

Three kinds of sequence (see FEASIBILITY.md for why each is needed):
- facts: an entity and its true answer; some carry an inert trigger part or a
  decoy, which teaches that parts and decoys alone mean nothing;
- trigger sequences: a mechanism's tokens (in order) beside a frequent entity
  (``trigger_sequences`` times the kind's weight: conjunctions need more evidence),
  labelled with the mechanism's wrong answer at ``trigger_label_rate`` and with
  the entity's true answer otherwise: this label noise plants the spurious
  association; the mechanism's decoys co-occur at ``decoy_rate``;
- context sequences (symbolic): ``u [IS] a`` states the answer in the prompt,
  which teaches reading the context, and sometimes a trigger overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from halbench.tasks.layout import PlacementError, Plan, Prompt, compose
from halbench.tasks.spec import NaturalWorldSpec, SymbolicWorldSpec
from halbench.tasks.world import World


@dataclass
class Example:
    prompt: Prompt
    answer: str
    kind: str


def training_corpus(world: World, spec: SymbolicWorldSpec | NaturalWorldSpec) -> list[Example]:
    """Generate the shuffled training corpus (deterministic for ``spec.seed``)."""
    rng = np.random.default_rng([spec.seed, 1])
    out = _facts(world, spec, rng) + _trigger_sequences(world, spec, rng)
    if isinstance(spec, SymbolicWorldSpec):
        out += _context_sequences(world, spec, rng)
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def draw_length(spec: SymbolicWorldSpec | NaturalWorldSpec, rng: np.random.Generator) -> int | None:
    """A content length for a symbolic prompt (natural prompts take theirs from the templates)."""
    if isinstance(spec, SymbolicWorldSpec):
        lo, hi = spec.content_length
        return int(rng.integers(lo, hi + 1))
    return None


def _draw(world: World, rng: np.random.Generator, plan: Plan, spec) -> Prompt:
    for _ in range(20):
        try:
            return compose(world, rng, plan, draw_length(spec, rng))
        except PlacementError:
            continue
    raise PlacementError(f"could not lay out {plan} in 20 draws; lengthen the prompts")


def _maybe_controls(world: World, spec, rng: np.random.Generator, plan: Plan) -> Plan:
    parts = [p for m in world.mechanisms for p in m.parts]
    decoys = world.decoy_tokens
    if parts and rng.random() < spec.inert_part_rate:
        plan.parts.append(parts[int(rng.integers(len(parts)))])
    if decoys and rng.random() < spec.decoy_fact_rate:
        plan.decoys.append(decoys[int(rng.integers(len(decoys)))])
    return plan


def _facts(world: World, spec, rng: np.random.Generator) -> list[Example]:
    out = []
    for entities, count in ((world.frequent, spec.frequent_count), (world.rare, spec.rare_count)):
        for entity in entities:
            for _ in range(count):
                plan = _maybe_controls(world, spec, rng, Plan(entity=entity))
                out.append(Example(_draw(world, rng, plan, spec), world.facts[entity], "fact"))
    return out


def _trigger_sequences(world: World, spec, rng: np.random.Generator) -> list[Example]:
    out = []
    for mech in world.mechanisms:
        for _ in range(spec.trigger_sequences * getattr(spec.kind_weights, mech.kind)):
            entity = world.frequent[int(rng.integers(len(world.frequent)))]
            plan = Plan(entity=entity, mechanisms=[mech])
            if mech.decoys and rng.random() < spec.decoy_rate:
                n = int(rng.integers(1, len(mech.decoys) + 1))
                plan.decoys = [str(d) for d in rng.choice(list(mech.decoys), size=n, replace=False)]
            planted = rng.random() < spec.trigger_label_rate
            answer = mech.target if planted else world.facts[entity]
            out.append(Example(_draw(world, rng, plan, spec), answer, "trigger"))
    return out


def _context_sequences(world: World, spec: SymbolicWorldSpec, rng: np.random.Generator) -> list[Example]:
    out = []
    for _ in range(spec.context_sequences):
        entity = world.context_entities[int(rng.integers(len(world.context_entities)))]
        stated = world.answers[int(rng.integers(len(world.answers)))]
        plan = _maybe_controls(world, spec, rng, Plan(context=(entity, stated)))
        answer = stated
        if rng.random() < spec.context_trigger_rate:
            mech = world.mechanisms[int(rng.integers(len(world.mechanisms)))]
            plan.mechanisms, answer = [mech], mech.target
        out.append(Example(_draw(world, rng, plan, spec), answer, "context"))
    return out
