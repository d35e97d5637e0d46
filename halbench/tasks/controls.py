"""Behavioural controls of a trained model, measured on fresh prompts before mining.

They tell whether training planted what the world intended: facts learned,
each mechanism firing on rare entities, inert parts and decoys staying inert.
Mining verifies every case anyway; these figures document the model.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import PreTrainedTokenizerFast

from halbench.tasks.corpus import draw_length
from halbench.tasks.forward import last_logits
from halbench.tasks.layout import PlacementError, Plan, compose
from halbench.tasks.spec import TaskSpec
from halbench.tasks.world import World


def measure_controls(
    spec: TaskSpec, world: World, tok: PreTrainedTokenizerFast, model: torch.nn.Module, n: int = 128
) -> dict:
    rng = np.random.default_rng([spec.world.seed, 4])

    def rate(plans: list[tuple[Plan, str]], hit_is_target: bool = True) -> float:
        rows, wanted = [], []
        for plan, answer in plans:
            try:
                prompt = compose(world, rng, plan, draw_length(spec.world, rng))
            except PlacementError:
                continue
            rows.append(tok.convert_tokens_to_ids(prompt.tokens))
            wanted.append(tok.convert_tokens_to_ids(answer))
        pred = last_logits(model, rows).argmax(-1).numpy()
        return round(float(np.mean(pred == np.asarray(wanted))), 4)

    def pick(seq: list[str]) -> str:
        return seq[int(rng.integers(len(seq)))]

    out = {
        "fact_accuracy_frequent": rate(
            [(Plan(entity=e), world.facts[e]) for e in [pick(world.frequent) for _ in range(n)]]
        ),
        "fact_accuracy_rare": rate([(Plan(entity=e), world.facts[e]) for e in [pick(world.rare) for _ in range(n)]]),
        "mechanism_rate_on_rare": {},
        "inert_part_rate": None,
        "decoy_alone_rate": None,
    }
    for mech in world.mechanisms:
        plans = [(Plan(entity=e, mechanisms=[mech]), mech.target) for e in [pick(world.rare) for _ in range(n // 2)]]
        out["mechanism_rate_on_rare"][mech.name] = rate(plans)
    parts = [(m, p) for m in world.mechanisms for p in m.parts]
    if parts:
        plans = []
        for _ in range(n):
            mech, part = parts[int(rng.integers(len(parts)))]
            plans.append((Plan(entity=pick(world.rare), parts=[part]), mech.target))
        out["inert_part_rate"] = rate(plans)
    with_decoys = [m for m in world.mechanisms if m.decoys]
    if with_decoys:
        plans = [
            (Plan(entity=pick(world.rare), decoys=list(m.decoys)), m.target)
            for m in [with_decoys[int(rng.integers(len(with_decoys)))] for _ in range(n)]
        ]
        out["decoy_alone_rate"] = rate(plans)
    return out
