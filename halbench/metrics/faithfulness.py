"""Model-based metrics that need no ground truth: the paper's reproducibility, its probability variant, ERASER's pair.

For each alpha the ``ceil(alpha * E)`` top-scored editable positions are kept and every other editable
position is refilled, ``refills`` times:

- ``s_rep@alpha`` is the paper's reproducibility: the rate at which greedy decoding of the refilled
  prompt reproduces the hallucinated answer, refills drawn as random tokens (by corpus frequency);
- ``s_rep_lm@alpha`` is the same rate with refills written by the model itself (each position sampled
  from the model's next-token distribution given the original prefix), the stand-in for the masked
  language model the paper fills with, since no extra weights can be fetched;
- ``p_rep@alpha`` is the teacher-forced *probability* of the hallucinated answer on the random-token
  refills: a smoother, different quantity (its expectation over sampling, not over greedy decoding);
- ``comprehensiveness`` is the drop in that probability when the top 25% are refilled instead.
  (ERASER's sufficiency is ``p_rep@0.25`` itself: the probability with only the top 25% kept.)

Every method is scored on the same seeded refills: the draws for a case depend only on the case and the
seed, never on the method, so two methods that keep the same positions get the same numbers.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from halbench.metrics.info import MetricInfo, register_metric
from halbench.metrics.selection import top_fraction_positions
from halbench.scoring import Scorer

ALPHAS = (0.25, 0.5, 0.75)
ERASER_FRACTION = 0.25

for _alpha in ALPHAS:
    register_metric(
        MetricInfo(
            f"s_rep@{_alpha}",
            "higher",
            0.0,
            1.0,
            False,
            f"The paper's reproducibility: the rate at which greedy decoding reproduces the hallucination when "
            f"the top {_alpha:.0%} of editable positions are kept and the rest refilled with random tokens.",
        )
    )
    register_metric(
        MetricInfo(
            f"s_rep_lm@{_alpha}",
            "higher",
            0.0,
            1.0,
            False,
            f"Reproducibility with the refills written by the model itself (masked-LM stand-in): top {_alpha:.0%} "
            "kept, greedy decoding.",
        )
    )
    register_metric(
        MetricInfo(
            f"p_rep@{_alpha}",
            "higher",
            0.0,
            1.0,
            False,
            f"Probability variant: mean teacher-forced probability of the hallucination with the top {_alpha:.0%} "
            "kept and the rest refilled with random tokens (p_rep@0.25 is ERASER's sufficiency).",
        )
    )
register_metric(
    MetricInfo(
        "comprehensiveness",
        "higher",
        -1.0,
        1.0,
        False,
        f"Drop in the hallucination's probability when the top {ERASER_FRACTION:.0%} of editable positions are "
        "refilled with random tokens (ERASER).",
    )
)


@dataclass(frozen=True)
class CaseDraws:
    """The seeded refills of one case: random tokens, and (optionally) tokens the model writes itself."""

    random: np.ndarray  # [R, L]
    model: np.ndarray | None  # [R_lm, L], or None when the model-filled variant is not computed


def case_draws(evaluator: Scorer, refills: int, seed: int, lm_refills: int = 0) -> CaseDraws:
    """Draws for every position, fixed by the case id and the seed; the model fill costs one forward.

    ``lm_refills`` > 0 adds that many model-filled refills (the ``s_rep_lm`` metrics); they double the
    metric rows, so sweeps enable them where they are wanted rather than everywhere.
    """
    rng = np.random.default_rng([seed, zlib.crc32(evaluator.case.id.encode())])
    length = evaluator.case.length
    random = evaluator.replacements.sample(rng, evaluator.prompt, np.ones((refills, length), dtype=bool), "unigram")
    if lm_refills <= 0:
        return CaseDraws(random, None)
    logprobs = evaluator.next_token_logprobs()[0]  # [L, V]: row p-1 predicts position p
    pool = evaluator.replacements.pool
    model = np.repeat(evaluator.prompt[None, :], lm_refills, axis=0)
    for pos in range(1, length):
        weights = np.exp(logprobs[pos - 1, pool] - logprobs[pos - 1, pool].max())
        model[:, pos] = pool[rng.choice(len(pool), size=lm_refills, p=weights / weights.sum())]
    return CaseDraws(random, model)


def _keep_only(evaluator: Scorer, draws: np.ndarray, kept: tuple[int, ...]) -> np.ndarray:
    keep = np.ones(evaluator.case.length, dtype=bool)
    keep[list(evaluator.case.editable)] = False
    keep[list(kept)] = True
    return np.where(keep[None, :], evaluator.prompt[None, :], draws)


def _score(evaluator: Scorer, rows: np.ndarray) -> tuple[float, float]:
    """(mean target probability, greedy reproduction rate) over ``rows``, one model call of ``len(rows)`` rows."""
    logprob, hit = evaluator.target_scores(rows)
    return float(np.exp(logprob).mean()), float(hit.mean())


def faithfulness_metrics(
    scores: np.ndarray, evaluator: Scorer, draws: CaseDraws, memo: dict | None = None
) -> dict[str, float]:
    """Every reproducibility variant at each alpha, and comprehensiveness, for one case's scores.

    Each distinct kept set is one model call per refill kind, so its numbers never depend on what else was
    scored with it; that is what makes ``memo`` exact. ``memo`` (one per case, seed and refill count, shared
    across methods and budgets) skips kept sets already scored.
    """
    memo = {} if memo is None else memo
    editable = list(evaluator.case.editable)
    fractions = sorted({*ALPHAS, ERASER_FRACTION})
    kept = {f: tuple(sorted(top_fraction_positions(scores, editable, f))) for f in fractions}
    top = set(kept[ERASER_FRACTION])
    rest = tuple(p for p in editable if p not in top)
    if "base" not in memo:
        memo["base"] = float(evaluator.target_prob(evaluator.prompt[None, :])[0])

    def scored(kind: str, key: tuple[int, ...]) -> tuple[float, float]:
        if (kind, key) not in memo:
            source = draws.random if kind == "random" else draws.model
            memo[kind, key] = _score(evaluator, _keep_only(evaluator, source, key))
        return memo[kind, key]

    out = {}
    for a in ALPHAS:
        prob, rate = scored("random", kept[a])
        out[f"p_rep@{a}"] = prob
        out[f"s_rep@{a}"] = rate
        if draws.model is not None:
            out[f"s_rep_lm@{a}"] = scored("model", kept[a])[1]
    out["comprehensiveness"] = memo["base"] - scored("random", rest)[0]
    return out
