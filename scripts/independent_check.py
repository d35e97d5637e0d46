#!/usr/bin/env python
"""Independent check of committed tasks, using transformers alone (no halbench import).

For sampled test cases of every task it loads ``model/`` with
``AutoModelForCausalLM``/``AutoTokenizer``, re-decodes the prompt, and measures
with its own refill draws (not the cases' stored seeds):
- necessity: refilling every cause position with neutral filler removes the target;
- sufficiency: keeping one alternative and refilling every other editable
  position keeps the target;
- minimality: for multi-token causes, refilling any one token (with the other
  alternatives refilled too) removes the target.
Exit status 1 if any task has fewer than ``--min-pass`` of its sampled cases
passing all three at the task's thresholds.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = Path(__file__).resolve().parents[1] / "tasks"


def greedy(model, rows: list[list[int]]) -> list[int]:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor(rows)).logits[:, -1]
    return logits.argmax(-1).tolist()


def refilled(prompt: list[int], positions: list[int], neutral: list[int], rng: random.Random, n: int):
    rows = []
    for _ in range(n):
        row = list(prompt)
        for p in positions:
            row[p] = rng.choice(neutral)
        rows.append(row)
    return rows


def check_case(model, case: dict, neutral: list[int], refills: int, rng: random.Random) -> dict:
    prompt, target = case["prompt_ids"], case["target_ids"][0]
    causes, editable = case["causes"], case["editable"]
    union = sorted({p for alt in causes for p in alt})
    out = {"greedy": greedy(model, [prompt])[0] == target}
    hits = greedy(model, refilled(prompt, union, neutral, rng, refills))
    out["necessity"] = sum(h != target for h in hits) / refills
    suff = []
    for alt in causes:
        others = [p for p in editable if p not in alt]
        hits = greedy(model, refilled(prompt, others, neutral, rng, refills))
        suff.append(sum(h == target for h in hits) / refills)
    out["sufficiency"] = min(suff)
    mini = []
    for a, alt in enumerate(causes):
        rest = [p for b, other in enumerate(causes) if b != a for p in other]
        for p in alt if len(alt) > 1 else []:
            hits = greedy(model, refilled(prompt, [p, *rest], neutral, rng, refills))
            mini.append(sum(h != target for h in hits) / refills)
    out["minimality"] = min(mini) if mini else None
    return out


def check_task(folder: Path, sample: int, refills: int, seed: int) -> dict:
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    thresholds = manifest["spec"]["verification"]
    model = AutoModelForCausalLM.from_pretrained(folder / "model").eval()
    tok = AutoTokenizer.from_pretrained(folder / "model")
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines() if line.strip()]
    cases = [c for c in cases if c["split"] == "test"]
    rng = random.Random(seed)
    picked = rng.sample(cases, min(sample, len(cases)))
    results, passed = [], 0
    for case in picked:
        assert tok.convert_ids_to_tokens(case["prompt_ids"]) == case["prompt_tokens"], case["id"]
        r = check_case(model, case, manifest["neutral_ids"], refills, rng)
        ok = (
            r["greedy"]
            and r["necessity"] >= thresholds["necessity"]
            and r["sufficiency"] >= thresholds["sufficiency"]
            and (r["minimality"] is None or r["minimality"] >= thresholds["minimality"])
        )
        passed += ok
        results.append(r)

    def mean(key: str) -> float | None:
        vals = [r[key] for r in results if r[key] is not None]
        return round(sum(vals) / len(vals), 3) if vals else None

    return {
        "task": folder.name,
        "sampled": len(picked),
        "pass_share": passed / max(1, len(picked)),
        "necessity": mean("necessity"),
        "sufficiency": mean("sufficiency"),
        "minimality": mean("minimality"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--sample", type=int, default=50)
    parser.add_argument("--refills", type=int, default=32)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--min-pass", type=float, default=0.9)
    args = parser.parse_args()
    torch.manual_seed(0)
    folders = sorted(p for p in args.root.iterdir() if (p / "MANIFEST.json").is_file())
    if not folders:
        print(f"no built tasks under {args.root}", file=sys.stderr)
        return 1
    print(f"{'task':<12} {'sampled':>7} {'pass':>6} {'necessity':>9} {'sufficiency':>11} {'minimality':>10}")
    bad = 0
    for folder in folders:
        r = check_task(folder, args.sample, args.refills, args.seed)
        print(
            f"{r['task']:<12} {r['sampled']:>7} {r['pass_share']:>6.0%} {r['necessity']!s:>9} "
            f"{r['sufficiency']!s:>11} {r['minimality']!s:>10}"
        )
        bad += r["pass_share"] < args.min_pass
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
