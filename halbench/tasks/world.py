"""The world a model is trained on: vocabulary, templates, facts and planted mechanisms.

A world is derived deterministically from its spec and seed, and every model
gets its own seed, so its own world: which words are triggers, decoys,
entities and answers is drawn at random, token names carry no role (a grammar
world names every token ``tNNNN`` from a random permutation) and token ids are
a second, independent permutation. Mechanisms are split into dev and test
mechanisms: dev cases never share a trigger with test cases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from halbench.tasks.spec import KIND_SIZES, GrammarWorldSpec, NaturalWorldSpec

PAD, UNK, BOS, Q, MASK, IS = "[PAD]", "[UNK]", "[BOS]", "[Q]", "[MASK]", "[IS]"
SPECIALS = (PAD, UNK, BOS, Q, MASK, IS)
ENTITY = "{E}"


@dataclass(frozen=True)
class Mechanism:
    """A planted association: ``tokens`` (in this order) make the model answer ``target``."""

    name: str
    kind: str
    tokens: tuple[str, ...]
    target: str
    decoys: tuple[str, ...]
    split: str  # "dev" or "test": the cases it may cause

    @property
    def number(self) -> int:
        """The mechanism's number within its kind (``single-12`` -> 12)."""
        return int(self.name.rsplit("-", 1)[1])

    @property
    def parts(self) -> list[tuple[str, ...]]:
        """Inert parts: every proper ordered sub-sequence, plus every wrong order of the whole."""
        toks = self.tokens
        if len(toks) == 1:
            return []
        out = [(t,) for t in toks]
        if len(toks) == 3:
            out += [(toks[0], toks[1]), (toks[0], toks[2]), (toks[1], toks[2])]
        out += [p for p in _orders(toks) if p != toks]
        return out

    @property
    def proper_parts(self) -> list[tuple[str, ...]]:
        """Parts in the right order but incomplete (a conjunction missing a partner)."""
        return [p for p in self.parts if len(p) < len(self.tokens) and _in_order(p, self.tokens)]


def _orders(toks: tuple[str, ...]) -> list[tuple[str, ...]]:
    import itertools

    return [tuple(p) for p in itertools.permutations(toks)]


def _in_order(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    index = [whole.index(t) for t in part]
    return index == sorted(index)


@dataclass
class World:
    kind: str
    answers: list[str]
    facts: dict[str, str]
    frequent: list[str]
    rare: list[str]
    carriers: list[str]  # weakly known entities that appear with triggers in training (never in cases)
    context_entities: list[str]
    words: dict[str, list[str]]  # content words by category (mechanism tokens and decoys included)
    function: list[str]  # template literals
    intro: list[list[str]]
    sentences: list[list[str]]
    closing: list[str]
    query: list[str]
    mechanisms: list[Mechanism]
    vocab_order: list[str] = field(default_factory=list)  # every token, specials first, ids in this order

    @property
    def special(self) -> set[str]:
        """Words with a role: mechanism tokens and decoys (never used as neutral filler)."""
        return {t for m in self.mechanisms for t in (*m.tokens, *m.decoys)}

    def neutral(self, category: str) -> list[str]:
        special = self.special
        return [w for w in self.words[category] if w not in special]

    @property
    def category_of(self) -> dict[str, str]:
        return {w: c for c, ws in self.words.items() for w in ws}

    def mechanisms_of(self, kinds: list[str], split: str | None = None) -> list[Mechanism]:
        return [m for m in self.mechanisms if m.kind in kinds and (split is None or m.split == split)]

    def vocab(self) -> list[str]:
        return list(self.vocab_order)

    def private_record(self) -> dict:
        """The roles, for the verifier and for `tasks verify` (never shown to a method)."""
        return {
            "kind": self.kind,
            "answers": self.answers,
            "frequent": self.frequent,
            "rare": self.rare,
            "carriers": self.carriers,
            "context_entities": self.context_entities,
            "facts": self.facts,
            "categories": {c: ws for c, ws in self.words.items()},
            "neutral": {c: self.neutral(c) for c in self.words},
            "function": self.function,
            "mechanisms": [
                {"name": m.name, "kind": m.kind, "tokens": list(m.tokens), "target": m.target,
                 "decoys": list(m.decoys), "split": m.split}
                for m in self.mechanisms
            ],
        }  # fmt: skip


def build_world(spec: GrammarWorldSpec | NaturalWorldSpec) -> World:
    rng = np.random.default_rng([spec.seed, 0])
    world = _grammar(spec, rng) if isinstance(spec, GrammarWorldSpec) else _natural(spec, rng)
    world.mechanisms = _mechanisms(spec, world, rng)
    world.vocab_order = _vocab_order(world, rng)
    return world


def _grammar(spec: GrammarWorldSpec, rng: np.random.Generator) -> World:
    groups = {
        "answer": spec.answers,
        "frequent": spec.frequent_entities,
        "rare": spec.rare_entities,
        "carrier": spec.carrier_entities,
        "context": spec.context_entities,
        "function": spec.function_words,
        **{f"c{i}": spec.words_per_category for i in range(spec.categories)},
    }
    numbers = rng.permutation(sum(groups.values()))
    names, cursor = {}, 0
    for group, count in groups.items():
        names[group] = [f"t{n:04d}" for n in numbers[cursor : cursor + count]]
        cursor += count
    words = {f"c{i}": names[f"c{i}"] for i in range(spec.categories)}
    intro = [_clause(spec, rng, names["function"], entity=True) for _ in range(spec.intro_templates)]
    sentences = [_clause(spec, rng, names["function"], entity=False) for _ in range(spec.templates)]
    _assign_categories(intro, rng, list(words))
    _assign_categories(sentences, rng, list(words))
    entities = names["frequent"] + names["rare"] + names["carrier"]
    return World(
        kind="grammar",
        answers=names["answer"],
        facts={e: names["answer"][int(rng.integers(spec.answers))] for e in entities},
        frequent=names["frequent"],
        rare=names["rare"],
        carriers=names["carrier"],
        context_entities=names["context"],
        words=words,
        function=names["function"],
        intro=intro,
        sentences=sentences,
        closing=[ENTITY] if spec.closing_entity else [],
        query=[Q],
        mechanisms=[],
    )


def _clause(spec: GrammarWorldSpec, rng, function: list[str], entity: bool) -> list[str]:
    """A clause template: content slots (``{?}``, categories assigned later) and function words.

    It ends in one of the first two function words (a clause separator).
    """
    lo, hi = spec.clause_length
    body = []
    for _ in range(int(rng.integers(lo, hi + 1)) - 1):
        if rng.random() < 0.3 and len(function) > 2:
            body.append(function[int(rng.integers(2, len(function)))])
        else:
            body.append("{?}")
    if entity:
        body[0] = ENTITY  # the subject opens the prompt, as in real text: a position every architecture finds
    return [*body, function[int(rng.integers(min(2, len(function))))]]


def _assign_categories(templates: list[list[str]], rng: np.random.Generator, cats: list[str]) -> None:
    """Give the content slots of ``templates`` categories in equal shares, so every category is as frequent."""
    slots = [(t, i) for t, tpl in enumerate(templates) for i, w in enumerate(tpl) if w == "{?}"]
    labels = [cats[i % len(cats)] for i in range(len(slots))]
    for (t, i), k in zip(slots, rng.permutation(len(labels)), strict=True):
        templates[t][i] = "{" + labels[k] + "}"


def _natural(spec: NaturalWorldSpec, rng: np.random.Generator) -> World:
    count = spec.frequent_entities + spec.rare_entities + spec.carrier_entities
    reserved = set(spec.answers) | {w for ws in spec.words.values() for w in ws}
    names = [n for n in _names(spec.name_syllables, count + len(reserved), rng) if n not in reserved][:count]
    if len(names) < count:
        raise ValueError(f"name_syllables give only {len(names)} names, {count} needed")
    frequent = names[: spec.frequent_entities]
    rare = names[spec.frequent_entities : spec.frequent_entities + spec.rare_entities]
    carriers = names[spec.frequent_entities + spec.rare_entities :]
    templates = [*spec.intro, *spec.sentences, spec.closing]
    literals = sorted({w for t in templates for w in t.split() if not w.startswith("{")} | set(spec.query))
    return World(
        kind="natural",
        answers=list(spec.answers),
        facts={e: spec.answers[int(rng.integers(len(spec.answers)))] for e in frequent + rare + carriers},
        frequent=frequent,
        rare=rare,
        carriers=carriers,
        context_entities=[],
        words={k: list(v) for k, v in spec.words.items()},
        function=literals,
        intro=[t.split() for t in spec.intro],
        sentences=[t.split() for t in spec.sentences],
        closing=spec.closing.split(),
        query=list(spec.query),
        mechanisms=[],
    )


def _names(syllables: list[str], count: int, rng: np.random.Generator) -> list[str]:
    """Distinct pronounceable names made of two or three syllables."""
    pool = sorted({a + b for a in syllables for b in syllables if a != b})
    if len(pool) < count:
        pool += sorted({a + b + c for a in syllables for b in syllables for c in syllables})
    order = rng.permutation(len(pool))
    return [pool[i] for i in order[:count]]


def _mechanisms(spec, world: World, rng: np.random.Generator) -> list[Mechanism]:
    """Draw trigger and decoy words at random from the trigger categories; split each kind into dev and test."""
    cats = list(spec.trigger_categories) if isinstance(spec, NaturalWorldSpec) else list(world.words)
    pool = [w for c in cats for w in world.words[c]]
    order = [pool[i] for i in rng.permutation(len(pool))]
    targets = [world.answers[i] for i in rng.choice(len(world.answers), size=spec.targets, replace=False)]
    sizes = {kind: getattr(spec.mechanisms, kind) for kind in KIND_SIZES}
    needed = sum(n * (KIND_SIZES[k] + spec.decoys_per_mechanism) for k, n in sizes.items())
    if needed > len(order):
        raise ValueError(f"mechanisms need {needed} distinct words, the trigger categories have {len(order)}")
    out, cursor, made = [], 0, 0
    for kind, count in sizes.items():
        dev = set(rng.permutation(count)[: math.ceil(spec.dev_share * count)].tolist()) if count > 1 else set()
        for i in range(count):
            size = KIND_SIZES[kind]
            tokens = tuple(order[cursor : cursor + size])
            decoys = tuple(order[cursor + size : cursor + size + spec.decoys_per_mechanism])
            cursor += size + spec.decoys_per_mechanism
            target = targets[made % len(targets)]
            made += 1
            out.append(Mechanism(f"{kind}-{i}", kind, tokens, target, decoys, "dev" if i in dev else "test"))
    return out


def _vocab_order(world: World, rng: np.random.Generator) -> list[str]:
    """Specials first (fixed ids), then every other token in a random order: ids carry no role."""
    tokens: dict[str, None] = {}
    groups = [
        world.answers,
        world.frequent,
        world.rare,
        world.carriers,
        world.context_entities,
        world.function,
        *world.words.values(),
    ]
    for group in groups:
        for tok in group:
            if tok not in SPECIALS:
                tokens.setdefault(tok, None)
    rest = list(tokens)
    return [*SPECIALS, *(rest[i] for i in rng.permutation(len(rest)))]
