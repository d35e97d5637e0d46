"""One conformance table drives every registered method (the captum way): valid scores, budget, determinism."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, MethodError, get_method, registered
from halbench.scoring import BudgetExceeded
from halbench.tasks.bundle import load_bundle

from .conftest import BUILT, TASKS

pytestmark = pytest.mark.skipif(not {"single", "redundant"} <= set(BUILT), reason="tasks not built")
METHODS = sorted(name for name in registered() if not name.startswith("test_"))


@pytest.fixture(scope="module")
def bundles():
    return {name: load_bundle(TASKS / name, device="cpu") for name in ("single", "redundant")}


def run(bundle, method: Method, record: dict, budget: int, seed: int = 0):
    scorer = bundle.scorer(record, budget=budget)
    attribution = method.attribute(scorer.case, scorer, np.random.default_rng(seed))
    return attribution, scorer


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("budget", [64, 256])
def test_valid_scores_within_budget(bundles, name, budget):
    method = get_method(name)
    for bundle in bundles.values():
        for record in bundle.cases()[:2]:
            attribution, scorer = run(bundle, method, record, budget)
            attribution.validate(scorer.case)
            assert scorer.cost.rows <= budget
            fixed = [p for p in range(scorer.case.length) if p not in scorer.case.editable]
            editable = list(scorer.case.editable)
            assert attribution.scores[fixed].max() < attribution.scores[editable].min()


@pytest.mark.parametrize("name", METHODS)
def test_deterministic_for_a_seed(bundles, name):
    method = get_method(name)
    record = bundles["redundant"].cases()[0]
    first, _ = run(bundles["redundant"], method, record, 256, seed=3)
    again, _ = run(bundles["redundant"], method, record, 256, seed=3)
    np.testing.assert_array_equal(first.scores, again.scores)


def test_methods_never_see_the_ground_truth():
    fields = {f.name for f in dataclasses.fields(PublicCase)}
    assert not fields & {"causes", "decoys", "entity", "verification", "mechanisms"}


def test_budget_is_enforced(bundles):
    bundle = bundles["single"]
    scorer = bundle.scorer(bundle.cases()[0], budget=10)
    with pytest.raises(BudgetExceeded, match="budget of 10"):
        scorer.target_logprob(np.repeat(scorer.prompt[None], 11, axis=0))
    assert scorer.cost.rows == 0  # nothing was spent on the refused call


def test_occlusion_finds_the_single_trigger(bundles):
    """Real behaviour: on single-trigger cases leave-one-out puts the trigger first."""
    bundle = bundles["single"]
    method = get_method("occlusion")
    hits = []
    for record in bundle.cases()[:10]:
        attribution, _ = run(bundle, method, record, 256)
        hits.append(int(np.argmax(attribution.scores)) in record["causes"][0])
    assert np.mean(hits) >= 0.9


def test_invalid_attributions_are_rejected(bundles):
    case = PublicCase.from_record(bundles["single"].cases()[0])
    with pytest.raises(MethodError, match="shape"):
        Attribution(np.zeros(case.length + 1)).validate(case)
    bad = np.zeros(case.length)
    bad[3] = np.nan
    with pytest.raises(MethodError, match="finite"):
        Attribution(bad).validate(case)


def test_unknown_method_and_hyper_parameter():
    with pytest.raises(MethodError, match="unknown method 'nope'"):
        get_method("nope")
    with pytest.raises(MethodError, match="unknown hyper-parameters"):
        get_method("occlusion", colour="red")
