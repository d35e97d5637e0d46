"""Mining hallucination cases: draw candidate prompts, keep those that pass verification.

Candidates are drawn from the same composer as the training corpus, each from
its own seeded generator (so candidate ``i`` is the same whatever the chunking).
Test cases are drawn only from test mechanisms and dev cases only from dev
mechanisms, so nothing learned from dev causes carries to test by lookup.
The ground truth of an admitted case is the planted mechanism's positions,
confirmed by the interventions in :mod:`halbench.tasks.verify`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerFast

from halbench.tasks.corpus import neutral_draw
from halbench.tasks.forward import last_logits
from halbench.tasks.layout import (
    FIXED_ROLES,
    INERT_ROLES,
    PlacementError,
    Plan,
    Prompt,
    avoiding,
    compose,
    compose_echoed,
    fill,
)
from halbench.tasks.lone_parts import keep_one_word_per_conjunction, lone_part_draw, lone_weights
from halbench.tasks.spec import ModelRecipe, NaturalWorldSpec, TaskSpec
from halbench.tasks.verify import Candidate, Refills, Verdict, verify
from halbench.tasks.world import Mechanism, World

SPLITS = ("test", "dev")
GROUP_SIZE = {"single": 1, "pair": 2, "triple": 3}  # words per mechanism kind


@dataclass
class Drawn:
    index: int
    split: str
    prompt: Prompt
    mechanisms: list[Mechanism]
    target: str
    faithful: str | None
    candidate: Candidate


@dataclass
class MiningStats:
    drawn: int = 0
    hallucinating: int = 0
    checked: int = 0  # hallucinating candidates sent to verification (at most two per open place)
    verified: int = 0
    accepted: int = 0
    failures: Counter = field(default_factory=Counter)  # staged: the checks a rejected candidate failed first

    @property
    def pass_rate(self) -> float:
        return self.verified / self.checked if self.checked else 0.0

    def as_record(self) -> dict:
        return {
            "candidates_drawn": self.drawn,
            "hallucinating": self.hallucinating,
            "checked": self.checked,
            "verified": self.verified,
            "accepted": self.accepted,
            "verification_pass_rate": round(self.pass_rate, 4),
            "failed_checks": dict(sorted(self.failures.items())),
            "failed_checks_counted": "first failing stage",  # verification is staged (verify.STAGES)
        }


def fix_non_trigger_positions(prompt: Prompt, categories: set[str] | None) -> None:
    """Only words that could be triggers stay editable: the entity, a context statement (``u [IS] a``, evidence
    and never a cause), function words and filler of categories that are never triggers are fixed
    (``categories`` None: every content category can hold a trigger).

    Were they editable, "function words / the name / adjectives are never causes" would be priors learnable
    from dev without the model. The token_form probe found each: on natural prompts, AP 0.20 against random's
    0.08 with template words editable, 0.46 against 0.29 with the name and the other categories; on grammar
    prompts, the function words' strings, ids and frequency and the repeated entity (cause and non-cause
    log-frequency 6.7 against 8.8 before, 6.71 against 6.70 after).
    """
    for i, (role, cat) in enumerate(zip(prompt.roles, prompt.cats, strict=True)):
        other = categories is not None and role == "filler" and cat is not None and cat not in categories
        if role in ("entity", "context", "literal") or other:
            prompt.roles[i] = "template"


def fix_repeated_words(prompt: Prompt) -> None:
    """Filler words that occur more than once in the prompt are fixed, so no editable word repeats.

    A planted cause never repeats in its prompt, while topic words do (as in real text); with repeated filler
    editable, "a word seen once in the prompt" was a model-free tell learnable from dev: the token_form probe
    scored AP 0.202 against random's 0.129 on conjunctive/grammar-gpt2-d, editable non-causes repeating 0.7-1.2
    times on average and causes never. Inert distractors (decoys, partial parts, reversed copies) keep their role.
    """
    counts = Counter(prompt.tokens)
    for i, (role, token) in enumerate(zip(prompt.roles, prompt.tokens, strict=True)):
        if role == "filler" and counts[token] > 1:
            prompt.roles[i] = "template"


def fix_unpaired_filler(prompt: Prompt) -> None:
    """With echo groups (``mining.pair_filler``), filler seen other than exactly twice is fixed.

    Beside its reversed copy every word of an `ordered` cause occurs twice, while under ``fix_repeated`` no
    editable filler word does: the token_form probe read that (AP 0.500 against random's 0.136 on
    ordered/grammar-llama-e, the cause and its copy ranked first). With every editable word seen twice, and
    laid out as the cause is (:func:`halbench.tasks.layout.echo_groups`), what tells the cause from its copy
    and from the echoes is the order and the words the model reads, which is the point of the task.
    """
    counts = Counter(prompt.tokens)
    for i, (role, token) in enumerate(zip(prompt.roles, prompt.tokens, strict=True)):
        if role == "filler" and counts[token] != 2:
            prompt.roles[i] = "template"


def slot_pools(prompt: Prompt) -> list[str | None]:
    """The neutral refill pool of each position: its word category, ``any``, or None (fixed)."""
    out: list[str | None] = []
    for role, cat in zip(prompt.roles, prompt.cats, strict=True):
        if role in FIXED_ROLES:
            out.append(None)
        elif cat is not None:
            out.append(cat)
        else:
            out.append("any")
    return out


def draw_candidate(
    spec: TaskSpec, recipe: ModelRecipe, world: World, tok: PreTrainedTokenizerFast, index: int, split: str
) -> Drawn | None:
    """Draw candidate ``index`` of ``split``; ``None`` when it cannot be laid out or its target is the truth."""
    stream = (SPLITS.index(split), index, *_redraw(spec, recipe.name))
    rng = np.random.default_rng([spec.seed, 2, *stream])
    mechs = _pick_mechanisms(spec, world, rng, split, index)
    tilt = spec.mining.cause_tilt.get(recipe.name, 0.0)
    plan = Plan(mechanisms=mechs, wrapped=spec.mining.reordered_copy, cause_tilt=tilt)
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
    plan.decoys = _decoys(spec, world, mechs, rng, split) + _lures(spec, world, mechs, rng, split)
    plan.parts = _partial_parts(spec, world, mechs, rng, split)
    lo, hi = spec.mining.prompt_length
    draw = neutral_draw(world, rng)
    try:
        if spec.mining.pair_filler:
            sizes = [GROUP_SIZE[k] for k in spec.mining.mechanisms]
            prompt = compose_echoed(world, rng, plan, int(rng.integers(lo, hi + 1)), draw, sizes)
            draw = avoiding(draw, set(prompt.tokens))  # leftover slots (then fixed) must not hit an echo's word
        else:
            prompt = compose(world, rng, plan, int(rng.integers(lo, hi + 1)))
    except PlacementError:
        return None
    if spec.mining.lone_parts or spec.mining.lone_singles:
        lone = lone_part_draw(world, rng, mechs, lone_weights(spec.mining.lone_parts, spec.mining.lone_singles))
        fill(prompt, rng, lone, recipe.world.topic_words, recipe.world.topic_rate)
        keep_one_word_per_conjunction(prompt, world, mechs, draw)
    else:
        fill(prompt, rng, draw, recipe.world.topic_words, recipe.world.topic_rate)
    natural = isinstance(recipe.world, NaturalWorldSpec)
    fix_non_trigger_positions(prompt, set(recipe.world.trigger_categories) if natural else None)
    if spec.mining.pair_filler:
        fix_unpaired_filler(prompt)
    elif spec.mining.fix_repeated:
        fix_repeated_words(prompt)
    ids = tok.convert_tokens_to_ids(prompt.tokens)
    cand = Candidate(
        prompt_ids=ids,
        target_id=tok.convert_tokens_to_ids(mechs[0].target),
        faithful_id=tok.convert_tokens_to_ids(faithful),
        causes=[prompt.positions(f"cause{a}") for a in range(len(mechs))],
        editable=prompt.editable,
        decoys=prompt.positions(*INERT_ROLES),
        entity=prompt.positions("entity", "context"),
        slots=slot_pools(prompt),
        seed=(spec.seed, 3, *stream),
    )
    return Drawn(index, split, prompt, mechs, mechs[0].target, faithful, cand)


def _redraw(spec: TaskSpec, model: str) -> tuple[int, ...]:
    """The seed suffix of ``model``'s candidate stream: empty unless redrawn, so every first draw is unchanged."""
    n = spec.mining.redraw.get(model, 0)
    return (n,) if n else ()


def task_mechanisms(spec: TaskSpec, world: World, split: str) -> list[Mechanism]:
    """The mechanisms ``spec`` may mine in ``split``: its kinds, and for test only its ``test_slice``."""
    pool = world.mechanisms_of(list(spec.mining.mechanisms), split)
    if split == "test":
        k, n = spec.mining.test_slice
        pool = [m for m in pool if m.number % n == k]
    if not pool:
        raise ValueError(f"no {split} mechanisms of kinds {spec.mining.mechanisms} in the world's slice")
    return pool


def _pick_mechanisms(spec: TaskSpec, world: World, rng: np.random.Generator, split: str, index: int) -> list[Mechanism]:
    pool = task_mechanisms(spec, world, split)
    if spec.mining.alternatives == 1:
        return [pool[index % len(pool)]]  # in turn: every mechanism gets its share of candidates
    everything = world.mechanisms_of(["single", "pair", "triple"], split)
    pairs = [(a, _partners(a, pool, everything)) for a in pool]
    pairs = [(a, p) for a, p in pairs if p]  # a first mechanism is one whose target another mechanism shares
    if not pairs:
        raise ValueError(f"no two {split} mechanisms share a target; add mechanisms")
    first, partners = pairs[int(rng.integers(len(pairs)))]
    return [first, partners[int(rng.integers(len(partners)))]]


def _partners(first: Mechanism, pool: list[Mechanism], everything: list[Mechanism]) -> list[Mechanism]:
    """Mechanisms of the same target: token-disjoint ones of the task's kinds first, then any kind."""
    same = [m for m in pool if m.target == first.target and not set(m.tokens) & set(first.tokens)]
    return same or [m for m in everything if m is not first and m.target == first.target]


def _decoys(spec: TaskSpec, world: World, mechs: list[Mechanism], rng, split: str) -> list[str]:
    """The mechanisms' own decoys first, then decoys of other mechanisms of the split, up to the drawn count."""
    lo, hi = spec.mining.decoys
    want = int(rng.integers(lo, hi + 1))
    own = [d for m in mechs for d in m.decoys]
    others = [d for m in world.mechanisms_of(["single", "pair", "triple"], split) if m not in mechs for d in m.decoys]
    own = [own[i] for i in rng.permutation(len(own))]
    others = [others[i] for i in rng.permutation(len(others))]
    return (own + others)[:want]


def _lures(spec: TaskSpec, world: World, mechs: list[Mechanism], rng, split: str) -> list[str]:
    """Single triggers of the split with the cause's target (none of them a cause here), in a random order.

    Decoys, lone parts and reversed copies are explained away in training, so they carry no weight and no
    per-token method ever ranked one above a cause. A lure does carry weight toward the target; verification
    admits the case only if the hallucination needs the cause with the lures present (necessity, minimality)
    and holds without them (decoy_inert), so the lures are associated with the target but not its cause.
    Where evidence adds up in the logit those checks force every lure to weigh less than every part (README,
    "Why per-token gradients top every task"): on grammar-llama-h none of 455 candidates passed.
    """
    lo, hi = spec.mining.lures
    if hi == 0:
        return []  # no draw: the candidates of tasks without lures stay as they were
    target, used = mechs[0].target, {t for m in mechs for t in m.tokens}
    singles = world.mechanisms_of(["single"], split)
    pool = [m.tokens[0] for m in singles if m.target == target and m.tokens[0] not in used]
    want = int(rng.integers(lo, hi + 1))
    return [pool[i] for i in rng.permutation(len(pool))[:want]]


def _partial_parts(spec: TaskSpec, world: World, mechs: list[Mechanism], rng, split: str) -> list[tuple[str, ...]]:
    """Incomplete, in-order parts of other conjunctions of the split (one partner missing)."""
    if not spec.mining.partial_parts:
        return []
    used = {t for m in mechs for t in m.tokens}
    others = [m for m in world.mechanisms_of(["pair", "triple"], split) if m not in mechs and not set(m.tokens) & used]
    picks = [others[i] for i in rng.permutation(len(others))[: spec.mining.partial_parts]]
    out = []
    for mech in picks:
        parts = mech.proper_parts
        out.append(parts[int(rng.integers(len(parts)))])
    return out


def _has_room(d: Drawn, per_mechanism: Counter, cap: int) -> bool:
    return all(per_mechanism[m.name] < cap for m in d.mechanisms)


def _spares(halluc: list[Drawn], per_mechanism: Counter, cap: int) -> list[Drawn]:
    """At most two candidates per open place of a mechanism go to verification (the costly step): a second in
    case the first fails, and no more, as the cap would reject them anyway."""
    seen, out = Counter(), []
    for d in halluc:
        if all(seen[m.name] < 2 * (cap - per_mechanism[m.name]) for m in d.mechanisms):
            out.append(d)
            seen.update(m.name for m in d.mechanisms)
    return out


def mechanism_cap(spec: TaskSpec, split: str, wanted: int) -> int:
    """Most cases one mechanism may cause in ``split``: ``test_per_mechanism`` for test (1: a trigger recurring
    across test prompts would give it away without the model), a share of the split for dev."""
    if split == "test":
        return spec.mining.test_per_mechanism
    return max(1, math.ceil(spec.mining.max_share * wanted))


def mine(
    spec: TaskSpec,
    recipe: ModelRecipe,
    world: World,
    tok: PreTrainedTokenizerFast,
    model: torch.nn.Module,
    refills: Refills,
    progress: bool = True,
    chunk: int = 128,
) -> tuple[list[tuple[Drawn, Verdict]], MiningStats]:
    """Draw and verify candidates of each split until its case count passes or the draw limit is hit."""
    stats, accepted = MiningStats(), []
    want = {"test": spec.cases.test, "dev": spec.cases.dev}
    bar = tqdm(total=sum(want.values()), desc=f"mine {spec.name}", unit="case", disable=not progress, leave=False)
    for split in SPLITS:
        got, per_mechanism = 0, Counter()
        cap = mechanism_cap(spec, split, want[split])
        for start in range(0, spec.mining.max_candidates, chunk):
            stop = min(start + chunk, spec.mining.max_candidates)
            drawn = [d for i in range(start, stop) if (d := draw_candidate(spec, recipe, world, tok, i, split))]
            drawn = [d for d in drawn if _has_room(d, per_mechanism, cap)]  # skip full mechanisms before the model
            stats.drawn += len(drawn)
            if not drawn:
                continue
            greedy = last_logits(model, [d.candidate.prompt_ids for d in drawn], spec.mining.batch_rows).argmax(-1)
            halluc = [d for d, g in zip(drawn, greedy.tolist(), strict=True) if g == d.candidate.target_id]
            stats.hallucinating += len(halluc)
            halluc = _spares(halluc, per_mechanism, cap)
            stats.checked += len(halluc)
            thresholds = {"neutral": spec.verification.neutral, "unigram": spec.verification.unigram}
            verdicts = verify(
                model, [d.candidate for d in halluc], refills, thresholds, spec.verification.refills,
                spec.mining.batch_rows, staged=True,
            )  # fmt: skip
            for d, v in zip(halluc, verdicts, strict=True):
                stats.failures.update(v.failed)
                if v.passed:
                    stats.verified += 1
                    if got < want[split] and _has_room(d, per_mechanism, cap):
                        accepted.append((d, v))
                        per_mechanism.update(m.name for m in d.mechanisms)
                        got += 1
                        bar.update(1)
            if got >= want[split]:
                break
    bar.close()
    stats.accepted = len(accepted)
    return accepted, stats
