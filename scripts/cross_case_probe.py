#!/usr/bin/env python
"""The recurrence probe per instance: AP of scoring tokens that recur across the model's public test prompts.

Two forms: `all` reads every other public test prompt of the same model, over all of its instances (a
submission could ship that table); `online` reads only the cases before it, in this instance, as a method
object that keeps state between `attribute` calls could. See :mod:`halbench.tasks.recurrence`. On a sound
suite both score like random. A third column, `uniqueness`, ranks first the tokens seen in no other public
test prompt of the model (the price of one case per mechanism); `uniqueness (dev+test)` counts the model's
public dev prompts too, as a stronger attacker would. Reads files only.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from halbench.metrics import average_precision
from halbench.tasks.artifacts import CASES, read_cases
from halbench.tasks.recurrence import (
    expected_random_ap,
    public_test_cases,
    recurrence_scores,
    repeated_causes,
    uniqueness_scores,
)
from halbench.tasks.registry import built_instances


def main() -> None:
    print("| instance | test cases | mechanisms | largest mechanism | causes repeated in the model's test cases "
          "| recurrence (all of the model's test prompts) | online | uniqueness | uniqueness (dev+test) "
          "| random |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    instances = built_instances()
    pools = public_test_cases(instances)
    public = public_test_cases(instances, ("dev", "test"))
    for inst in instances:
        test = [r for r in read_cases(inst.folder / CASES) if r["split"] == "test"]
        mechanisms = Counter("+".join(r["mechanisms"]) for r in test)
        pool = pools[inst.model]
        full = np.mean([average_precision(recurrence_scores(r, pool), r["causes"], r["editable"]) for r in test])
        online = np.mean(
            [average_precision(recurrence_scores(r, test[:i]), r["causes"], r["editable"]) for i, r in enumerate(test)]
        )
        unique = np.mean([average_precision(uniqueness_scores(r, pool), r["causes"], r["editable"]) for r in test])
        both = public[inst.model]
        unique_all = np.mean([average_precision(uniqueness_scores(r, both), r["causes"], r["editable"]) for r in test])
        chance = np.mean([expected_random_ap(r, 200) for r in test])
        print(
            f"| {inst.name} | {len(test)} | {len(mechanisms)} | {max(mechanisms.values())} "
            f"| {len(repeated_causes(pool))} | {full:.3f} | {online:.3f} | {unique:.3f} | {unique_all:.3f} "
            f"| {chance:.3f} |"
        )


if __name__ == "__main__":
    main()
