#!/usr/bin/env python
"""A model-free position prior, trained on dev causes, scored on test: how far does "where the cause sits" go?

Not a shipped leak probe (the leak test asks `dev_lookup` and `token_form` to stay at chance); a diagnostic
of a selection effect. Which cases pass verification depends on the model, and a model that hallucinates
more often when its trigger sits early (or late) leaves a positional regularity in the verified cases that a
prior learned from dev can use without the model. Features per editable position: relative position in the
prompt, its square, and its rank among the editable positions from either end. The last two columns (all
splits) show where the admitted causes sit and where layout alone would put them. Reads files only.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

from halbench.metrics import average_precision
from halbench.tasks.artifacts import CASES, read_cases
from halbench.tasks.registry import built_instances


def features(record: dict) -> dict[int, list[float]]:
    n, editable = len(record["prompt_ids"]), record["editable"]
    e = len(editable)
    return {p: [p / n, (p / n) ** 2, k / e, (e - k) / e, 1 / (1 + e - k), 1 / (1 + k)] for k, p in enumerate(editable)}


def fit(dev: list[dict]) -> LogisticRegression:
    rows, labels = [], []
    for r in dev:
        feats, causal = features(r), {p for alt in r["causes"] for p in alt}
        rows += [feats[p] for p in r["editable"]]
        labels += [int(p in causal) for p in r["editable"]]
    return LogisticRegression(max_iter=2000).fit(np.array(rows), np.array(labels))


def prior_scores(model: LogisticRegression, r: dict) -> np.ndarray:
    scores, feats = np.full(len(r["prompt_ids"]), -1e9), features(r)
    scores[r["editable"]] = model.predict_proba(np.array([feats[p] for p in r["editable"]]))[:, 1]
    return scores


def mean_ap(test: list[dict], score) -> float:
    return float(np.mean([average_precision(score(r), r["causes"], r["editable"]) for r in test]))


def fifths(records: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Share of cause positions in each fifth of the editable positions: as admitted, and as placed.

    Mining places a cause word uniformly over the free slots of its category, so the second array (each
    cause's weight spread over the editable positions of its slot kind) is what layout alone gives; where
    the first departs from it, verification selected by position."""
    seen, layout = np.zeros(5), np.zeros(5)
    for r in records:
        editable, e = r["editable"], len(r["editable"])
        for p in r["causes"][0]:
            seen[min(4, 5 * editable.index(p) // e)] += 1
            same = [k for k, q in enumerate(editable) if r["slots"][q] == r["slots"][p]]
            for k in same:
                layout[min(4, 5 * k // e)] += 1 / len(same)
    return seen / seen.sum(), layout / layout.sum()


def main() -> None:
    head = "| instance | position prior AP | random AP (20 draws) | causes by fifth of editable | layout alone |"
    print(head + "\n|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for inst in built_instances():
        records = read_cases(inst.folder / CASES)
        model = fit([r for r in records if r["split"] == "dev"])
        test = [r for r in records if r["split"] == "test"]
        chance = np.mean([mean_ap(test, lambda r: rng.random(len(r["prompt_ids"]))) for _ in range(20)])
        seen, layout = (" ".join(f"{x:.2f}" for x in shares) for shares in fifths(records))
        prior = mean_ap(test, lambda r, m=model: prior_scores(m, r))
        print(f"| {inst.name} | {prior:.3f} | {chance:.3f} | {seen} | {layout} |")


if __name__ == "__main__":
    main()
