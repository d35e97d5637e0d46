#!/usr/bin/env python
"""How often admitted prompts hold a test mechanism's word as filler, against a neutral word: the lone weights.

With ``mining.lone_parts`` a filler slot may hold a lone word of another test conjunction, so that cause words
recur across a model's public prompts as neutral filler does (the uniqueness probe,
:func:`halbench.tasks.recurrence.uniqueness_scores`). Verification turns away prompts in which a lone part is
not inert, so the rate in *admitted* prompts is lower than the drawn one; the ratio below (lone occurrences per
conjunction word over occurrences per neutral word, per prompt; the same for single triggers, under
``mining.lone_singles``) should be about 1. The ``dev`` columns are the ones to set the weights from; ``test``
is the check; a world without singles shows ``nan`` for them. Reads the case files and the world's private record.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

import numpy as np

from halbench.tasks.artifacts import CASES, read_cases
from halbench.tasks.lone_parts import CONJUNCTIONS, LONE_SPLIT
from halbench.tasks.registry import built_instances, resolve_model


def rate_ratio(records: list[dict], conjunction: set[str], neutral: set[str]) -> float:
    """Occurrences per conjunction word as editable filler over occurrences per neutral word, in ``records``."""
    lone, plain = Counter(), Counter()
    for r in records:
        causes = {p for group in r["causes"] for p in group}
        inert = set(r.get("decoys") or ())
        for p in r["editable"]:
            token = r["prompt_tokens"][p]
            if p in causes or p in inert:
                continue
            if token in conjunction:
                lone[token] += 1
            elif token in neutral:
                plain[token] += 1
    if not records or not plain or not conjunction:
        return float("nan")
    return (sum(lone.values()) / len(conjunction)) / (sum(plain.values()) / len(neutral))


def world_words(model: str, kinds: list[str]) -> tuple[set[str], set[str]]:
    """The words of the model's test mechanisms of ``kinds`` and its neutral words, from its world's private record."""
    world = json.loads((resolve_model(model).folder / "world.json").read_text())
    lone = {t for m in world["mechanisms"] if m["kind"] in kinds and m["split"] == LONE_SPLIT for t in m["tokens"]}
    return lone, {t for words in world["neutral"].values() for t in words}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", help="only these tasks (repeatable)")
    args = parser.parse_args()
    print("| instance | weights (parts, singles) | dev prompts | dev ratios | test prompts | test ratios |")
    print("|---|---|---|---|---|---|")
    for inst in built_instances():
        if args.task and inst.task not in args.task:
            continue
        mining = json.loads((inst.folder / "MANIFEST.json").read_text())["spec"]["mining"]
        weights = f"{float(mining.get('lone_parts', 0)):g}, {float(mining.get('lone_singles', 0)):g}"
        records = read_cases(inst.folder / CASES)
        words = [world_words(inst.model, kinds) for kinds in (CONJUNCTIONS, ["single"])]
        splits = {s: [r for r in records if r["split"] == s] for s in ("dev", "test")}
        ratios = {s: ", ".join(f"{rate_ratio(rs, *w):.2f}" for w in words) for s, rs in splits.items()}
        print(
            f"| {inst.name} | {weights} | {len(splits['dev'])} | {ratios['dev']} "
            f"| {len(splits['test'])} | {ratios['test']} |"
        )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
