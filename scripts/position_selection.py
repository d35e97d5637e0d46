#!/usr/bin/env python
"""Where along the prompt the position skew of admitted causes arises: at the draw, the model, or verification.

`scripts/position_probe.py` shows admitted causes crowding one end of the editable positions on some instances
(a position prior fitted on dev then beats random on test without the model). Mining places cause words
uniformly over their slots, so the skew is selection. This script draws the first ``--candidates`` test-split
candidates with mining's own draw (without its skipping of mechanisms already full), asks the model for its
greedy answer (one batched pass), verifies the hallucinating ones with every check (unstaged), and prints the
cause positions by fifth of the editable positions among: all drawn, the hallucinating, the verified, the
admitted cases (every split, from the case file), and the hallucinating that pass each check. Where
"hallucinating" departs from "drawn", the model itself answers by position; where a check's row departs, that
check selects by position.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from halbench.quiet import quiet_transformers
from halbench.tasks.artifacts import CASES, MODEL_DIR, read_cases
from halbench.tasks.build import load_refills
from halbench.tasks.forward import last_logits
from halbench.tasks.mining import draw_candidate
from halbench.tasks.registry import resolve, resolve_model
from halbench.tasks.verify import verify
from halbench.tasks.world import build_world


def by_fifth(pairs: list[tuple[list[int], list[int]]]) -> np.ndarray:
    """Share of cause positions per fifth of the editable positions; ``pairs`` holds (cause, editable)."""
    counts = np.zeros(5)
    for cause, editable in pairs:
        for p in cause:
            counts[min(4, 5 * editable.index(p) // len(editable))] += 1
    return counts / max(counts.sum(), 1)


def stages(task: str, model_name: str, candidates: int) -> dict[str, tuple[int, np.ndarray]]:
    """Cause positions by fifth at each stage: drawn, hallucinating, admitted (with how many prompts)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ref = resolve(task)
    spec, folder = ref.spec(), resolve_model(model_name).folder
    recipe = resolve_model(model_name).recipe()
    world = build_world(recipe.world)
    with quiet_transformers():
        tok = AutoTokenizer.from_pretrained(folder / MODEL_DIR)
        model = AutoModelForCausalLM.from_pretrained(folder / MODEL_DIR).eval()
    drawn = [d for i in range(candidates) if (d := draw_candidate(spec, recipe, world, tok, i, "test"))]
    with torch.no_grad():
        greedy = last_logits(model, [d.candidate.prompt_ids for d in drawn], spec.mining.batch_rows).argmax(-1)
    halluc = [d for d, g in zip(drawn, greedy.tolist(), strict=True) if g == d.candidate.target_id]
    thresholds = {"neutral": spec.verification.neutral, "unigram": spec.verification.unigram}
    with torch.no_grad():
        verdicts = verify(
            model, [d.candidate for d in halluc], load_refills(folder), thresholds, spec.verification.refills,
            spec.mining.batch_rows,
        )  # fmt: skip
    admitted = read_cases(ref.instance(model_name).folder / CASES)
    rows = {
        "drawn": [(d.candidate.causes[0], d.candidate.editable) for d in drawn],
        "hallucinating": [(d.candidate.causes[0], d.candidate.editable) for d in halluc],
        "verified": [
            (d.candidate.causes[0], d.candidate.editable) for d, v in zip(halluc, verdicts, strict=True) if v.passed
        ],
        "admitted": [(r["causes"][0], r["editable"]) for r in admitted],
    }
    for check in sorted({f.split(".")[1] for v in verdicts for f in v.failed}):
        passing = [
            d for d, v in zip(halluc, verdicts, strict=True) if not any(f.endswith("." + check) for f in v.failed)
        ]
        rows[f"hallucinating, passes {check}"] = [(d.candidate.causes[0], d.candidate.editable) for d in passing]
    return {stage: (len(pairs), by_fifth(pairs)) for stage, pairs in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("instances", nargs="+", help="task/model, e.g. partial/grammar-llama-c")
    parser.add_argument("--candidates", type=int, default=2000, help="test-split candidates to draw")
    args = parser.parse_args()
    print("| instance | stage | prompts | causes by fifth of the editable positions |\n|---|---|---|---|")
    for name in args.instances:
        task, model_name = name.split("/")
        for stage, (n, shares) in stages(task, model_name, args.candidates).items():
            print(f"| {name} | {stage} | {n} | {' '.join(f'{x:.2f}' for x in shares)} |")


if __name__ == "__main__":
    main()
