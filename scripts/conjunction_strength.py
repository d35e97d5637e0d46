#!/usr/bin/env python
"""How conjunctive are the multi-token causes? The target rate with the whole cause or one part of it kept.

For every test case of the multi-token instances (causes of two or more tokens), every editable position
outside what is kept is refilled from the corpus unigram (the intervention anyone with the corpus has),
``--refills`` times, and the share of greedy answers that are the hallucinated target is counted:

- ``whole``: the whole cause kept (the suite's unigram sufficiency);
- ``part``: one token of the cause kept, the others refilled (the mean over the cause's tokens);
- ``..., other entity``: the same with every occurrence of the prompt's entity (the token whose fact is the
  faithful answer) swapped for another rare entity of the world, drawn per refill among those whose fact is
  neither the target nor the faithful answer;
- ``..., no entity``: the same with the entity's occurrences unigram-refilled too (no evidence left).

A cause is *conjunctive* in the strong sense when ``part`` stays low without the entity too; it is
conjunctive only *against the stated fact* when ``part`` is low with the entity but high once the entity
(the evidence for the faithful answer) is gone. The README quotes this table for the built suite.

    python scripts/conjunction_strength.py [--task conjunctive --task ordered ...] [--refills 16]
"""

from __future__ import annotations

import argparse
import json
import zlib

import numpy as np

from halbench.tasks.bundle import load_bundle
from halbench.tasks.forward import last_logits
from halbench.tasks.registry import built_instances
from halbench.tasks.verify import Refills

ENTITY = ("", ", other entity", ", no entity")
CONDITIONS = tuple(f"{kept}{e}" for e in ENTITY for kept in ("whole", "part"))


def entity_swaps(record: dict, world: dict, tok, refills: Refills, rng, n: int) -> dict[str, tuple[list, np.ndarray]]:
    """Positions of the prompt's entity, and ``[n, 1]`` ids for them per condition: another rare entity with an
    unrelated fact (the same in every occurrence), or unigram draws (``[n, occurrences]``)."""
    facts = world["facts"]
    faithful, target = record["faithful_tokens"][0], record["target_tokens"][0]
    positions = [i for i, t in enumerate(record["prompt_tokens"]) if facts.get(t) == faithful]
    others = np.asarray(tok.convert_tokens_to_ids([e for e in world["rare"] if facts.get(e) not in (faithful, target)]))
    return {
        ENTITY[1]: (positions, others[rng.integers(len(others), size=n)][:, None]),
        ENTITY[2]: (positions, refills.draw("unigram", rng, [], positions, n)),
    }


def rows_for(record, keep, swap, refills: Refills, rng, n) -> np.ndarray:
    """``n`` copies of the prompt: editable positions outside ``keep`` unigram-refilled, the entity swapped."""
    rows = np.repeat(np.asarray(record["prompt_ids"])[None, :], n, axis=0)
    refill = [q for q in record["editable"] if q not in set(keep)]
    rows[:, refill] = refills.draw("unigram", rng, [], refill, n)
    if swap is not None:
        positions, entities = swap
        rows[:, positions] = entities
    return rows


def case_rates(bundle, record, world, refills: Refills, n: int) -> dict[str, float] | None:
    cause = max(record["causes"], key=len)
    if len(cause) < 2:
        return None
    rng = np.random.default_rng(zlib.crc32(record["id"].encode()))
    swaps = {ENTITY[0]: None, **entity_swaps(record, world, bundle.tokenizer, refills, rng, n)}
    target = record["target_ids"][0]
    blocks = {}
    for e, swap in swaps.items():
        blocks[f"whole{e}"] = [rows_for(record, cause, swap, refills, rng, n)]
        blocks[f"part{e}"] = [rows_for(record, [q], swap, refills, rng, n) for q in cause]
    order = [(c, b) for c in CONDITIONS for b in blocks[c]]
    greedy = last_logits(bundle.model, np.concatenate([b for _, b in order]).tolist()).argmax(-1).numpy()
    hits = (greedy == target).reshape(len(order), n).mean(1)
    return {c: float(np.mean([h for (name, _), h in zip(order, hits, strict=True) if name == c])) for c in CONDITIONS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", help="task names (default: conjunctive, ordered, partial)")
    parser.add_argument("--refills", type=int, default=16)
    args = parser.parse_args()
    tasks = set(args.task or ("conjunctive", "ordered", "partial"))
    print("| instance | cases | " + " | ".join(CONDITIONS) + " |")
    print("|---|---|" + "---|" * len(CONDITIONS))
    for ref in built_instances():
        if ref.task not in tasks:
            continue
        bundle = load_bundle(ref, device="cpu")
        world = json.loads((ref.model_folder / "world.json").read_text())
        refills = Refills.from_records({}, bundle.unigram)
        rates = [r for rec in bundle.cases("test") if (r := case_rates(bundle, rec, world, refills, args.refills))]
        means = " | ".join(f"{np.mean([r[c] for r in rates]):.2f}" for c in CONDITIONS)
        print(f"| {ref.name} | {len(rates)} | {means} |")


if __name__ == "__main__":
    main()
