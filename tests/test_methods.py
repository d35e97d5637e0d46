"""The method contract, as one conformance table over every registered method (captum-style).

Each method, at each budget, on a tiny instance: valid finite scores of the prompt's shape, fixed
positions below every editable one, rows spent within the budget, the same numbers for the same seed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from halbench.case import DevCase, PublicCase
from halbench.methods.base import Attribution, MethodError, get_method, registered
from halbench.runner import case_rng
from halbench.scoring import BudgetExceeded

from .conftest import BUILT, built

METHODS = [name for name, cls in registered().items() if cls.kind != "probe"]
BUDGETS = (16, 64, 256)


def run(bundle, name: str, budget: int, record: dict, seed: int = 0, **params) -> tuple[Attribution, int]:
    method = get_method(name, **params)
    if method.uses_dev:
        method.fit(bundle.dev_cases(), bundle.vocabulary, bundle.unigram)
    scorer = bundle.scorer(record, budget=budget)
    attribution = method.attribute(scorer.case, scorer, case_rng(seed, record["id"]))
    attribution.validate(scorer.case)
    return attribution, scorer.cost.rows


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("name", METHODS)
def test_valid_scores_within_budget(tiny_bundle, name, budget):
    record = tiny_bundle.cases("test")[0]
    attribution, rows = run(tiny_bundle, name, budget, record)
    scores = np.asarray(attribution.scores)
    editable = np.zeros(len(scores), dtype=bool)
    editable[record["editable"]] = True
    assert scores.shape == (len(record["prompt_ids"]),) and np.isfinite(scores).all()
    assert scores[~editable].max() < scores[editable].min(), "fixed positions must rank below every editable one"
    assert rows <= budget


@pytest.mark.parametrize("name", METHODS)
def test_deterministic_for_a_seed(tiny_bundle, name):
    record = tiny_bundle.cases("test")[1]
    first, rows = run(tiny_bundle, name, 64, record)
    again, rows_again = run(tiny_bundle, name, 64, record)
    assert np.array_equal(first.scores, again.scores) and rows == rows_again
    assert first.subsequence == again.subsequence


PUBLIC_FIELDS = {"id", "prompt_ids", "target_ids", "editable", "prompt_tokens", "target_text"}
SHARED = {"model", "tokenizer", "replacements"}  # the instance's objects, the same for every case


def same(a: object, b: object) -> bool:
    """Deep equality for what a Scorer holds (tensors, arrays, dicts, plain values)."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def test_what_a_method_can_reach_holds_no_ground_truth(tiny_bundle):
    """Strip a record to its public fields: everything a method is handed for the case stays the same.

    Compared: the PublicCase, the case and instance data a sandboxed worker receives, every attribute of
    the Scorer (a new one must be classified here) and a method's scores. A value that carried causes,
    decoys, mechanisms or verification would differ. Dev cases are for learning, causes included.
    """
    from halbench.isolation.proxy import context_record

    record = tiny_bundle.cases("test")[0]
    assert record["causes"] and {"causes", "decoys", "mechanisms", "verification"} <= set(record)  # truth to leak
    public = {k: v for k, v in record.items() if k in PUBLIC_FIELDS}
    full, bare = tiny_bundle.scorer(record, budget=64), tiny_bundle.scorer(public, budget=64)
    assert {f.name for f in dataclasses.fields(PublicCase)} == PUBLIC_FIELDS
    assert full.case == bare.case and full.case.as_record() == bare.case.as_record()
    assert set(full.case.as_record()) == PUBLIC_FIELDS  # the case as the sandboxed worker receives it
    assert same(context_record(full), context_record(bare))  # the instance data it receives
    assert set(vars(full)) == set(vars(bare)) == SHARED | {
        "case", "budget", "batch_rows", "pad_rows", "cost", "device", "prompt", "_target",
    }  # fmt: skip
    for name, value in vars(full).items():
        assert value is vars(bare)[name] if name in SHARED else same(value, vars(bare)[name]), name
    scores = [get_method("occlusion").attribute(s.case, s, case_rng(0, record["id"])).scores for s in (full, bare)]
    assert np.array_equal(*scores)
    assert all(r["split"] == "dev" for r in tiny_bundle.cases("dev"))
    assert all(isinstance(c, DevCase) for c in tiny_bundle.dev_cases())


def test_token_strings_of_the_suite_carry_no_role():
    """On the built suite the strings a method sees are role-free (grammar: tNNNN names)."""
    import re

    from halbench.tasks.artifacts import CASES, read_cases

    grammar = [i for name, i in BUILT.items() if "/grammar-" in name]
    if not grammar:
        pytest.skip("no grammar instance is built")
    for instance in grammar:
        for record in read_cases(instance.folder / CASES)[:20]:
            words = [t for i, t in enumerate(record["prompt_tokens"]) if i in set(record["editable"])]
            assert words and all(re.fullmatch(r"t\d{4}|\[IS\]", w) for w in words), instance.name


def test_the_budget_is_enforced(tiny_bundle):
    record = tiny_bundle.cases("test")[0]
    scorer = tiny_bundle.scorer(record, budget=10)
    scorer.target_logprob(np.repeat(scorer.prompt[None], 10, axis=0))
    with pytest.raises(BudgetExceeded):
        scorer.target_logprob(scorer.prompt[None])
    assert scorer.cost.rows == 10


def test_a_backward_row_costs_two(tiny_bundle):
    scorer = tiny_bundle.scorer(tiny_bundle.cases("test")[0], budget=None)
    scorer.logprob_and_grad(scorer.input_embeddings())
    assert (scorer.cost.forward_rows, scorer.cost.backward_rows, scorer.cost.rows) == (1, 1, 3)


def test_invalid_attributions_are_rejected(tiny_bundle):
    case = tiny_bundle.scorer(tiny_bundle.cases("test")[0]).case
    for bad, message in [
        (Attribution(np.zeros(case.length + 1)), "shape"),
        (Attribution(np.full(case.length, np.nan)), "finite"),
        (Attribution(np.zeros(case.length), subsequence=(0,)), "editable"),
    ]:
        with pytest.raises(MethodError, match=message):
            bad.validate(case)


def test_unknown_method_and_hyper_parameter():
    with pytest.raises(MethodError, match="unknown method"):
        get_method("nope")
    with pytest.raises(MethodError, match="unknown hyper-parameters"):
        get_method("occlusion", colour="red")


def test_occlusion_blocks_when_the_budget_is_below_the_prompt(tiny_bundle):
    record = tiny_bundle.cases("test")[0]
    attribution, rows = run(tiny_bundle, "occlusion", 8, record)
    assert attribution.extras["blocks"] == 7 and rows <= 8
    assert len(set(np.asarray(attribution.scores)[record["editable"]])) <= 7


def test_occlusion_spends_its_budget_on_more_draws(tiny_bundle):
    record = tiny_bundle.cases("test")[0]
    small, _ = run(tiny_bundle, "occlusion", 64, record)
    large, rows = run(tiny_bundle, "occlusion", 256, record)
    assert large.extras["draws"] > small.extras["draws"] and rows > 200


def test_occlusion_spends_what_its_description_says(tiny_bundle):
    """One row for the prompt, then E rows per draw, as many draws as the budget buys, at most max_draws."""
    record = tiny_bundle.cases("test")[0]
    editable = len(record["editable"])
    for budget, max_draws in ((256, 64), (256, 2), (editable + 1, 64)):
        attribution, rows = run(tiny_bundle, "occlusion", budget, record, max_draws=max_draws)
        draws = min(max_draws, (budget - 1) // editable)
        spent = (attribution.extras["blocks"], attribution.extras["draws"], rows)
        assert spent == (editable, draws, 1 + editable * draws), (budget, max_draws)


def test_occlusion_finds_single_triggers_on_the_suite():
    from halbench.tasks.bundle import load_bundle

    bundle = load_bundle(built("single/grammar-llama-b"), device="cpu")
    hits = []
    for record in bundle.cases("test")[:10]:
        attribution, _ = run(bundle, "occlusion", 256, record)
        hits.append(int(np.argmax(attribution.scores)) in record["causes"][0])
    assert np.mean(hits) >= 0.7
