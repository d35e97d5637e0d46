#!/usr/bin/env python
"""SAT's average precision before and after the fidelity fix, on one built task instance.

"Before" is halbench's earlier perturbation (``mode=bernoulli``: each editable token replaced with
probability 0.5 by a unigram draw); "after" is the reference's (``mode=rgrand``, embedding neighbours of
the token's class). Each mode runs on the same first N test cases at the same budget, with the seeds
``halbench eval`` uses, and the script prints mean AP with a bootstrap interval per mode, plus any
further settings given with ``--also``. Why a script and not a test: on a random tiny model the numbers
mean nothing; they have to come from a real task instance.

    python scripts/sat_fidelity.py tasks/conjunctive/grammar-gpt2-a --budget 64 --cases 80
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from halbench.methods.base import get_method
from halbench.metrics.localization import average_precision
from halbench.runner import case_rng, stored_scores
from halbench.tasks.bundle import load_bundle
from halbench.tasks.registry import resolve_instances

SETTINGS = {
    "before (bernoulli, unigram)": {"mode": "bernoulli", "replacement": None},
    "after (rgrand, reference)": {"mode": "rgrand", "replacement": "reference"},
    "rgrand, unigram": {"mode": "rgrand", "replacement": None},
}


def bootstrap(values: list[float], seed: int = 0, draws: int = 2000) -> tuple[float, float, float]:
    """Mean and its 95% percentile interval."""
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(len(data), size=(draws, len(data)))].mean(1)
    return float(data.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def run(bundle, method: str, params: dict, records: list[dict], budget: int, seed: int) -> dict:
    """AP per case (a failed case scores 0, as ``halbench eval`` counts it at the metric's worst)."""
    sat = get_method(method, **params)
    aps, failures, start = [], 0, time.perf_counter()
    for record in records:
        scorer = bundle.scorer(record, budget=budget)
        try:
            attribution = sat.attribute(scorer.case, scorer, case_rng(seed, record["id"]))
            attribution.validate(scorer.case)
        except Exception as exc:  # reported, and scored as the worst AP
            failures += 1
            print(f"  {record['id']}: {type(exc).__name__}: {exc}")
            aps.append(0.0)
            continue
        aps.append(average_precision(stored_scores(attribution.scores), record["causes"], record["editable"]))
    mean, low, high = bootstrap(aps, seed)
    return {"ap": mean, "low": low, "high": high, "failed": failures, "seconds": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("instance", help="a built task instance: tasks/<task>/<model>, or <task>/<model>")
    parser.add_argument("--budget", type=int, default=64, help="model rows per case (default 64)")
    parser.add_argument("--cases", type=int, default=80, help="first N test cases (default 80)")
    parser.add_argument("--method", default="sat", help="sat or sat_shrunk (default sat)")
    parser.add_argument("--seed", type=int, default=0, help="the eval seed (default 0)")
    parser.add_argument("--split", default="test", help="test or dev (default test)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--only", nargs="*", help="run only these settings (names as printed)")
    parser.add_argument("--also", action="append", default=[], help="another setting as JSON, e.g. '{\"rate\": 0.3}'")
    args = parser.parse_args()

    (ref,) = resolve_instances(args.instance)
    bundle = load_bundle(ref, device=args.device)
    records = bundle.cases(args.split)[: args.cases]
    settings = {name: params for name, params in SETTINGS.items() if not args.only or name in args.only}
    settings.update({text: json.loads(text) for text in args.also})
    print(f"{ref.name}: {args.method}, {len(records)} {args.split} cases, budget {args.budget}, seed {args.seed}")
    for name, params in settings.items():
        out = run(bundle, args.method, params, records, args.budget, args.seed)
        print(
            f"  {name:<32} AP {out['ap']:.3f} [{out['low']:.3f}, {out['high']:.3f}]"
            f"  failed {out['failed']}  {out['seconds']:.1f} s"
        )


if __name__ == "__main__":
    main()
