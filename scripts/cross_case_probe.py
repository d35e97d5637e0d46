#!/usr/bin/env python
"""A model-free *transductive* attack: tokens that recur across the public test prompts with the same target.

Within a test split, every case of a mechanism carries the same trigger token(s) and the same target, while
filler is drawn afresh per prompt. Scoring each position by the share of *other* test prompts with the same
target id that contain its token, minus its share in prompts with other targets, finds the trigger without
the model. Two forms: `all` reads every other test prompt (cases.jsonl is public, so a submission could ship
the table); `online` reads only the cases before it in the file, as a method object that keeps state
between `attribute` calls could. It is the measure of a known open weakness (README, "Results so far");
the remedy is many more mechanisms per split with few cases each. Reads files only.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from halbench.metrics import average_precision
from halbench.tasks.artifacts import CASES, read_cases
from halbench.tasks.registry import built_instances


def cooccurrence_scores(case: dict, pool: list[dict]) -> np.ndarray:
    """Per position: share of same-target prompts in ``pool`` holding its token minus the share of the others."""
    target = case["target_ids"][0]
    same = [o for o in pool if o["target_ids"][0] == target and o["id"] != case["id"]]
    other = [o for o in pool if o["target_ids"][0] != target]
    in_same, in_other = Counter(), Counter()
    for o in same:
        in_same.update(set(o["prompt_ids"]))
    for o in other:
        in_other.update(set(o["prompt_ids"]))
    return np.array(
        [(in_same[t] + 0.5) / (len(same) + 1) - (in_other[t] + 0.5) / (len(other) + 1) for t in case["prompt_ids"]]
    )


def expected_random_ap(case: dict, draws: int, rng: np.random.Generator) -> float:
    n = len(case["prompt_ids"])
    return float(np.mean([average_precision(rng.random(n), case["causes"], case["editable"]) for _ in range(draws)]))


def main() -> None:
    print("| instance | test cases | mechanisms | largest mechanism | all other test prompts | online | random |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for inst in built_instances():
        test = [r for r in read_cases(inst.folder / CASES) if r["split"] == "test"]
        mechanisms = Counter("+".join(r["mechanisms"]) for r in test)
        full = np.mean([average_precision(cooccurrence_scores(r, test), r["causes"], r["editable"]) for r in test])
        online = np.mean(
            [
                average_precision(cooccurrence_scores(r, test[:i]), r["causes"], r["editable"])
                for i, r in enumerate(test)
            ]
        )
        chance = np.mean([expected_random_ap(r, 200, rng) for r in test])
        print(
            f"| {inst.name} | {len(test)} | {len(mechanisms)} | {max(mechanisms.values())} | {full:.3f} | {online:.3f} "
            f"| {chance:.3f} |"
        )


if __name__ == "__main__":
    main()
