"""scripts/layout_probe.py: model-free layout probes find an ordered cause where the layout gives it away."""

from __future__ import annotations

import importlib.util

import numpy as np

from halbench.tasks.registry import REPO_ROOT

spec = importlib.util.spec_from_file_location("layout_probe", REPO_ROOT / "scripts" / "layout_probe.py")
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)


def test_the_middles_of_an_interleaving_are_what_interleaved_middle_scores():
    # 0 is fixed; B A B A at 1-4 (the cause A B at 2-3 between its reversed copy), lone words at 5 and 6
    ids = [0, 20, 10, 20, 10, 30, 40]
    scores = probe.probe_scores(ids, editable=[1, 2, 3, 4, 5, 6])
    assert np.flatnonzero(scores["interleaved_middle"]).tolist() == [2, 3]
    assert np.flatnonzero(scores["second"]).tolist() == [3, 4]  # the later occurrence of each repeated word
    assert scores["short_span"][[1, 2, 3, 4]].tolist() == [-2, -2, -2, -2] and scores["short_span"][5] == 0
    assert np.argmax(scores["centre"]) == 3


def test_words_outside_the_editable_positions_are_not_paired():
    scores = probe.probe_scores([20, 10, 20, 10], editable=[1, 3])  # only A is editable, twice
    assert not scores["interleaved_middle"].any()
    assert scores["second"].tolist() == [0, 0, 0, 1]
