"""Mining hallucination cases: draw candidate prompts, keep those that pass verification.

Candidates are drawn from the same composer as the training corpus, each from
its own seeded generator (so candidate ``i`` is the same whatever the chunking).
The ground truth of an admitted case is the planted mechanism's positions,
confirmed by the interventions in :mod:`halbench.tasks.verify`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerFast

from halbench.tasks.forward import last_logits
from halbench.tasks.layout import PlacementError, Plan, Prompt, compose
from halbench.tasks.spec import TaskSpec
from halbench.tasks.verify import Candidate, Verdict, verify
from halbench.tasks.world import Mechanism, World


@dataclass
class Drawn:
    index: int
    prompt: Prompt
    mechanisms: list[Mechanism]
    target: str
    faithful: str | None
    candidate: Candidate


@dataclass
class MiningStats:
    drawn: int = 0
    hallucinating: int = 0
    verified: int = 0
    accepted: int = 0
    failures: Counter = field(default_factory=Counter)

    @property
    def pass_rate(self) -> float:
        return self.verified / self.hallucinating if self.hallucinating else 0.0

    def as_record(self) -> dict:
        return {
            "candidates_drawn": self.drawn,
            "hallucinating": self.hallucinating,
            "verified": self.verified,
            "accepted": self.accepted,
            "verification_pass_rate": round(self.pass_rate, 4),
            "failed_checks": dict(sorted(self.failures.items())),
        }


def draw_candidate(spec: TaskSpec, world: World, tok: PreTrainedTokenizerFast, index: int) -> Drawn | None:
    """Draw candidate ``index``; ``None`` when its target would equal the true answer."""
    rng = np.random.default_rng([spec.seed, 2, index])
    mechs = _pick_mechanisms(spec, world, rng)
    plan = Plan(mechanisms=mechs)
    faithful: str | None
    if spec.mining.context:
        choices = [a for a in world.answers if a != mechs[0].target]
        faithful = choices[int(rng.integers(len(choices)))]
        plan.context = (world.context_entities[int(rng.integers(len(world.context_entities)))], faithful)
    else:
        pool = {"rare": world.rare, "frequent": world.frequent, "any": world.rare + world.frequent}
        entities = pool[spec.mining.entities]
        plan.entity = entities[int(rng.integers(len(entities)))]
        faithful = world.facts[plan.entity]
    if faithful == mechs[0].target:
        return None
    decoy_pool = [d for m in mechs for d in m.decoys]
    if spec.mining.decoys:
        plan.decoys = [str(d) for d in rng.choice(decoy_pool, size=spec.mining.decoys, replace=False)]
    length = None
    if spec.mining.prompt_length is not None:
        lo, hi = spec.mining.prompt_length
        length = int(rng.integers(lo, hi + 1)) - 1 - len(world.query)
    try:
        prompt = compose(world, rng, plan, length)
    except PlacementError:
        return None
    ids = tok.convert_tokens_to_ids(prompt.tokens)
    cand = Candidate(
        prompt_ids=ids,
        target_id=tok.convert_tokens_to_ids(mechs[0].target),
        faithful_id=tok.convert_tokens_to_ids(faithful),
        causes=[prompt.positions(f"cause{a}") for a in range(len(mechs))],
        editable=prompt.editable,
        decoys=prompt.positions("decoy"),
        entity=sorted(prompt.positions("entity") + prompt.positions("context")),
        seed=(spec.seed, 3, index),
    )
    return Drawn(index, prompt, mechs, mechs[0].target, faithful, cand)


def _pick_mechanisms(spec: TaskSpec, world: World, rng: np.random.Generator) -> list[Mechanism]:
    pool = world.mechanisms_of(list(spec.mining.mechanisms))
    first = pool[int(rng.integers(len(pool)))]
    if spec.mining.alternatives == 1:
        return [first]
    partners = [m for m in pool if m.target == first.target and not set(m.tokens) & set(first.tokens)]
    if not partners:
        raise ValueError(f"no second mechanism shares the target of {first.name}; add mechanisms to the world")
    return [first, partners[int(rng.integers(len(partners)))]]


def mine(
    spec: TaskSpec,
    world: World,
    tok: PreTrainedTokenizerFast,
    model: torch.nn.Module,
    neutral_ids: list[int],
    progress: bool = True,
    chunk: int = 256,
) -> tuple[list[tuple[Drawn, Verdict]], MiningStats]:
    """Draw and verify candidates until ``cases.test + cases.dev`` pass or the draw limit is hit."""
    want = spec.cases.test + spec.cases.dev
    stats, accepted = MiningStats(), []
    bar = tqdm(total=want, desc=f"mine {spec.name}", unit="case", disable=not progress, leave=False)
    for start in range(0, spec.mining.max_candidates, chunk):
        drawn = [
            draw_candidate(spec, world, tok, i) for i in range(start, min(start + chunk, spec.mining.max_candidates))
        ]
        drawn = [d for d in drawn if d is not None]
        stats.drawn += len(drawn)
        greedy = last_logits(model, [d.candidate.prompt_ids for d in drawn], spec.mining.batch_rows).argmax(-1)
        halluc = [d for d, g in zip(drawn, greedy.tolist(), strict=True) if g == d.candidate.target_id]
        stats.hallucinating += len(halluc)
        verdicts = verify(model, [d.candidate for d in halluc], spec.verification, neutral_ids, spec.mining.batch_rows)
        for d, v in zip(halluc, verdicts, strict=True):
            stats.failures.update(v.failed)
            if v.passed:
                stats.verified += 1
                if len(accepted) < want:
                    accepted.append((d, v))
                    bar.update(1)
        if len(accepted) >= want:
            break
    bar.close()
    stats.accepted = len(accepted)
    return accepted, stats
