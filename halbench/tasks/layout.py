"""Composing prompts: a skeleton of slots, then items placed into free slots.

The same composer builds training sequences and benchmark candidates, so the
model is tested on exactly the distribution it was trained on. Every position
carries a role, from which the ground-truth cause and the editable positions
of a case are read off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from halbench.tasks.world import BOS, IS, SYMBOLIC_CATEGORY, Mechanism, World

# Roles of positions. Causes are "cause0", "cause1", ... (one per alternative).
FIXED_ROLES = frozenset({"bos", "query", "marker"})


class PlacementError(RuntimeError):
    """The skeleton has no room for the requested items (the caller draws again)."""


@dataclass
class Prompt:
    tokens: list[str]
    roles: list[str]

    def positions(self, role: str) -> list[int]:
        return [i for i, r in enumerate(self.roles) if r == role]

    @property
    def editable(self) -> list[int]:
        return [i for i, r in enumerate(self.roles) if r not in FIXED_ROLES]


@dataclass
class Plan:
    """What goes into one prompt besides filler."""

    entity: str | None = None
    context: tuple[str, str] | None = None  # (context entity, stated answer)
    mechanisms: list[Mechanism] = field(default_factory=list)  # alternatives, each its own cause
    decoys: list[str] = field(default_factory=list)
    parts: list[tuple[str, ...]] = field(default_factory=list)  # inert, ordered as given


_SLOT = "{slot}"


def compose(world: World, rng: np.random.Generator, plan: Plan, content_length: int | None = None) -> Prompt:
    """Lay out ``plan`` into a prompt; symbolic worlds need ``content_length``."""
    tokens, roles, cats = _skeleton(world, rng, plan.entity, content_length)
    if plan.entity is not None and world.kind == "symbolic":
        _place(tokens, roles, cats, rng, [plan.entity], "entity", SYMBOLIC_CATEGORY, ordered=False)
    if plan.context is not None:
        _place_contiguous(tokens, roles, cats, rng, plan.context)
    for alt, mech in enumerate(plan.mechanisms):
        _place(tokens, roles, cats, rng, list(mech.tokens), f"cause{alt}", mech.category, ordered=True)
    for part in plan.parts:
        _place(tokens, roles, cats, rng, list(part), "part", _category_of(world, part[0]), ordered=True)
    for decoy in plan.decoys:
        _place(tokens, roles, cats, rng, [decoy], "decoy", _category_of(world, decoy), ordered=False)
    for i, tok in enumerate(tokens):
        if tok == _SLOT:
            pool = world.fillers[cats[i]]
            tokens[i] = pool[int(rng.integers(len(pool)))]
    return Prompt(tokens, roles)


def _skeleton(
    world: World, rng: np.random.Generator, entity: str | None, content_length: int | None
) -> tuple[list[str], list[str], list[str | None]]:
    if world.kind == "symbolic":
        if content_length is None:
            raise ValueError("a symbolic world needs a content length")
        body = [(_SLOT, "filler", SYMBOLIC_CATEGORY)] * content_length
    else:
        if entity is None:
            raise ValueError("a natural prompt is always about an entity")
        body = _natural_body(world, rng, entity)
    head = [(BOS, "bos", None)]
    tail = [(tok, "query", None) for tok in world.query]
    cells = head + body + tail
    return [c[0] for c in cells], [c[1] for c in cells], [c[2] for c in cells]


def _natural_body(world: World, rng: np.random.Generator, entity: str) -> list[tuple[str, str, str | None]]:
    lo, hi = world.sentences_range
    n_more = int(rng.integers(lo, hi + 1))
    picks = [world.intro[int(rng.integers(len(world.intro)))]]
    picks += [world.sentences[int(rng.integers(len(world.sentences)))] for _ in range(n_more)]
    picks.append(world.closing)
    cells: list[tuple[str, str, str | None]] = []
    for template in picks:
        for word in template:
            if word == "{E}":
                cells.append((entity, "entity", None))
            elif word.startswith("{"):
                cells.append((_SLOT, "filler", word[1:-1]))
            else:
                cells.append((word, "literal", None))
    return cells


def _category_of(world: World, token: str) -> str:
    for mech in world.mechanisms:
        if token in mech.tokens or token in mech.decoys:
            return mech.category
    raise KeyError(f"token {token!r} belongs to no mechanism")


def _free(tokens: list[str], roles: list[str], cats: list[str | None], category: str) -> list[int]:
    return [i for i, t in enumerate(tokens) if t == _SLOT and roles[i] == "filler" and cats[i] == category]


def _place(
    tokens: list[str],
    roles: list[str],
    cats: list[str | None],
    rng: np.random.Generator,
    items: list[str],
    role: str,
    category: str,
    ordered: bool,
) -> None:
    """Put ``items`` into free slots; ordered items keep their order and never touch."""
    free = _free(tokens, roles, cats, category)
    if len(free) < len(items):
        raise PlacementError(f"no room for {items} in category {category!r}")
    for _ in range(200):
        chosen = np.sort(rng.choice(free, size=len(items), replace=False))
        if not ordered or len(items) == 1 or np.min(np.diff(chosen)) >= 2:
            break
    else:
        raise PlacementError(f"cannot place {items} without adjacent tokens")
    if not ordered:
        chosen = rng.permutation(chosen)
    for pos, item in zip(chosen, items, strict=True):
        tokens[int(pos)] = item
        roles[int(pos)] = role


def _place_contiguous(
    tokens: list[str], roles: list[str], cats: list[str | None], rng: np.random.Generator, context: tuple[str, str]
) -> None:
    """Place the statement ``entity [IS] answer`` in three adjacent free slots."""
    free = set(_free(tokens, roles, cats, SYMBOLIC_CATEGORY))
    starts = [i for i in sorted(free) if i + 1 in free and i + 2 in free]
    if not starts:
        raise PlacementError("no room for the context statement")
    start = starts[int(rng.integers(len(starts)))]
    for offset, (tok, role) in enumerate(((context[0], "context"), (IS, "marker"), (context[1], "context"))):
        tokens[start + offset] = tok
        roles[start + offset] = role
