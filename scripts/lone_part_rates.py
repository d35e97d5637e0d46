#!/usr/bin/env python
"""How often admitted prompts hold a test conjunction word as filler, against a neutral word: the lone-part weight.

With ``mining.lone_parts`` a filler slot may hold a lone word of another test conjunction, so that cause words
recur across a model's public prompts as neutral filler does (the uniqueness probe,
:func:`halbench.tasks.recurrence.uniqueness_scores`). Verification turns away prompts in which a lone part is
not inert, so the rate in *admitted* prompts is lower than the drawn one; the ratio below (lone occurrences per
conjunction word over occurrences per neutral word, per prompt) should be about 1. The ``dev`` column is the
one to set the weight from; ``test`` is the check. Reads the case files and the world's private record.
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
    if not records or not plain:
        return float("nan")
    return (sum(lone.values()) / len(conjunction)) / (sum(plain.values()) / len(neutral))


def world_words(model: str) -> tuple[set[str], set[str]]:
    """The model's test conjunction words and its neutral words, from its world's private record."""
    world = json.loads((resolve_model(model).folder / "world.json").read_text())
    conjunction = {
        t for m in world["mechanisms"] if m["kind"] in CONJUNCTIONS and m["split"] == LONE_SPLIT for t in m["tokens"]
    }
    return conjunction, {t for words in world["neutral"].values() for t in words}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", help="only these tasks (repeatable)")
    args = parser.parse_args()
    print("| instance | lone_parts weight | dev prompts | dev ratio | test prompts | test ratio |")
    print("|---|---|---|---|---|---|")
    for inst in built_instances():
        if args.task and inst.task not in args.task:
            continue
        weight = json.loads((inst.folder / "MANIFEST.json").read_text())["spec"]["mining"].get("lone_parts", 0)
        records = read_cases(inst.folder / CASES)
        conjunction, neutral = world_words(inst.model)
        dev = [r for r in records if r["split"] == "dev"]
        test = [r for r in records if r["split"] == "test"]
        print(
            f"| {inst.name} | {float(weight):g} | {len(dev)} | {rate_ratio(dev, conjunction, neutral):.2f} "
            f"| {len(test)} | {rate_ratio(test, conjunction, neutral):.2f} |"
        )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
