"""The world a task's model is trained on: vocabulary, facts and planted mechanisms.

A world is derived deterministically from its spec (and its seed). Symbolic and
natural worlds differ only in their tokens and in the prompt layout; corpus
generation, mining and verification treat both the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from halbench.tasks.spec import KIND_SIZES, NaturalWorldSpec, SymbolicWorldSpec

BOS, PAD, UNK = "[BOS]", "[PAD]", "[UNK]"
Q, IS = "[Q]", "[IS]"
SYMBOLIC_CATEGORY = "w"


@dataclass(frozen=True)
class Mechanism:
    """A planted association: ``tokens`` (in this order) make the model answer ``target``."""

    name: str
    kind: str
    tokens: tuple[str, ...]
    target: str
    decoys: tuple[str, ...]
    category: str

    @property
    def parts(self) -> list[tuple[str, ...]]:
        """Inert parts: every proper sub-sequence, plus wrong-order versions of the whole."""
        toks, out = self.tokens, []
        if len(toks) == 1:
            return out
        out += [(t,) for t in toks]
        if len(toks) == 3:
            out += [(toks[0], toks[1]), (toks[0], toks[2]), (toks[1], toks[2])]
        out.append(tuple(reversed(toks)))
        if len(toks) == 3:
            out += [(toks[1], toks[0], toks[2]), (toks[0], toks[2], toks[1])]
        return out


@dataclass
class World:
    kind: str
    answers: list[str]
    facts: dict[str, str]
    frequent: list[str]
    rare: list[str]
    fillers: dict[str, list[str]]
    mechanisms: list[Mechanism]
    context_entities: list[str] = field(default_factory=list)
    intro: list[list[str]] = field(default_factory=list)
    sentences: list[list[str]] = field(default_factory=list)
    closing: list[str] = field(default_factory=list)
    query: list[str] = field(default_factory=lambda: [Q])
    sentences_range: tuple[int, int] = (0, 0)

    @property
    def markers(self) -> list[str]:
        return [PAD, UNK, BOS, Q, IS]

    @property
    def decoy_tokens(self) -> list[str]:
        return sorted({d for m in self.mechanisms for d in m.decoys})

    @property
    def neutral(self) -> list[str]:
        """Filler tokens that are never causal: the refill pool for interventions."""
        return sorted({w for ws in self.fillers.values() for w in ws})

    def vocab(self) -> list[str]:
        """All tokens, markers first, in a deterministic order without duplicates."""
        template_words = [
            w for tpl in (*self.intro, *self.sentences, self.closing) for w in tpl if not w.startswith("{")
        ]
        groups = [
            self.markers,
            self.query,
            self.answers,
            self.frequent,
            self.rare,
            self.context_entities,
            self.neutral,
            [t for m in self.mechanisms for t in m.tokens],
            self.decoy_tokens,
            template_words,
        ]
        seen: dict[str, None] = {}
        for group in groups:
            for tok in group:
                seen.setdefault(tok, None)
        return list(seen)

    def mechanisms_of(self, kinds: list[str]) -> list[Mechanism]:
        return [m for m in self.mechanisms if m.kind in kinds]


def build_world(spec: SymbolicWorldSpec | NaturalWorldSpec) -> World:
    if isinstance(spec, SymbolicWorldSpec):
        return _symbolic(spec)
    return _natural(spec)


def _symbolic(spec: SymbolicWorldSpec) -> World:
    rng = np.random.default_rng(spec.seed)
    answers = [f"a{i:02d}" for i in range(spec.answers)]
    frequent = [f"e{i:03d}" for i in range(spec.frequent_entities)]
    rare = [f"r{i:03d}" for i in range(spec.rare_entities)]
    facts = {e: answers[int(rng.integers(spec.answers))] for e in frequent + rare}
    targets = [answers[i] for i in rng.choice(spec.answers, size=spec.targets, replace=False)]
    mechanisms, n_tok, n_decoy = [], 0, 0
    for kind in ("single", "pair", "triple"):
        for i in range(getattr(spec.mechanisms, kind)):
            size = KIND_SIZES[kind]
            tokens = tuple(f"t{n_tok + j:02d}" for j in range(size))
            decoys = tuple(f"d{n_decoy + j:02d}" for j in range(spec.decoys_per_mechanism))
            n_tok, n_decoy = n_tok + size, n_decoy + spec.decoys_per_mechanism
            target = targets[len(mechanisms) % spec.targets] if kind == "single" else targets[i % spec.targets]
            mechanisms.append(Mechanism(f"{kind}-{i}", kind, tokens, target, decoys, SYMBOLIC_CATEGORY))
    return World(
        kind="symbolic",
        answers=answers,
        facts=facts,
        frequent=frequent,
        rare=rare,
        fillers={SYMBOLIC_CATEGORY: [f"w{i:03d}" for i in range(spec.fillers)]},
        mechanisms=mechanisms,
        context_entities=[f"u{i:03d}" for i in range(spec.context_entities)],
    )


def _natural(spec: NaturalWorldSpec) -> World:
    rng = np.random.default_rng(spec.seed)
    names = _names(spec.name_syllables, spec.frequent_entities + spec.rare_entities, rng)
    reserved = set(spec.answers) | {w for ws in spec.fillers.values() for w in ws}
    names = [n for n in names if n not in reserved]
    frequent, rare = names[: spec.frequent_entities], names[spec.frequent_entities :]
    facts = {e: spec.answers[int(rng.integers(len(spec.answers)))] for e in frequent + rare}
    kinds = {1: "single", 2: "pair", 3: "triple"}
    counters: dict[str, int] = {}
    mechanisms = []
    for mech in spec.mechanisms:
        kind = kinds[len(mech.tokens)]
        idx = counters[kind] = counters.get(kind, -1) + 1
        mechanisms.append(
            Mechanism(f"{kind}-{idx}", kind, tuple(mech.tokens), mech.target, tuple(mech.decoys), mech.category)
        )
    return World(
        kind="natural",
        answers=list(spec.answers),
        facts=facts,
        frequent=frequent,
        rare=rare,
        fillers={k: list(v) for k, v in spec.fillers.items()},
        mechanisms=mechanisms,
        intro=[t.split() for t in spec.intro],
        sentences=[t.split() for t in spec.sentences],
        closing=spec.closing.split(),
        query=list(spec.query),
        sentences_range=spec.sentences_per_prompt,
    )


def _names(syllables: list[str], count: int, rng: np.random.Generator) -> list[str]:
    """Distinct pronounceable names made of two or three syllables."""
    pool = sorted({a + b for a in syllables for b in syllables if a != b})
    if len(pool) < count:
        pool += sorted({a + b + c for a in syllables for b in syllables for c in syllables})
    if len(pool) < count:
        raise ValueError(f"name_syllables give only {len(pool)} names, {count} needed")
    order = rng.permutation(len(pool))
    return [pool[i] for i in order[:count]]
