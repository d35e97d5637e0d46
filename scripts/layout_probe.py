#!/usr/bin/env python
"""Model-free layout probes on `ordered` test cases: can the repetition layout alone find the cause?

An ordered cause sits beside its reversed copy with no second in-order match, so it is the middle of an
interleaving of repeated words (``B A B A``). Each probe scores editable positions from the prompt's
repetition structure only; on a sound instance all score like random. Reads files only.

- ``interleaved_middle``: how often the position is a middle of two interleaved repeated words;
- ``second``: the later of a word's two occurrences;
- ``short_span``: the two occurrences of the word are close together;
- ``centre``: closeness to the middle of the prompt.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from halbench.metrics import average_precision
from halbench.tasks.artifacts import CASES, read_cases
from halbench.tasks.recurrence import expected_random_ap
from halbench.tasks.registry import built_instances

PROBES = ("interleaved_middle", "second", "short_span", "centre")


def probe_scores(ids: list[int], editable: list[int]) -> dict[str, np.ndarray]:
    """Per position, each probe's score (higher: more cause-like)."""
    occurrences: dict[int, list[int]] = defaultdict(list)
    for p in editable:
        occurrences[ids[p]].append(p)
    pairs = [ps for ps in occurrences.values() if len(ps) == 2]
    n = len(ids)
    out = {name: np.zeros(n) for name in PROBES}
    for first, second in pairs:
        out["second"][second] = 1.0
        out["short_span"][[first, second]] = -(second - first)
    for x in pairs:
        for y in pairs:
            if y[0] < x[0] < y[1] < x[1]:
                out["interleaved_middle"][[x[0], y[1]]] += 1.0
    out["centre"] = -np.abs((np.arange(n) + 0.5) / n - 0.5)  # symmetric: the middle position scores 0
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    print("| instance | test cases | " + " | ".join(PROBES) + " | random |")
    print("|---|---|" + "---|" * (len(PROBES) + 1))
    for inst in built_instances():
        if inst.task != "ordered":
            continue
        test = [r for r in read_cases(inst.folder / CASES) if r["split"] == "test"]
        ap = defaultdict(list)
        for r in test:
            for name, s in probe_scores(r["prompt_ids"], r["editable"]).items():
                ties = 1e-6 * rng.random(len(s))  # ties broken at random, not by position
                ap[name].append(average_precision(s + ties, r["causes"], r["editable"]))
        chance = np.mean([expected_random_ap(r, 200) for r in test])
        cells = " | ".join(f"{np.mean(ap[name]):.3f}" for name in PROBES)
        print(f"| {inst.name} | {len(test)} | {cells} | {chance:.3f} |")


if __name__ == "__main__":
    main()
