"""The recurrence probe: a token shared by every same-target prompt, and only by them, ranks first."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from halbench.metrics import average_precision
from halbench.tasks.recurrence import expected_random_ap, recurrence_scores, repeated_causes


def test_the_shared_trigger_of_same_target_prompts_ranks_first_and_a_lone_prompt_gives_no_signal():
    rng = np.random.default_rng(0)
    cases = []
    for i in range(8):
        ids = [int(t) for t in rng.choice(np.arange(100, 1000), size=20, replace=False)]
        trigger, target = (7, 1) if i % 2 == 0 else (8, 2)
        ids[3 + i] = trigger
        cases.append({"id": str(i), "prompt_ids": ids, "target_ids": [target], "editable": list(range(20)),
                      "causes": [[3 + i]]})  # fmt: skip
    aps = [average_precision(recurrence_scores(c, cases), c["causes"], c["editable"]) for c in cases]
    assert aps == [1.0] * len(cases)
    alone = recurrence_scores(cases[0], [cases[0]])
    assert np.ptp(alone) < 1e-8  # nothing else to compare with: every position ties, broken at random
    assert np.argsort(alone).tolist() != list(range(20))  # ...not in prompt order


def test_repeated_causes_counts_cause_tokens_shared_by_cases():
    cases = [
        {"prompt_ids": [5, 6, 7], "causes": [[1]]},
        {"prompt_ids": [6, 9, 8], "causes": [[0, 2]]},
        {"prompt_ids": [3, 4, 6], "causes": [[0]]},  # 6 is here, but not a cause
    ]
    assert repeated_causes(cases) == {6: 2}


def test_uniqueness_ranks_first_a_token_seen_in_no_other_prompt():
    from halbench.tasks.recurrence import uniqueness_scores

    rng = np.random.default_rng(1)
    cases = []
    for i in range(6):
        ids = [int(t) for t in rng.choice(np.arange(100, 130), size=20, replace=False)]  # a small, shared filler pool
        ids[2 + i] = 1000 + i  # the cause: in this prompt only
        cases.append({"id": str(i), "prompt_ids": ids, "target_ids": [i], "editable": list(range(20)),
                      "causes": [[2 + i]]})  # fmt: skip
    aps = [average_precision(uniqueness_scores(c, cases), c["causes"], c["editable"]) for c in cases]
    assert aps == [1.0] * len(cases)
    assert np.array_equal(uniqueness_scores(cases[0], cases), uniqueness_scores(cases[0], cases))  # seeded ties


def test_expected_random_ap_is_the_mean_of_scikit_learns_ap_over_the_same_orders():
    """The vectorised reference equals averaging ``average_precision`` over the same seeded random orders,
    with two alternative causes (the best one counts) and a fixed position that does not count."""
    case = {"id": "c7", "prompt_ids": list(range(12)), "editable": list(range(1, 12)), "causes": [[2, 5], [9]]}
    rng = np.random.default_rng(zlib.crc32(b"c7"))
    orders = [rng.random(12) for _ in range(40)]
    slow = np.mean([average_precision(s, case["causes"], case["editable"]) for s in orders])
    assert expected_random_ap(case, 40) == pytest.approx(slow, abs=1e-12)
