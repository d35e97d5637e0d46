"""scripts/distractor_ranks.py: inert distractors are told apart by kind and counted when they outrank a cause."""

from __future__ import annotations

import importlib.util

import numpy as np

from halbench.tasks.registry import REPO_ROOT

spec = importlib.util.spec_from_file_location("distractor_ranks", REPO_ROOT / "scripts" / "distractor_ranks.py")
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)

WORLD = {
    "mechanisms": [
        {"kind": "pair", "tokens": ["a", "b"], "decoys": ["d"]},
        {"kind": "pair", "tokens": ["p", "q"], "decoys": []},
        {"kind": "single", "tokens": ["s"], "decoys": []},
    ]
}
# the cause a b at 1-2; a lure s, a decoy d, a lone part p and a reversed copy b a among filler
RECORD = {
    "prompt_tokens": ["x", "a", "b", "s", "d", "p", "b", "a"],
    "causes": [[1, 2]],
    "decoys": [3, 4, 5, 6, 7],
}


def test_each_distractor_gets_its_kind():
    kinds = probe.distractor_kinds(RECORD, probe.roles(WORLD))
    assert kinds == {3: "lure", 4: "decoy", 5: "part", 6: "copy", 7: "copy"}


def test_a_distractor_counts_when_it_scores_at_least_the_lowest_cause_position():
    kinds = probe.distractor_kinds(RECORD, probe.roles(WORLD))
    scores = np.array([0.0, 0.9, 0.5, 0.5, 0.4, 0.1, 0.2, 0.6])
    assert probe.outranked(scores, RECORD, kinds) == {"lure", "copy"}  # the lure ties the cause's 0.5: it counts
    assert probe.outranked(np.array([0, 9, 8, 1, 1, 1, 1, 1.0]), RECORD, kinds) == set()
