"""Metrics: hand-computed values for every metric, the ties-against-the-method rule, and aggregation."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from halbench.metrics import (
    METRICS,
    MetricInfo,
    MetricInputError,
    auroc,
    average_precision,
    bootstrap_ci,
    hit_at_k,
    localization_metrics,
    paired_difference_ci,
    precision_at_k,
    rank_with_ties,
    register_metric,
    top_fraction_positions,
)

# The running example: a prompt of L = 6 positions, position 5 is a fixed marker, one conjunctive cause {1, 3}.
L = 6
EDITABLE = [0, 1, 2, 3, 4]
CAUSES = [[1, 3]]


def metrics(scores, causes=CAUSES, editable=EDITABLE) -> dict[str, float]:
    return localization_metrics(scores, causes, editable, length=L)


# ---------------------------------------------------------------- hand-computed localization values


def test_perfect_scores():
    # editable ranking 1, 3, 4, 2, 0: causes at ranks 1 and 2 -> AP = (1/1 + 2/2) / 2 = 1; both beat all 3 others.
    assert metrics([0.1, 0.9, 0.2, 0.8, 0.3, 0.0]) == {
        "average_precision": 1.0,
        "auroc": 1.0,
        "precision_at_k": 1.0,
        "hit_at_k": 1.0,
    }


def test_reversed_scores():
    # ranking 0, 2, 4, 1, 3: causes at ranks 4 and 5 -> AP = (1/4 + 2/5) / 2 = 0.325; no cause beats a non-cause.
    got = metrics([0.9, 0.1, 0.8, 0.0, 0.7, 0.5])
    assert got["average_precision"] == pytest.approx(0.325)
    assert got["auroc"] == 0.0
    assert got["precision_at_k"] == 0.0
    assert got["hit_at_k"] == 0.0


@pytest.mark.parametrize("value", [0.0, 0.5, -3.0])
def test_constant_scores_get_the_worst_value_never_credit(value):
    # all tied -> non-causes first: ranking 0, 2, 4, 1, 3, the same as reversed scores -> AP = 0.325, AUROC = 0.
    got = metrics([value] * L)
    assert got["average_precision"] == pytest.approx(0.325)
    assert got["average_precision"] < 0.4  # below even sklearn's tie-averaged chance level, 2/5
    assert got["auroc"] == 0.0
    assert got["precision_at_k"] == 0.0
    assert got["hit_at_k"] == 0.0


def test_tie_between_a_cause_and_a_non_cause():
    # 1 (0.9) first; 2 and 3 tie at 0.5 -> non-cause 2 before cause 3; then 0 (0.2), 4 (0.1). Ranking 1, 2, 3, 0, 4.
    # AP = (1/1 + 2/3) / 2 = 5/6. AUROC: cause 1 beats 2, 0, 4 (3 pairs), cause 3 beats 0, 4 (2) -> 5 / (2*3) = 5/6.
    # top-2 = {1, 2} -> precision 1/2, no hit.
    got = metrics([0.2, 0.9, 0.5, 0.5, 0.1, 0.0])
    assert got["average_precision"] == pytest.approx(5 / 6)
    assert got["auroc"] == pytest.approx(5 / 6)
    assert got["precision_at_k"] == 0.5
    assert got["hit_at_k"] == 0.0


def test_tie_at_the_top_involving_both_causes():
    # 0, 1, 3 tie at 0.9 -> 0 first, then 1, 3; then 2, 4. Ranking 0, 1, 3, 2, 4.
    # AP = (1/2 + 2/3) / 2 = 7/12. AUROC: each cause beats 2 and 4 only -> 4 / 6 = 2/3. top-2 = {0, 1} -> 1/2.
    got = metrics([0.9, 0.9, 0.1, 0.9, 0.1, 0.0])
    assert got["average_precision"] == pytest.approx(7 / 12)
    assert got["auroc"] == pytest.approx(2 / 3)
    assert got["precision_at_k"] == 0.5
    assert got["hit_at_k"] == 0.0


def test_single_position_cause():
    # cause {2}; ranking 0 (0.5), 2 (0.45), 1, 4, 3 -> AP = 1/2; beats 3 of 4 non-causes -> AUROC 3/4; top-1 = {0}.
    got = metrics([0.5, 0.4, 0.45, 0.1, 0.2, 0.0], causes=[[2]])
    assert got == {"average_precision": 0.5, "auroc": 0.75, "precision_at_k": 0.0, "hit_at_k": 0.0}


def test_best_matching_alternative_is_scored():
    # ranking 2 (0.9), 4 (0.8), 1, 3, 0 (0.1).
    scores = [0.1, 0.3, 0.9, 0.2, 0.8, 0.0]
    # alternative {0} alone: rank 5 -> AP = 1/5, beats nothing -> AUROC 0.
    first = metrics(scores, causes=[[0]])
    assert first == {"average_precision": pytest.approx(0.2), "auroc": 0.0, "precision_at_k": 0.0, "hit_at_k": 0.0}
    # alternative {2, 4} is the top two -> every metric 1; the max over alternatives picks it.
    assert metrics(scores, causes=[[0], [2, 4]]) == {
        "average_precision": 1.0,
        "auroc": 1.0,
        "precision_at_k": 1.0,
        "hit_at_k": 1.0,
    }


def test_each_metric_picks_its_own_best_alternative():
    # ranking 0 (0.9), 1 (0.8), 2 (0.7), 3 (0.6), 4 (0.5).
    # {0, 4}: AP = (1/1 + 2/5)/2 = 0.7, AUROC: 0 beats 3, 4 beats 0 -> 3/6 = 0.5, top-2 {0, 1} -> 1/2.
    # {1, 2}: AP = (1/2 + 2/3)/2 = 7/12, AUROC: 1 and 2 each beat 3, 4 -> 4/6 = 2/3, top-2 -> 1/2.
    got = metrics([0.9, 0.8, 0.7, 0.6, 0.5, 0.0], causes=[[0, 4], [1, 2]])
    assert got["average_precision"] == pytest.approx(0.7)
    assert got["auroc"] == pytest.approx(2 / 3)
    assert got["precision_at_k"] == 0.5


def test_non_editable_positions_are_ignored_even_when_highest():
    # position 5 (a fixed marker) scores 100 but is not editable: ranking 1, 3, 4, 2, 0 -> perfect.
    scores = [0.1, 0.9, 0.2, 0.8, 0.3, 100.0]
    assert metrics(scores) == {"average_precision": 1.0, "auroc": 1.0, "precision_at_k": 1.0, "hit_at_k": 1.0}
    # were it editable it would rank first: ranking 5, 1, 3, ... -> AP = (1/2 + 2/3) / 2 = 7/12.
    assert average_precision(scores, CAUSES, [*EDITABLE, 5]) == pytest.approx(7 / 12)


def test_single_functions_match_the_bundle():
    scores = [0.2, 0.9, 0.5, 0.5, 0.1, 0.0]
    bundle = metrics(scores)
    assert set(bundle) <= set(METRICS)
    for name, fn in [
        ("average_precision", average_precision),
        ("auroc", auroc),
        ("precision_at_k", precision_at_k),
        ("hit_at_k", hit_at_k),
    ]:
        assert fn(scores, CAUSES, EDITABLE, length=L) == bundle[name]


# ---------------------------------------------------------------- input validation


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_scores_raise(bad):
    scores = [0.1, 0.9, bad, 0.8, 0.3, 0.0]
    with pytest.raises(MetricInputError, match="finite"):
        average_precision(scores, CAUSES, EDITABLE)


def test_non_finite_score_on_a_fixed_position_still_raises():
    with pytest.raises(MetricInputError, match=r"positions \[5\]"):
        metrics([0.1, 0.9, 0.2, 0.8, 0.3, float("nan")])


@pytest.mark.parametrize(
    ("scores", "causes", "editable", "match"),
    [
        ([0.0] * 5, CAUSES, EDITABLE, "prompt has 6 positions"),
        ([[0.0] * 6], CAUSES, EDITABLE, "1-D"),
        (["a"] * 6, CAUSES, EDITABLE, "numbers"),
        ([0.0] * 6, [[1, 5]], EDITABLE, "not editable"),
        ([0.0] * 6, [[1, 9]], EDITABLE, "outside the prompt"),
        ([0.0] * 6, [], EDITABLE, "causes is empty"),
        ([0.0] * 6, [[]], EDITABLE, r"causes\[0\] is empty"),
        ([0.0] * 6, [[1, 1]], EDITABLE, "repeats"),
        ([0.0] * 6, [[1.5]], EDITABLE, "integer"),
        ([0.0] * 6, CAUSES, [0, 1, 1, 3], "repeats"),
    ],
)
def test_malformed_inputs_raise(scores, causes, editable, match):
    with pytest.raises(MetricInputError, match=match):
        localization_metrics(scores, causes, editable, length=L)


def test_auroc_needs_a_non_cause():
    with pytest.raises(MetricInputError, match="no negatives"):
        auroc([0.0, 1.0, 2.0], [[0, 2]], [0, 2])
    assert average_precision([0.0, 1.0, 2.0], [[0, 2]], [0, 2]) == 1.0


# ---------------------------------------------------------------- agreement with sklearn and with brute force


def test_agrees_with_sklearn_on_untied_inputs():
    rng = np.random.default_rng(0)
    for _ in range(150):
        length = int(rng.integers(3, 25))
        editable = sorted(rng.choice(length, size=int(rng.integers(2, length + 1)), replace=False).tolist())
        size = int(rng.integers(1, len(editable)))
        cause = rng.choice(editable, size=size, replace=False).tolist()
        scores = rng.normal(size=length)  # continuous: no ties
        truth = np.isin(editable, cause)
        kept = scores[editable]
        assert average_precision(scores, [cause], editable) == pytest.approx(average_precision_score(truth, kept))
        assert auroc(scores, [cause], editable) == pytest.approx(roc_auc_score(truth, kept))
        top = np.asarray(editable)[np.argsort(-kept)[:size]]
        assert precision_at_k(scores, [cause], editable) == pytest.approx(np.isin(top, cause).mean())
        assert hit_at_k(scores, [cause], editable) == float(set(top.tolist()) == set(cause))


def _ranked_metrics(truth: np.ndarray) -> tuple[float, float, float]:
    """AP, AUROC and precision@k of one strict ranking (truth listed best first)."""
    ranks = np.flatnonzero(truth) + 1
    ap = float(np.mean(np.arange(1, ranks.size + 1) / ranks))
    negatives_below = [(~truth[r:]).sum() for r in ranks]
    roc = float(np.sum(negatives_below) / (ranks.size * (~truth).sum()))
    return ap, roc, float(truth[: ranks.size].mean())


def test_ties_give_the_minimum_over_all_orderings_of_the_ties():
    # Brute force: every strict ordering consistent with the (tied) scores; the metric must equal the worst one.
    rng = np.random.default_rng(1)
    for _ in range(25):
        n = int(rng.integers(2, 7))
        scores = rng.integers(0, 3, size=n).astype(float)
        truth = np.zeros(n, dtype=bool)
        truth[rng.choice(n, size=int(rng.integers(1, n)), replace=False)] = True
        orderings = [p for p in itertools.permutations(range(n)) if np.all(np.diff(scores[list(p)]) <= 0)]
        worst = np.min([_ranked_metrics(truth[list(p)]) for p in orderings], axis=0)
        cause = np.flatnonzero(truth).tolist()
        got = [f(scores, [cause], list(range(n))) for f in (average_precision, auroc, precision_at_k)]
        assert got == pytest.approx(worst.tolist())


# ---------------------------------------------------------------- top_fraction_positions


def test_top_fraction_positions_breaks_ties_by_lowest_position():
    scores = [0.5, 0.9, 0.5, 0.1, 0.5, 9.0]  # position 5 is not editable
    assert top_fraction_positions(scores, EDITABLE, 0.4) == [1, 0]  # ceil(0.4 * 5) = 2; tie 0/2/4 -> 0
    assert top_fraction_positions(scores, EDITABLE, 0.5) == [1, 0, 2]  # ceil(2.5) = 3
    assert top_fraction_positions(scores, EDITABLE, 1.0) == [1, 0, 2, 4, 3]
    assert top_fraction_positions(scores, EDITABLE, 0.0) == []
    assert top_fraction_positions(scores, EDITABLE[::-1], 0.4) == [1, 0]  # the order of editable does not matter


def test_top_fraction_positions_ignores_float_noise():
    assert 0.28 * 25 > 7  # 7.000000000000001
    assert len(top_fraction_positions(np.arange(25.0), list(range(25)), 0.28)) == 7
    assert len(top_fraction_positions(np.arange(25.0), list(range(25)), 0.29)) == 8  # ceil(7.25)


@pytest.mark.parametrize("alpha", [-0.1, 1.5])
def test_top_fraction_positions_rejects_bad_alpha(alpha):
    with pytest.raises(MetricInputError, match="alpha"):
        top_fraction_positions([0.0, 1.0], [0, 1], alpha)


def test_top_fraction_positions_rejects_nan():
    with pytest.raises(MetricInputError, match="finite"):
        top_fraction_positions([0.0, float("nan")], [0, 1], 0.5)


# ---------------------------------------------------------------- metadata


def test_registry_is_consistent():
    for name, info in METRICS.items():
        assert info.name == name
        assert info.direction in ("higher", "lower")
        assert info.low <= info.high
    for name in ("average_precision", "auroc", "precision_at_k", "hit_at_k"):
        assert METRICS[name].needs_ground_truth and METRICS[name].direction == "higher"


def test_metric_info_is_frozen_and_validated():
    info = METRICS["auroc"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.low = -1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="direction"):
        MetricInfo("x", "up", 0.0, 1.0, False, "")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already registered"):
        register_metric(info)
    loss = MetricInfo("loss", "lower", 0.0, float("inf"), False, "")
    assert sorted([0.3, 0.1], key=lambda v: -loss.sign * v) == [0.1, 0.3]  # best first, no special case


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_is_deterministic_and_covers_the_mean():
    values = np.random.default_rng(2).random(40)
    first = bootstrap_ci(values, seed=7)
    assert first == bootstrap_ci(values.tolist(), seed=7)
    assert first != bootstrap_ci(values, seed=8)
    mean, low, high = first
    assert mean == pytest.approx(values.mean())
    assert low < mean < high
    _, wide_low, wide_high = bootstrap_ci(values, seed=7, level=0.99)
    assert wide_low <= low and high <= wide_high


def test_bootstrap_hand_example():
    # constant values: every resample has the same mean.
    assert bootstrap_ci([0.25] * 5) == (0.25, 0.25, 0.25)
    # values [0, 1]: a resample's mean is 0 (prob 1/4), 1/2 (1/2) or 1 (1/4); the 2.5% and 97.5% quantiles fall
    # inside the masses at 0 and 1 -> interval (0, 1) around the mean 1/2.
    assert bootstrap_ci([0.0, 1.0], n_boot=2000) == (0.5, 0.0, 1.0)


def test_bootstrap_rejects_bad_input():
    with pytest.raises(MetricInputError):
        bootstrap_ci([])
    with pytest.raises(MetricInputError, match="finite"):
        bootstrap_ci([0.1, float("nan")])
    with pytest.raises(MetricInputError, match="level"):
        bootstrap_ci([0.1], level=1.0)


def test_paired_difference():
    a = np.array([0.5, 0.7, 0.9, 0.6])
    # a - (a - 0.1) = 0.1 on every case -> (0.1, 0.1, 0.1), sign a - b.
    assert paired_difference_ci(a, a - 0.1) == pytest.approx((0.1, 0.1, 0.1))
    assert paired_difference_ci(a - 0.1, a) == pytest.approx((-0.1, -0.1, -0.1))
    with pytest.raises(MetricInputError, match="same cases"):
        paired_difference_ci(a, a[:3])


# ---------------------------------------------------------------- ranking


def test_identical_methods_share_a_rank_and_a_clear_winner_ranks_alone():
    base = np.random.default_rng(3).random(30)
    ranks = rank_with_ties({"b": base, "a": base.copy(), "best": base + 0.3}, "higher")
    assert ranks == {"best": 1, "a": 2, "b": 2}
    assert list(ranks) == ["best", "a", "b"]  # rank order; equal means break by name


def test_lower_is_better_direction():
    base = np.random.default_rng(4).random(30)
    assert rank_with_ties({"loss_hi": base + 0.3, "loss_lo": base}, "lower") == {"loss_lo": 1, "loss_hi": 2}


def test_ties_do_not_chain():
    # a - b alternates +0.6/-0.4 (mean 0.1, noisy) and b - c alternates -0.4/+0.6: each step is not significant,
    # but a - c = 0.2 on every case is. c is compared with its group's leader a, so it does not join rank 1.
    n = 40
    step1 = np.where(np.arange(n) % 2 == 0, 0.6, -0.4)
    step2 = np.where(np.arange(n) % 2 == 0, -0.4, 0.6)
    a = np.zeros(n)
    b = a - step1
    c = b - step2
    assert paired_difference_ci(a, b)[1] < 0 < paired_difference_ci(a, b)[2]
    assert paired_difference_ci(b, c)[1] < 0 < paired_difference_ci(b, c)[2]
    assert paired_difference_ci(a, c)[1] > 0
    assert rank_with_ties({"a": a, "b": b, "c": c}, "higher") == {"a": 1, "b": 1, "c": 3}


def test_rank_rejects_bad_input():
    assert rank_with_ties({}, "higher") == {}
    with pytest.raises(MetricInputError, match="direction"):
        rank_with_ties({"a": [1.0]}, "up")  # type: ignore[arg-type]
    with pytest.raises(MetricInputError, match="same cases"):
        rank_with_ties({"a": [1.0, 2.0], "b": [1.0]}, "higher")
