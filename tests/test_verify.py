"""The verifier admits planted causes and rejects claimed causes that are not causal."""

from __future__ import annotations

import pytest
from transformers import AutoModelForCausalLM

from halbench.tasks.artifacts import read_cases, read_manifest
from halbench.tasks.check import candidate_from_record
from halbench.tasks.spec import TaskSpec
from halbench.tasks.verify import verify

from .conftest import BUILT, TASKS

pytestmark = pytest.mark.skipif("single" not in BUILT, reason="the single task is not built")


@pytest.fixture(scope="module")
def single():
    folder = TASKS / "single"
    manifest = read_manifest(folder)
    model = AutoModelForCausalLM.from_pretrained(folder / "model").eval()
    cases = [r for r in read_cases(folder / "cases.jsonl") if r["split"] == "test"][:8]
    return model, TaskSpec.model_validate(manifest["spec"]), manifest["neutral_ids"], cases


def test_true_causes_pass(single):
    model, spec, neutral, cases = single
    verdicts = verify(model, [candidate_from_record(c) for c in cases], spec.verification, neutral)
    assert all(v.passed for v in verdicts), [v.failed for v in verdicts]
    assert all(v.rates["necessity"] >= spec.verification.necessity for v in verdicts)


def test_a_filler_claimed_as_cause_is_rejected(single):
    """Move the claimed cause onto a filler position: the true trigger stays in the prompt."""
    model, spec, neutral, cases = single
    wrong = []
    for case in cases:
        cand = candidate_from_record(case)
        true = set(cand.causes[0])
        filler = next(p for p in cand.editable if p not in true and case["prompt_tokens"][p].startswith("w"))
        cand.causes = [[filler]]
        wrong.append(cand)
    verdicts = verify(model, wrong, spec.verification, neutral)
    assert not any(v.passed for v in verdicts)
    assert all("necessity" in v.failed and "sufficiency" in v.failed for v in verdicts)


def test_a_prompt_without_the_trigger_fails_greedy(single):
    model, spec, neutral, cases = single
    cand = candidate_from_record(cases[0])
    cand.prompt_ids = list(cand.prompt_ids)
    cand.prompt_ids[cand.causes[0][0]] = neutral[0]
    (verdict,) = verify(model, [cand], spec.verification, neutral)
    assert "greedy" in verdict.failed


def test_verification_is_deterministic(single):
    model, spec, neutral, cases = single
    cands = [candidate_from_record(c) for c in cases[:4]]
    first = [v.rates for v in verify(model, cands, spec.verification, neutral)]
    again = [v.rates for v in verify(model, cands, spec.verification, neutral, batch_rows=7)]
    assert first == again


def test_intervention_rows_touch_only_the_named_positions():
    import numpy as np

    from halbench.tasks.verify import Candidate, plan_blocks

    cand = Candidate(
        prompt_ids=list(range(100, 112)),
        target_id=5,
        faithful_id=6,
        causes=[[2, 5], [8]],
        editable=list(range(1, 11)),
        decoys=[9],
        entity=[4],
        seed=(1, 2),
    )
    neutral = np.array([1, 2, 3])
    blocks = plan_blocks(cand, 4, neutral)
    names = [b.check for b in blocks]
    assert names == [
        "necessity",
        "sufficiency",
        "sufficiency",
        "minimality",
        "minimality",
        "redundancy",
        "redundancy",
        "decoy_inert",
        "stability",
        "specificity",
    ]
    base = np.array(cand.prompt_ids)
    changed = {b.check + str(i): sorted(set(np.nonzero((b.rows != base).any(0))[0])) for i, b in enumerate(blocks)}
    assert changed["necessity0"] == [2, 5, 8]
    assert changed["sufficiency1"] == [1, 3, 4, 6, 7, 8, 9, 10]  # everything editable but alternative 0
    assert changed["minimality3"] == [2, 8]  # one token of alternative 0, and alternative 1
    assert changed["decoy_inert7"] == [9]
    assert set(changed["stability8"]) <= {1, 3, 6, 7, 9, 10}  # incidental only: not causes, not the entity
    assert changed["specificity9"] == list(range(1, 11))
    assert all(b.rows[:, [0, 11]].tolist() == [[100, 111]] * 4 for b in blocks)  # fixed markers untouched
    again = plan_blocks(cand, 4, neutral)
    assert all((a.rows == b.rows).all() for a, b in zip(blocks, again, strict=True))
