"""The verifier admits planted causes and rejects claimed causes that are not causal (both families)."""

from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoModelForCausalLM

import halbench.tasks.verify as verify_module
from halbench.tasks.artifacts import read_cases
from halbench.tasks.build import load_refills
from halbench.tasks.check import candidate_from_record
from halbench.tasks.spec import TaskSpec
from halbench.tasks.verify import CHECKS, FAMILIES, STAGES, Candidate, Refills, plan_blocks, verify

from .conftest import BUILT

SINGLE = sorted(n for n in BUILT if n.startswith("single/"))


@pytest.fixture(scope="module")
def single():
    if not SINGLE:
        pytest.skip("no single instance is built")
    inst = BUILT[SINGLE[0]]
    spec = TaskSpec.model_validate(inst.manifest()["spec"])
    model = AutoModelForCausalLM.from_pretrained(inst.model_folder / "model").eval()
    cases = [r for r in read_cases(inst.folder / "cases.jsonl") if r["split"] == "test"][:8]
    thresholds = {"neutral": spec.verification.neutral, "unigram": spec.verification.unigram}
    return model, spec, load_refills(inst.model_folder), thresholds, cases


def run(single, cands, **kw):
    model, spec, refills, thresholds, _ = single
    return verify(model, cands, refills, thresholds, spec.verification.refills, **kw)


def test_true_causes_pass_under_both_families(single):
    verdicts = run(single, [candidate_from_record(c) for c in single[4]])
    assert all(v.passed for v in verdicts), [v.failed for v in verdicts]
    assert all(v.rates["unigram"]["necessity"] is not None for v in verdicts)


def test_an_incidental_word_claimed_as_cause_is_rejected(single):
    """Move the claimed cause onto an editable word that is no cause: the true trigger stays in the prompt."""
    verdicts = run(single, _wrong_causes(single[4]))
    assert not any(v.passed for v in verdicts)
    assert all("neutral.necessity" in v.failed and "unigram.necessity" in v.failed for v in verdicts)


def test_a_prompt_without_the_trigger_fails_greedy(single):
    _, _, refills, _, cases = single
    cand = candidate_from_record(cases[0])
    pos = cand.causes[0][0]
    cand.prompt_ids = list(cand.prompt_ids)
    cand.prompt_ids[pos] = int(refills.pools[cand.slots[pos]][0])
    (verdict,) = run(single, [cand])
    assert "greedy" in verdict.failed


def test_verification_does_not_depend_on_the_batch(single):
    cands = [candidate_from_record(c) for c in single[4][:4]]
    first = [v.rates for v in run(single, cands)]
    again = [v.rates for v in run(single, cands, batch_rows=7)]
    assert first == again


def _wrong_causes(cases) -> list[Candidate]:
    """Each case's claimed cause moved onto an editable word that is no cause: the true trigger stays."""
    wrong = []
    for case in cases:
        cand = candidate_from_record(case)
        taken = {p for alt in cand.causes for p in alt} | set(cand.entity) | set(cand.decoys)
        cand.causes = [[next(p for p in cand.editable if p not in taken)]]
        wrong.append(cand)
    return wrong


def test_a_needed_word_left_out_of_the_cause_fails_the_incidental_check(single):
    """The true trigger, left as an incidental word: refilling it alone removes the hallucination."""
    model, spec, refills, thresholds, cases = single
    on = {f: t.model_copy(update={"incidental": 0.5}) for f, t in thresholds.items()}
    true = [candidate_from_record(c) for c in cases[:4]]
    verdicts = verify(model, _wrong_causes(cases[:4]) + true, refills, on, spec.verification.refills)
    assert all({"neutral.incidental", "unigram.incidental"} <= set(v.failed) for v in verdicts[:4])
    assert all(v.passed and v.rates["neutral"]["incidental"] >= 0.5 for v in verdicts[4:])
    assert "incidental" in verdicts[4].as_record()["neutral"]
    off = {f: t.model_copy(update={"incidental": None}) for f, t in thresholds.items()}
    unset = verify(model, true[:1], refills, off, spec.verification.refills)[0]
    assert "incidental" not in unset.as_record()["neutral"]  # unset: not in the record


def test_incidental_blocks_come_last_and_leave_the_other_draws_alone():
    slots = [None] + ["w"] * 8 + [None]
    cand = Candidate(list(range(100, 110)), 5, 6, [[3]], list(range(1, 9)), entity=[2], slots=slots)
    refills = Refills.from_records({"w": [1, 2, 3, 4]}, [0, 1, 1, 1, 1])
    plain, more = plan_blocks(cand, refills, 4), plan_blocks(cand, refills, 4, incidental=True)
    extra = [b for b in more if b.check == "incidental"]
    for a, b in zip(plain, [b for b in more if b.check != "incidental"], strict=True):
        assert (a.family, a.check) == (b.family, b.check) and (a.rows == b.rows).all()
    base = np.array(cand.prompt_ids)
    touched = [sorted(set(np.nonzero((b.rows != base).any(0))[0].tolist())) for b in extra]
    assert len(extra) == 12 and all(len(t) <= 1 for t in touched)  # one position each, six per family
    assert {p for t in touched for p in t} <= {1, 4, 5, 6, 7, 8}  # never the cause (3) or the entity (2)


def test_stages_cover_every_check_of_both_families_once():
    assert sorted(STAGES) == sorted((f, c) for f in FAMILIES for c in CHECKS)


def test_staged_verification_admits_the_same_cases_with_the_same_rates(single, monkeypatch):
    """Staging skips a failed candidate's later rows, never changes a row: passing cases keep every rate."""
    rows = []
    counted = verify_module.last_logits

    def counting(model, batch, *args):
        rows.append(len(batch))
        return counted(model, batch, *args)

    monkeypatch.setattr(verify_module, "last_logits", counting)
    cands = [candidate_from_record(c) for c in single[4]] + _wrong_causes(single[4])
    full = run(single, cands)
    full_rows, rows[:] = sum(rows), []
    staged = run(single, cands, staged=True)
    assert [v.passed for v in staged] == [v.passed for v in full] == [True] * 8 + [False] * 8
    for a, b in zip(full, staged, strict=True):
        if a.passed:
            assert a.rates == b.rates and (a.p_target, a.p_faithful) == (b.p_target, b.p_faithful)
        else:
            assert b.failed and set(b.failed) <= set(a.failed)  # the first failing stage's checks
            reached = [(f, c) for f in FAMILIES for c in CHECKS if b.rates[f][c] is not None]
            assert all(b.rates[f][c] == a.rates[f][c] for f, c in reached)
    assert sum(rows) < full_rows  # the wrong claims stopped early


def test_intervention_rows_touch_only_the_named_positions():
    cand = Candidate(
        prompt_ids=list(range(100, 112)),
        target_id=5,
        faithful_id=6,
        causes=[[2, 5], [8]],
        editable=list(range(1, 11)),
        decoys=[9],
        entity=[4],
        slots=[None] + ["w"] * 10 + [None],
        seed=(1, 2),
    )
    refills = Refills.from_records({"w": [1, 2, 3]}, [0, 1, 1, 1])
    blocks = [b for b in plan_blocks(cand, refills, 4) if b.family == "neutral"]
    names = [b.check for b in blocks]
    assert names == ["necessity", "sufficiency", "sufficiency", "minimality", "minimality", "redundancy",
                     "redundancy", "decoy_inert", "stability", "specificity"]  # fmt: skip
    base = np.array(cand.prompt_ids)
    changed = {b.check + str(i): sorted(set(np.nonzero((b.rows != base).any(0))[0])) for i, b in enumerate(blocks)}
    assert changed["necessity0"] == [2, 5, 8]
    assert changed["sufficiency1"] == [1, 3, 4, 6, 7, 8, 9, 10]  # everything editable but alternative 0
    assert changed["minimality3"] == [2, 8]  # one token of alternative 0, and alternative 1
    assert changed["decoy_inert7"] == [9]
    assert set(changed["stability8"]) <= {1, 3, 6, 7, 9, 10}  # incidental only: not causes, not the entity
    assert changed["specificity9"] == list(range(1, 11))
    assert all(b.rows[:, [0, 11]].tolist() == [[100, 111]] * 4 for b in blocks)  # fixed markers untouched
    again = [b for b in plan_blocks(cand, refills, 4) if b.family == "neutral"]
    assert all((a.rows == b.rows).all() for a, b in zip(blocks, again, strict=True))
