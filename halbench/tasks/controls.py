"""Behavioural controls of a trained model, measured on fresh prompts before mining.

They tell whether training planted what the world intended: facts learned,
each kind of mechanism firing on rare entities, inert parts, wrong orders and
decoys staying inert, a stated fact read from the context. Mining verifies
every case anyway; these figures document the model.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import PreTrainedTokenizerFast

from halbench.tasks.corpus import draw_length, neutral_draw
from halbench.tasks.forward import last_logits
from halbench.tasks.layout import PlacementError, Plan, compose, fill
from halbench.tasks.spec import GrammarWorldSpec, NaturalWorldSpec
from halbench.tasks.world import World


def measure_controls(
    spec: GrammarWorldSpec | NaturalWorldSpec,
    world: World,
    tok: PreTrainedTokenizerFast,
    model: torch.nn.Module,
    n: int = 96,
) -> dict:
    """Rates (greedy answer equals the expected one) on ``n`` fresh prompts per control."""
    rng = np.random.default_rng([spec.seed, 4])
    draw = neutral_draw(world, rng)

    def rate(plans: list[tuple[Plan, str]]) -> float | None:
        rows, wanted = [], []
        for plan, answer in plans:
            try:
                prompt = compose(world, rng, plan, draw_length(spec.lengths, rng))
            except PlacementError:
                continue
            fill(prompt, rng, draw, spec.topic_words, spec.topic_rate)
            rows.append(tok.convert_tokens_to_ids(prompt.tokens))
            wanted.append(tok.convert_tokens_to_ids(answer))
        if not rows:
            return None
        pred = last_logits(model, rows).argmax(-1).numpy()
        return round(float(np.mean(pred == np.asarray(wanted))), 4)

    def pick(seq: list):
        return seq[int(rng.integers(len(seq)))]

    def facts(entities: list[str]) -> float | None:
        return rate([(Plan(entity=e), world.facts[e]) for e in (pick(entities) for _ in range(n))])

    out: dict = {"fact_accuracy_frequent": facts(world.frequent), "fact_accuracy_rare": facts(world.rare)}
    for kind in ("single", "pair", "triple"):
        mechs = world.mechanisms_of([kind])
        if not mechs:
            continue
        firing = [(Plan(entity=pick(world.rare), mechanisms=[m]), m.target) for m in (pick(mechs) for _ in range(n))]
        out[f"{kind}_rate_on_rare"] = rate(firing)
        if kind != "single":
            wrapped = [(Plan(entity=pick(world.rare), mechanisms=[m], wrapped=True), m.target)
                       for m in (pick(mechs) for _ in range(n))]  # fmt: skip
            out[f"{kind}_wrapped_rate_on_rare"] = rate(wrapped)
            parts = [(m, pick(m.parts)) for m in (pick(mechs) for _ in range(n))]
            out[f"{kind}_part_alone_rate"] = rate(
                [(Plan(entity=pick(world.rare), parts=[p]), m.target) for m, p in parts]
            )
    with_decoys = [m for m in world.mechanisms if m.decoys]
    if with_decoys:
        plans = [(Plan(entity=pick(world.rare), decoys=list(m.decoys)), m.target)
                 for m in (pick(with_decoys) for _ in range(n))]  # fmt: skip
        out["decoy_alone_rate"] = rate(plans)
    if world.context_entities:
        stated = [pick(world.answers) for _ in range(n)]
        out["context_read_rate"] = rate([(Plan(context=(pick(world.context_entities), a)), a) for a in stated])
        mechs = [pick(world.mechanisms) for _ in range(n)]
        out["context_override_rate"] = rate(
            [
                (Plan(context=(pick(world.context_entities), pick(world.answers)), mechanisms=[m]), m.target)
                for m in mechs
            ]
        )
    return out
