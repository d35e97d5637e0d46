"""scripts/cross_case_probe.py: a token shared by every same-target prompt, and only by them, ranks first."""

from __future__ import annotations

import importlib.util

import numpy as np

from halbench.metrics import average_precision
from halbench.tasks.registry import REPO_ROOT

spec = importlib.util.spec_from_file_location("cross_case_probe", REPO_ROOT / "scripts" / "cross_case_probe.py")
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)


def test_the_shared_trigger_of_same_target_prompts_ranks_first_and_a_lone_prompt_gives_no_signal():
    rng = np.random.default_rng(0)
    cases = []
    for i in range(8):
        ids = [int(t) for t in rng.choice(np.arange(100, 1000), size=20, replace=False)]
        trigger, target = (7, 1) if i % 2 == 0 else (8, 2)
        ids[3 + i] = trigger
        cases.append({"id": str(i), "prompt_ids": ids, "target_ids": [target], "editable": list(range(20)),
                      "causes": [[3 + i]]})  # fmt: skip
    aps = [average_precision(probe.cooccurrence_scores(c, cases), c["causes"], c["editable"]) for c in cases]
    assert aps == [1.0] * len(cases)
    alone = probe.cooccurrence_scores(cases[0], [cases[0]])
    assert np.ptp(alone) == 0.0  # nothing else to compare with: every position scores alike
