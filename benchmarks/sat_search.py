"""Time SAT's search core: the plain reference against the vectorised search, on identical inputs.

For prompt lengths 16, 32 and 64, N = 1024 perturbed prompts (each token replaced at rate 0.5 by a
draw from a small random vocabulary that also holds the prompt's own tokens, so replacements can
recreate prompt tokens), y = a teacher-forced-style probability from a planted rule (two positions
both kept) plus Gaussian noise, beam 20 and levels up to ceil(0.9 L) (the paper's settings). Both
searches run on the same inputs in this process; their results must be identical. The reference is
``reference_search``: plain loops, its containment test SAT's ``is_subsequence`` loop as written.

Reported times are CPU seconds of this process (``time.process_time``; the machine may be shared,
and both searches are single-threaded), wall seconds alongside. The reference runs once (three
times at L = 16, best kept); the fast search is warmed up once and its median over repeats is
reported (its first, cold call too), which errs against the fast search.

Usage: ``python benchmarks/sat_search.py [--lengths 16 32 64] [--rows 1024] [--repeats 15]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from halbench.methods.sat_search import SearchResult, fast_search, reference_search

TARGETS = {16: 100.0, 32: 300.0, 64: 1000.0}


@dataclass(frozen=True)
class Problem:
    original: np.ndarray
    perturbed: np.ndarray
    y: np.ndarray
    planted: tuple[int, int]


def make_problem(length: int, rows: int, seed: int) -> Problem:
    """A seeded prompt, its perturbations and a planted-rule hallucination probability."""
    rng = np.random.default_rng(seed)
    vocab = rng.choice(50_000, size=2 * length, replace=False)
    original = rng.choice(vocab, size=length)
    replaced = rng.random((rows, length)) < 0.5
    perturbed = np.where(replaced, rng.choice(vocab, size=(rows, length)), original)
    first, second = sorted(rng.choice(length, size=2, replace=False).tolist())
    kept = (perturbed[:, first] == original[first]) & (perturbed[:, second] == original[second])
    y = np.clip(0.15 + 0.7 * kept + rng.normal(0.0, 0.1, rows), 0.0, 1.0)
    return Problem(original, perturbed, y, (first, second))


def timed(func: Callable[[], SearchResult]) -> tuple[SearchResult, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = func()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def bench(length: int, rows: int, beam: int, repeats: int, seed: int) -> dict:
    problem = make_problem(length, rows, seed)

    def ref() -> SearchResult:
        return reference_search(problem.original, problem.perturbed, problem.y, beam=beam)

    def fast() -> SearchResult:
        return fast_search(problem.original, problem.perturbed, problem.y, beam=beam)

    fast_result, fast_cold, _ = timed(fast)
    ref_runs = [timed(ref) for _ in range(3 if length <= 16 else 1)]
    fast_runs = [timed(fast) for _ in range(repeats)]
    ref_result = ref_runs[0][0]
    assert fast_result == ref_result, f"L={length}: fast_search differs from reference_search"
    assert all(run[0] == ref_result for run in ref_runs + fast_runs)
    best = ref_result.best
    return {
        "L": length,
        "levels": len(ref_result.levels),
        "candidates": sum(t.tokens.shape[0] for t in ref_result.levels),
        "ref_cpu": min(run[1] for run in ref_runs),
        "ref_wall": min(run[2] for run in ref_runs),
        "fast_cpu": statistics.median(run[1] for run in fast_runs),
        "fast_wall": statistics.median(run[2] for run in fast_runs),
        "fast_cold": fast_cold,
        "found": best is not None and set(problem.planted) <= set(best.positions),
        "best": None if best is None else best.positions,
        "planted": problem.planted,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--beam", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"N = {args.rows} perturbations, rate 0.5, beam {args.beam}, levels up to ceil(0.9 L); full setting")
    print("times: CPU s (wall s); fast = median of warm runs; results asserted identical")
    header = (
        f"{'L':>3} {'levels':>6} {'cands':>6} {'reference':>17} {'fast':>17} {'fast cold':>9} "
        f"{'ratio cpu':>9} {'ratio wall':>10} {'target':>6}  {'met':>3}  planted pair -> best"
    )
    print(header)
    print("-" * len(header))
    all_met = True
    for length in args.lengths:
        row = bench(length, args.rows, args.beam, args.repeats, args.seed + length)
        ratio_cpu = row["ref_cpu"] / row["fast_cpu"]
        ratio_wall = row["ref_wall"] / row["fast_wall"]
        target = TARGETS.get(length)
        met = target is None or ratio_cpu >= target
        all_met &= met
        print(
            f"{length:>3} {row['levels']:>6} {row['candidates']:>6} "
            f"{row['ref_cpu']:>8.3f} ({row['ref_wall']:>6.2f}) {row['fast_cpu']:>8.4f} ({row['fast_wall']:>6.4f}) "
            f"{row['fast_cold']:>9.4f} {ratio_cpu:>8.0f}x {ratio_wall:>9.0f}x "
            f"{'-' if target is None else f'{target:.0f}x':>6}  {'yes' if met else 'NO':>3}  "
            f"{row['planted']} -> {row['best']}{'' if row['found'] else ' (missed)'}",
            flush=True,
        )
    print("all targets met" if all_met else "some targets NOT met")


if __name__ == "__main__":
    main()
