#!/usr/bin/env python
"""Is every incidental word of a committed case inert on its own? Verification checks incidental words only
in random halves (stability), so one that the hallucination needs could pass unseen, and would then be a
cause the ground truth does not name.

For each test case of each instance (or ``--task``), every editable position that is not a cause, a
distractor placed on purpose or the entity is refilled *alone*, ``--refills`` times under each intervention
family, and the greedy answer read. A position is *needed* when the hallucination survives its refill less
often than the family's stability threshold, under both families. Prints, per instance, the cases with a
needed incidental word, how many such words, and their survival rates. Runs the models (CPU is fine).

    python scripts/incidental_necessity.py [--task decoy] [--refills 16]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from transformers import AutoModelForCausalLM

from halbench.tasks.artifacts import CASES, MODEL_DIR, read_cases
from halbench.tasks.build import load_refills
from halbench.tasks.forward import last_logits
from halbench.tasks.registry import built_instances
from halbench.tasks.spec import TaskSpec
from halbench.tasks.verify import FAMILIES


def incidental(record: dict) -> list[int]:
    placed = {p for alt in record["causes"] for p in alt} | set(record["decoys"]) | set(record["entity"])
    return [p for p in record["editable"] if p not in placed]


def survival(model, record: dict, refills, positions: list[int], family: str, n: int) -> np.ndarray:
    """Share of ``n`` single-position refills of each of ``positions`` after which the target is still greedy."""
    if not positions:
        return np.zeros(0)
    rng = np.random.default_rng([*record["verify_seed"], 99, FAMILIES.index(family)])
    base = np.asarray(record["prompt_ids"], dtype=np.int64)
    rows = np.repeat(base[None, :], n * len(positions), axis=0)
    for k, pos in enumerate(positions):
        rows[k * n : (k + 1) * n, pos] = refills.draw(family, rng, record["slots"], [pos], n)[:, 0]
    greedy = last_logits(model, rows.tolist()).argmax(-1).numpy().reshape(len(positions), n)
    return (greedy == int(record["target_ids"][0])).mean(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", action="append", help="only these tasks (repeatable)")
    parser.add_argument("--refills", type=int, default=16)
    args = parser.parse_args()
    print("| instance | test cases | incidental words | cases with a needed one | needed words | their survival |")
    print("|---|---|---|---|---|---|")
    for inst in built_instances():
        if args.task and inst.task not in args.task:
            continue
        spec = TaskSpec.model_validate(inst.manifest()["spec"])
        limits = {f: getattr(spec.verification, f).stability for f in FAMILIES}
        model = AutoModelForCausalLM.from_pretrained(inst.model_folder / MODEL_DIR).eval()
        refills = load_refills(inst.model_folder)
        test = [r for r in read_cases(inst.folder / CASES) if r["split"] == "test"]
        words, hit_cases, needed = 0, 0, []
        with torch.inference_mode():
            for record in test:
                positions = incidental(record)
                words += len(positions)
                rates = {f: survival(model, record, refills, positions, f, args.refills) for f in FAMILIES}
                low = [k for k in range(len(positions)) if all(rates[f][k] < limits[f] for f in FAMILIES)]
                hit_cases += bool(low)
                needed += [min(rates[f][k] for f in FAMILIES) for k in low]
        spread = f"{np.mean(needed):.2f} (min {min(needed):.2f})" if needed else "-"
        print(f"| {inst.name} | {len(test)} | {words} | {hit_cases} | {len(needed)} | {spread} |")


if __name__ == "__main__":
    main()
