"""No leaks: model-free probes that would exploit roles in token names, ids, frequencies or dev causes stay at chance.

On every built instance of the suite, ``dev_lookup`` (tokens that were causes in dev) and ``token_form``
(a classifier over token strings, ids, corpus frequency and repetition, trained on dev causes) must not
beat chance on the test split (the expected AP of a random order, per case): the paired difference in average
precision must be within 0.05, or,
where it is not, a bootstrap over mechanisms must not show it above zero. Why the second clause: a test
split holds 20-40 mechanisms, so its causes are a few dozen distinct words, and a classifier that splits on,
say, a token's id lands on the right side of a few of them by chance (measured on the earlier splits of 8-15
mechanisms: +0.11 on one natural model, -0.06 on another, from the id feature alone); the unit of evidence
is the mechanism, not the case.
A leak would let them win without the model, on every mechanism.

A third, transductive probe reads every public test prompt of a model at once (so it is no method): a
token recurring across same-target test prompts. It is why a test mechanism causes one test case per model:
no cause token may cause two of a model's test cases, and the probe must not beat random by 0.05 AP.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from transformers import AutoTokenizer

from halbench.case import DevCase, PublicCase
from halbench.methods.base import get_method
from halbench.metrics import average_precision
from halbench.runner import case_rng
from halbench.tasks.artifacts import CASES, MODEL_DIR, UNIGRAM, read_cases, read_json
from halbench.tasks.recurrence import (
    expected_random_ap,
    public_test_cases,
    recurrence_scores,
    repeated_causes,
    uniqueness_scores,
)
from halbench.tasks.registry import built_instances

INSTANCES = built_instances()
POOLS = public_test_cases(INSTANCES)
PUBLIC = public_test_cases(INSTANCES, ("dev", "test"))
TOLERANCE = 0.05


def lone_weights(instance) -> tuple[float, float]:
    """The instance's ``mining.lone_parts`` and ``mining.lone_singles``, as it was mined (its manifest)."""
    mining = read_json(instance.folder / "MANIFEST.json", "manifest")["spec"]["mining"]
    return float(mining.get("lone_parts", 0)), float(mining.get("lone_singles", 0))


LONE = [i for i in INSTANCES if any(lone_weights(i))]


def ap_per_case(method, cases: list[dict]) -> np.ndarray:
    values = []
    for record in cases:
        case = PublicCase.from_record(record)
        scores = method.attribute(case, None, case_rng(0, case.id)).scores
        values.append(average_precision(scores, record["causes"], record["editable"]))
    return np.asarray(values)


def chance(cases: list[dict]) -> np.ndarray:
    """Per case, the expected AP of a random order (200 orders): one draw of ``random`` is itself noisy (on
    single/grammar-llama-i its 34 cases gave 0.125 against an expectation of 0.197), and a probe is compared
    with chance, not with one draw of it."""
    return np.array([expected_random_ap(r, 200) for r in cases])


def mean_ap(method, cases: list[dict]) -> float:
    return float(ap_per_case(method, cases).mean())


def above_random_by_mechanism(diff: np.ndarray, cases: list[dict], draws: int = 2000) -> float:
    """The 2.5th percentile of the mean paired difference, resampling mechanisms (then their cases)."""
    groups: dict[str, list[int]] = {}
    for i, record in enumerate(cases):
        groups.setdefault("+".join(record["mechanisms"]), []).append(i)
    members = list(groups.values())
    rng = np.random.default_rng(0)
    means = []
    for _ in range(draws):
        picked = [members[k] for k in rng.integers(len(members), size=len(members))]
        means.append(np.mean([diff[i] for group in picked for i in group]))
    return float(np.percentile(means, 2.5))


def open_marks(table: dict[str, str], name: str) -> list:
    """A strict xfail for an instance its ``table`` names as open (it must fail, or the mark must go)."""
    return [pytest.mark.xfail(strict=True, reason=table[name])] if name in table else []


# None open. decoy/grammar-llama-h's first draw with the incidental check failed here (token_form 0.168 against
# random's 0.089 from the id bits alone, lower bound over mechanisms 0.002) while the same dev fit told the world's
# test trigger words from its neutral ones at AUROC 0.528 only: a coincidence of 20 prompts. Redrawn
# (``mining.redraw``), it reads 0.135 against 0.096 (lower bound -0.014). An entry here is a strict xfail.
OPEN_PROBES: dict[str, str] = {}


def probe_params() -> list:
    return [pytest.param(i, marks=open_marks(OPEN_PROBES, i.name), id=i.name) for i in INSTANCES]


@pytest.mark.skipif(not INSTANCES, reason="the suite is not built")
@pytest.mark.parametrize("instance", probe_params())
def test_leak_probes_score_like_random(instance):
    records = read_cases(instance.folder / CASES)
    dev = [DevCase.from_record(r) for r in records if r["split"] == "dev"]
    test = [r for r in records if r["split"] == "test"]
    folder = instance.model_folder
    tok = AutoTokenizer.from_pretrained(folder / MODEL_DIR)
    vocabulary = tok.convert_ids_to_tokens(list(range(len(tok))))
    unigram = np.asarray(read_json(folder / UNIGRAM, "unigram")["counts"], dtype=float)
    floor = chance(test)
    for name in ("dev_lookup", "token_form"):
        probe = get_method(name)
        probe.fit(dev, vocabulary, unigram)
        diff = ap_per_case(probe, test) - floor
        low = above_random_by_mechanism(diff, test)
        message = f"{name} scores AP {floor.mean() + diff.mean():.3f} against random's {floor.mean():.3f}"
        assert diff.mean() <= TOLERANCE or low <= 0.0, f"{message}; 95% lower bound over mechanisms {low:.3f}"
        assert diff.mean() >= -3 * TOLERANCE, f"{message}: far below chance (a bug in the probe?)"


@pytest.mark.skipif(not INSTANCES, reason="the suite is not built")
@pytest.mark.parametrize("model", sorted(POOLS))
def test_no_cause_token_is_the_cause_of_two_public_test_cases_of_a_model(model):
    """Over all of a model's instances: else the token shared by same-target test prompts is the trigger."""
    repeated = repeated_causes(POOLS[model])
    assert not repeated, f"{model}: {len(repeated)} cause token(s) cause more than one test case: {repeated}"


# Open: with fair ties the recurrence score carries the uniqueness leak of a family mined without lone words (a
# token in no other prompt outscores one in prompts with other targets). Strict: lone words for it close it.
OPEN_RECURRENCE = {"redundant/grammar-llama-b": "redundant is mined without lone words (+0.10 over chance)"}


def recurrence_params() -> list:
    return [pytest.param(i, marks=open_marks(OPEN_RECURRENCE, i.name), id=i.name) for i in INSTANCES]


@pytest.mark.skipif(not INSTANCES, reason="the suite is not built")
@pytest.mark.parametrize("instance", recurrence_params())
def test_tokens_recurring_across_the_models_test_prompts_do_not_find_causes(instance):
    """The recurrence probe, reading every public test prompt of the model, does not beat random.

    (Ties are broken at random, as an attacker would; with ties against it, it had scored below random
    and hidden +0.10 on redundant/grammar-llama-b. Without lone words a cause recurs nowhere. Its mirror,
    the uniqueness probe, exploits exactly that; it is asserted at chance below where the instance was mined
    with lone words, and measured in the README for the families that are not.)
    """
    test = [r for r in read_cases(instance.folder / CASES) if r["split"] == "test"]
    pool = POOLS[instance.model]
    probe = np.array([average_precision(recurrence_scores(r, pool), r["causes"], r["editable"]) for r in test])
    diff = probe - chance(test)
    assert diff.mean() <= TOLERANCE, f"recurrence probe: {diff.mean():+.3f} AP against random"


# Open: where the model also serves a family mined without lone words, its prompts there dilute the lone
# words' recurrence, and over all public prompts the probe finds causes (measured: 0.351 against chance 0.200
# on conjunctive/grammar-llama-e, whose model also serves ordered; 0.347 against 0.226 on
# single/grammar-llama-b, whose model also serves redundant). Strict: re-mining those families with lone
# words would make these pass, and the marks must then go.
OPEN_UNIQUENESS = {
    "conjunctive/grammar-llama-e": "ordered/grammar-llama-e is mined without lone words",
    "single/grammar-llama-b": "redundant/grammar-llama-b is mined without lone words",
}


def uniqueness_params() -> list:
    params = []
    for instance in LONE:
        params.append(pytest.param(instance, ("test",), id=f"{instance.name}-test-prompts"))
        marks = open_marks(OPEN_UNIQUENESS, instance.name)
        params.append(pytest.param(instance, ("dev", "test"), marks=marks, id=f"{instance.name}-all-public-prompts"))
    return params


@pytest.mark.skipif(not LONE, reason="no instance is mined with lone parts")
@pytest.mark.parametrize(("instance", "splits"), uniqueness_params())
def test_tokens_seen_in_no_other_public_prompt_do_not_find_causes_where_lone_words_recur(instance, splits):
    """The uniqueness probe, where the instance was mined with lone parts or lone singles, scores like random.

    A test cause word then recurs in the model's other public prompts as neutral filler does, so "the word
    seen nowhere else" no longer points at it: against the model's test prompts and against all of its public
    prompts (dev too, a stronger attacker), within 0.05 AP of chance or not above it over mechanisms. The two
    open exceptions are marked strict xfail (``OPEN_UNIQUENESS``).
    """
    test = [r for r in read_cases(instance.folder / CASES) if r["split"] == "test"]
    pool = (POOLS if splits == ("test",) else PUBLIC)[instance.model]
    probe = np.array([average_precision(uniqueness_scores(r, pool), r["causes"], r["editable"]) for r in test])
    floor = chance(test)
    diff = probe - floor
    low = above_random_by_mechanism(diff, test)
    message = f"uniqueness AP {probe.mean():.3f} against random's {floor.mean():.3f}"
    assert diff.mean() <= TOLERANCE or low <= 0.0, f"{message}; 95% lower bound over mechanisms {low:.3f}"


def test_the_probes_do_find_a_leak_when_there_is_one():
    """The probes are not blind: where token names do give roles away, token_form wins."""
    rng = np.random.default_rng(0)

    def case(i: int, split: str) -> dict:
        tokens = [f"w{rng.integers(100):03d}" for _ in range(20)]
        cause = int(rng.integers(1, 19))
        tokens[cause] = f"trigger{rng.integers(10)}"  # a leaky generator: names reveal the role
        ids = [zlib.crc32(t.encode()) % 1000 for t in tokens]
        return {"id": f"c{i}", "split": split, "prompt_ids": ids, "prompt_tokens": tokens,
                "target_ids": [1], "editable": list(range(1, 19)), "causes": [[cause]]}  # fmt: skip

    dev = [DevCase.from_record(case(i, "dev")) for i in range(40)]
    test = [case(i + 40, "test") for i in range(40)]
    probe = get_method("token_form")
    probe.fit(dev, [f"v{i}" for i in range(1000)], None)
    assert mean_ap(probe, test) > mean_ap(get_method("random"), test) + 0.3
