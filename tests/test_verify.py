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
