#!/usr/bin/env python
"""Which inert distractors does each method rank above a cause? Per instance, method and budget, from the
committed per-case records, the cases' ground truth and the model's world (its roles):

- ``decoy``: a word that co-occurred with a trigger in training (explained away by it);
- ``part``: a part of another conjunction without its partner;
- ``copy``: a word of the cause in its reversed copy (`ordered`);
- ``lure``: a single trigger of the cause's own target (`decoy`): the model associates it with the target,
  but the hallucination neither needs it nor follows from it (verified).

A cell is the share of cases in which some distractor of that kind scores at least as high as the
lowest-scored position of the cause (ties count against the method, as in the metrics). Reads files only.

    python scripts/distractor_ranks.py [--task decoy --task partial] [--method integrated_gradients] [--budget 64]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np

from halbench.records import read_records
from halbench.tasks.artifacts import CASES, read_cases
from halbench.tasks.registry import built_instances

KINDS = ("lure", "decoy", "part", "copy")
ROOT_RESULTS = "results"


def roles(world: dict) -> dict[str, str]:
    """Each role word of a world: ``lure`` for single triggers, ``decoy`` for decoys, ``part`` for words of
    conjunctions (a cause's own words are told apart per case, as ``copy``)."""
    out = {}
    for m in world["mechanisms"]:
        for t in m["tokens"]:
            out[t] = "lure" if m["kind"] == "single" else "part"
        for d in m["decoys"]:
            out[d] = "decoy"
    return out


def distractor_kinds(record: dict, role_of: dict[str, str]) -> dict[int, str]:
    """The kind of each inert distractor position of a case."""
    cause_words = {record["prompt_tokens"][p] for c in record["causes"] for p in c}
    out = {}
    for p in record["decoys"]:
        word = record["prompt_tokens"][p]
        out[p] = "copy" if word in cause_words else role_of.get(word, "decoy")
    return out


def outranked(scores: np.ndarray, record: dict, kinds: dict[int, str]) -> set[str]:
    """Kinds with a distractor scored at least as high as the lowest cause position (of the best-scored
    alternative cause)."""
    floor = max(min(scores[p] for p in cause) for cause in record["causes"])
    return {kind for p, kind in kinds.items() if scores[p] >= floor}


def table(tasks: list[str] | None, methods: list[str] | None, budget: int) -> list[dict]:
    rows = []
    for inst in built_instances():
        if tasks and inst.task not in tasks:
            continue
        role_of = roles(json.loads((inst.model_folder / "world.json").read_text()))
        cases = {r["id"]: r for r in read_cases(inst.folder / CASES) if r["split"] == "test"}
        kinds = {i: distractor_kinds(r, role_of) for i, r in cases.items()}
        present = {k for ks in kinds.values() for k in ks.values()}
        if not present:
            continue
        folder = inst.folder.parents[2] / ROOT_RESULTS / inst.task / inst.model
        for path in sorted(folder.glob(f"*/budget-{budget}.cases.jsonl")):
            method = path.parent.name
            if methods and method not in methods:
                continue
            records, _ = read_records(path)
            ok = [r for r in records if r.get("status") == "ok" and r["id"] in cases]
            hits = defaultdict(int)
            for r in ok:
                for kind in outranked(np.asarray(r["scores"], dtype=float), cases[r["id"]], kinds[r["id"]]):
                    hits[kind] += 1
            rows.append({
                "instance": inst.name, "method": method, "cases": len(ok),
                "ap": float(np.mean([r["metrics"]["average_precision"] for r in ok])) if ok else float("nan"),
                **{k: (hits[k] / len(ok) if ok and k in present else None) for k in KINDS},
            })  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", action="append", help="only these tasks (repeatable)")
    ap.add_argument("--method", action="append", help="only these methods (repeatable)")
    ap.add_argument("--budget", type=int, default=64)
    args = ap.parse_args()
    kinds = " | ".join(f"{k} above a cause part" for k in KINDS)
    print(f"| instance | method | cases | AP@{args.budget} | {kinds} |")
    print("|---|---|---|---|" + "---|" * len(KINDS))
    for row in table(args.task, args.method, args.budget):
        cells = " | ".join("-" if row[k] is None else f"{row[k]:.2f}" for k in KINDS)
        print(f"| {row['instance']} | {row['method']} | {row['cases']} | {row['ap']:.3f} | {cells} |")


if __name__ == "__main__":
    main()
