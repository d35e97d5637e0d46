"""scripts/position_probe.py: a position prior fitted on dev separates early from late causes."""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np

from halbench.tasks.registry import REPO_ROOT

spec = importlib.util.spec_from_file_location("position_probe", REPO_ROOT / "scripts" / "position_probe.py")
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)


def case(cause: int, length: int = 20) -> dict:
    return {"prompt_ids": list(range(length)), "editable": list(range(1, length - 1)), "causes": [[cause]]}


def test_a_prior_learned_from_early_dev_causes_finds_early_test_causes_and_not_late_ones():
    model = probe.fit([case(c) for c in (1, 2, 3, 2, 1, 3)])
    ap = [probe.mean_ap([case(c)], lambda r: probe.prior_scores(model, r)) for c in (1, 2, 5, 10, 17)]
    assert ap[0] == 1.0 and ap[-1] < 0.1  # the earliest editable position ranks first, the last near the bottom
    assert all(a > b for a, b in itertools.pairwise(ap))
    assert np.isclose(probe.mean_ap([case(5)], lambda r: np.arange(20.0) == 5), 1.0)
