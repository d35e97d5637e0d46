"""Composing prompts: clauses from templates up to a length, items placed into free slots, then filler.

The same composer builds training sequences and benchmark candidates, so the
model is tested on exactly the distribution it was trained on. Every position
carries a role, from which the ground truth of a case and its editable
positions are read off, and content slots carry their word category, which
the verifier's neutral refills respect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from halbench.tasks.world import BOS, ENTITY, IS, Mechanism, World

# "template": a position that could never hold a trigger (function and template words, the entity, a context
# statement); mining.fix_non_trigger_positions marks them, because were they editable, "such a word is never
# the cause" would be a prior learnable from dev without the model.
FIXED_ROLES = frozenset({"bos", "query", "marker", "template"})
INERT_ROLES = ("decoy", "part", "copy")  # present in the prompt, verified not to matter


class PlacementError(RuntimeError):
    """The skeleton has no room for the requested items (the caller draws again)."""


@dataclass
class Prompt:
    tokens: list[str | None]  # None: a filler slot not filled yet
    roles: list[str]
    cats: list[str | None]  # the word category of a content slot

    def positions(self, *roles: str) -> list[int]:
        return [i for i, r in enumerate(self.roles) if r in roles]

    @property
    def editable(self) -> list[int]:
        return [i for i, r in enumerate(self.roles) if r not in FIXED_ROLES]

    @property
    def filled(self) -> bool:
        return all(t is not None for t in self.tokens)


@dataclass
class Plan:
    """What goes into one prompt besides filler."""

    entity: str | None = None
    context: tuple[str, str] | None = None  # (context entity, stated answer)
    mechanisms: list[Mechanism] = field(default_factory=list)  # alternatives, each its own cause
    decoys: list[str] = field(default_factory=list)
    parts: list[tuple[str, ...]] = field(default_factory=list)  # inert, ordered as given
    wrapped: bool = False  # a reversed copy of mechanisms[0]'s tokens around the cause
    cause_tilt: float = 0.0  # cause slots weighted exp(tilt * position / length); 0: uniform


def compose(world: World, rng: np.random.Generator, plan: Plan, length: int) -> Prompt:
    """Lay out ``plan`` in a prompt of about ``length`` positions (exactly, for grammar worlds); filler unfilled."""
    prompt = _skeleton(world, rng, plan, length)
    category = world.category_of
    for alt, mech in enumerate(plan.mechanisms):
        place(prompt, rng, list(mech.tokens), f"cause{alt}", category, ordered=True, tilt=plan.cause_tilt)
    if plan.wrapped and plan.mechanisms:
        _wrap(prompt, rng, plan.mechanisms[0], category)
    for part in plan.parts:
        place(prompt, rng, list(part), "part", category, ordered=True)
    for decoy in plan.decoys:
        place(prompt, rng, [decoy], "decoy", category, ordered=False)
    return prompt


def fill(prompt: Prompt, rng: np.random.Generator, draw: Callable[[str, int], list[str]], topic: int, rate: float):
    """Fill the empty slots: a share ``rate`` from the prompt's ``topic`` words, the rest by ``draw(cat, n)``.

    Real text repeats its content words, so repeated tokens in a prompt say nothing about causes.
    """
    slots = [i for i, t in enumerate(prompt.tokens) if t is None]
    if not slots:
        return prompt
    cats = sorted({prompt.cats[i] for i in slots})
    topics = {c: draw(c, max(1, topic // len(cats))) for c in cats} if topic else {}
    fresh = {c: iter(draw(c, sum(prompt.cats[i] == c for i in slots))) for c in cats}
    for i in slots:
        cat = prompt.cats[i]
        if topics and rng.random() < rate:
            words = topics[cat]
            prompt.tokens[i] = words[int(rng.integers(len(words)))]
        else:
            prompt.tokens[i] = next(fresh[cat])
    return prompt


def _skeleton(world: World, rng: np.random.Generator, plan: Plan, length: int) -> Prompt:
    closing = [] if plan.entity is None else world.closing
    budget = length - 1 - len(closing) - len(world.query)
    clauses = _clauses(world, rng, plan, budget)
    cells: list[tuple[str | None, str, str | None]] = [(BOS, "bos", None)]
    for clause in clauses:
        cells += clause
    cells += [_cell(w, plan.entity) for w in closing]
    cells += [(tok, "query", None) for tok in world.query]
    return Prompt([c[0] for c in cells], [c[1] for c in cells], [c[2] for c in cells])


def _cell(word: str, entity: str | None) -> tuple[str | None, str, str | None]:
    if word == ENTITY:
        return entity, "entity", None
    if word.startswith("{"):
        return None, "filler", word[1:-1]
    return word, "literal", None


def _clauses(world: World, rng: np.random.Generator, plan: Plan, budget: int) -> list[list]:
    """Clauses filling ``budget`` positions: an intro about the entity, sentences, a context statement."""
    out: list[list] = []
    if plan.entity is not None:
        intro = world.intro[int(rng.integers(len(world.intro)))]
        out.append([_cell(w, plan.entity) for w in intro])
    if plan.context is not None:
        statement = [(plan.context[0], "context", None), (IS, "marker", None), (plan.context[1], "context", None)]
        out.insert(0, statement)
    used = sum(len(c) for c in out)
    if used > budget:
        raise PlacementError(f"a prompt of {budget} body positions cannot hold its intro")
    while True:
        room = budget - used
        fitting = [s for s in world.sentences if len(s) <= room]
        if not fitting:
            break
        sentence = fitting[int(rng.integers(len(fitting)))]
        out.insert(int(rng.integers(len(out) + 1)) if plan.context is not None else len(out), [
            _cell(w, plan.entity) for w in sentence
        ])  # fmt: skip
        used += len(sentence)
    if world.kind == "grammar" and budget > used:
        cats = list(world.words)
        out.append([(None, "filler", cats[int(rng.integers(len(cats)))]) for _ in range(budget - used)])
    return out


def _free(prompt: Prompt, category: str, lo: int = 0, hi: int | None = None) -> list[int]:
    hi = len(prompt.tokens) if hi is None else hi
    return [
        i
        for i in range(lo, hi)
        if prompt.tokens[i] is None and prompt.roles[i] == "filler" and prompt.cats[i] == category
    ]


def _put(prompt: Prompt, pos: int, token: str, role: str) -> None:
    prompt.tokens[pos] = token
    prompt.roles[pos] = role


def place(
    prompt: Prompt,
    rng: np.random.Generator,
    items: list[str],
    role: str,
    category: dict,
    ordered: bool,
    tilt: float = 0.0,
) -> None:
    """Put ``items`` into free slots of their categories; ordered items keep their order and never touch.

    With ``tilt`` a slot at position ``p`` is drawn with weight ``exp(tilt * p / length)`` (0: uniformly, with
    the draws of every build before tilts existed)."""
    frees = [_free(prompt, category[item]) for item in items]
    if any(len(f) == 0 for f in frees):
        raise PlacementError(f"no room for {items}")
    draws = [_slot_draw(rng, f, len(prompt.tokens), tilt) for f in frees]
    for _ in range(200):
        chosen = [draw() for draw in draws]
        if len(set(chosen)) < len(chosen):
            continue
        if not ordered or len(items) == 1 or np.all(np.diff(chosen) >= 2):
            break
    else:  # rejection failed (few slots): draw left to right, each slot at least two after the last
        chosen = _ordered_draw(frees, rng)
        if chosen is None:
            raise PlacementError(f"cannot place {items} in order without adjacent tokens")
    for pos, item in zip(chosen, items, strict=True):
        _put(prompt, int(pos), item, role)


def _slot_draw(rng: np.random.Generator, free: list[int], length: int, tilt: float) -> Callable[[], int]:
    """One slot of ``free`` per call; the weights are computed once, not on each of ``place``'s retries."""
    if not tilt:
        return lambda: free[int(rng.integers(len(free)))]
    weights = np.exp(tilt * np.asarray(free, dtype=float) / length)
    p = weights / weights.sum()
    return lambda: free[int(rng.choice(len(free), p=p))]


def _ordered_draw(frees: list, rng: np.random.Generator, tries: int = 200) -> list[int] | None:
    """Slots in increasing order, two apart, one per list of ``frees``; None when no draw succeeds."""
    for _ in range(tries):
        chosen: list[int] = []
        for free in frees:
            options = [int(q) for q in free if not chosen or q >= chosen[-1] + 2]
            if not options:
                break
            chosen.append(options[int(rng.integers(len(options)))])
        else:
            return chosen
    return None


def _wrap(prompt: Prompt, rng: np.random.Generator, mech: Mechanism, category: dict) -> None:
    """A reversed copy of the cause's tokens that creates no second in-order match.

    For ``A B`` at ``a < b``: ``B`` before ``a`` and ``A`` after ``b``. For ``A B C``: ``C`` then ``B``
    before ``a``, ``A`` after ``c``. Any in-order match then has to use the cause's own positions.
    """
    cause = prompt.positions("cause0")
    toks = mech.tokens
    before = list(reversed(toks[1:]))  # C, B (or B)
    frees = [_free(prompt, category[t], 0, cause[0]) for t in before]
    frees.append(_free(prompt, category[toks[0]], cause[-1] + 1))
    if any(len(f) == 0 for f in frees):
        raise PlacementError("no room around the cause for its reversed copy")
    for _ in range(200):
        spots = [f[int(rng.integers(len(f)))] for f in frees]
        if np.all(np.diff(spots) > 0):
            break
    else:
        raise PlacementError("cannot place the reversed copy in order")
    for pos, tok in zip(spots, [*before, toks[0]], strict=True):
        _put(prompt, int(pos), tok, "copy")


def compose_echoed(world: World, rng: np.random.Generator, plan: Plan, length: int, draw, sizes: list[int]) -> Prompt:
    """``compose`` for a wrapped single cause among echo groups, the cause placed at a random turn among them
    (placed first, it would take the roomiest, most central slots and stand out by position)."""
    if not (plan.wrapped and len(plan.mechanisms) == 1 and not plan.parts and not plan.decoys):
        raise ValueError("echo groups go with one wrapped cause and no other distractors")
    prompt = _skeleton(world, rng, plan, length)
    free = sum(t is None and r == "filler" for t, r in zip(prompt.tokens, prompt.roles, strict=True))
    echo_groups(prompt, rng, draw, sizes, limit=int(rng.integers(int(free / (2 * np.mean(sizes))) + 1)))
    place(prompt, rng, list(plan.mechanisms[0].tokens), "cause0", world.category_of, ordered=True, tilt=plan.cause_tilt)
    _wrap(prompt, rng, plan.mechanisms[0], world.category_of)
    echo_groups(prompt, rng, draw, sizes)
    return prompt


def echo_groups(
    prompt: Prompt,
    rng: np.random.Generator,
    draw: Callable[[str, int], list[str]],
    sizes: list[int],
    limit: int | None = None,
) -> int:
    """Fill free filler slots with groups of neutral words laid out as an ordered cause and its reversed copy.

    With a reversed copy and no second in-order match, an ordered cause is always the middle of an
    interleaving (``B A B A``; ``C B A B C A``), and the only such layout there is. Random filler pairs
    rarely look like that: scoring the middles of interleaved repeated words found `ordered` causes with
    AP 0.315 against random's 0.138 without the model. Echo groups give every editable word the same
    layout as the cause, so layout tells nothing and only the order the model reads does. Returns how many
    groups were placed; slots left over are filled as usual (and then fixed, being seen once).
    """
    limit = len(prompt.tokens) if limit is None else limit
    placed, fresh = 0, avoiding(draw, {t for t in prompt.tokens if t is not None})
    while placed < limit and (spots := _group_spots(prompt, rng, sizes[int(rng.integers(len(sizes)))])) is not None:
        middle, copies = spots
        words = [fresh(prompt.cats[p], 1)[0] for p in middle]
        for pos, word in zip([*middle, *copies], [*words, *reversed(words[1:]), words[0]], strict=True):
            _put(prompt, int(pos), word, "filler")
        placed += 1
    return placed


def avoiding(draw: Callable[[str, int], list[str]], used: set[str], tries: int = 20):
    """``draw`` that redraws words in ``used`` (up to ``tries`` times) and adds what it returns to ``used``."""

    def out(cat: str, n: int) -> list[str]:
        words = []
        for _ in range(n):
            word = draw(cat, 1)[0]
            for _ in range(tries):
                if word not in used:
                    break
                word = draw(cat, 1)[0]
            used.add(word)
            words.append(word)
        return words

    return out


def _group_spots(prompt: Prompt, rng: np.random.Generator, size: int, tries: int = 50):
    """Middle slots (in order, two apart, as ``place`` puts a cause) and copy slots (as ``_wrap``), or None."""
    free = [i for i, t in enumerate(prompt.tokens) if t is None and prompt.roles[i] == "filler"]
    for _ in range(tries if len(free) >= 2 * size else 0):
        middle = sorted(int(p) for p in rng.choice(free, size, replace=False))
        if np.any(np.diff(middle) < 2):
            continue
        cats = [prompt.cats[p] for p in middle]
        frees = [_free(prompt, c, 0, middle[0]) for c in reversed(cats[1:])]
        frees.append(_free(prompt, cats[0], middle[-1] + 1))
        if any(len(f) == 0 for f in frees):
            continue
        for _ in range(tries):
            copies = [f[int(rng.integers(len(f)))] for f in frees]
            if np.all(np.diff(copies) > 0):
                return middle, copies
    return None
