#!/usr/bin/env python
"""Markdown tables of the built suite from its manifests: models, then every task instance (for notes and docs)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "tasks"


def span(length: dict) -> str:
    return f"{length['min']}" if length["min"] == length["max"] else f"{length['min']}-{length['max']}"


def models() -> None:
    head = ["model", "arch", "layers x width", "parameters", "corpus sequences", "training s"]
    print("| " + " | ".join([*head, "controls (single/pair/triple on rare, part alone)"]) + " |")
    print("|---|---|---|---|---|---|---|")
    for path in sorted(ROOT.glob("_models/*/MANIFEST.json")):
        m = json.loads(path.read_text())
        c, spec = m["training"]["controls"], m["spec"]["model"]
        rates = "/".join(f"{c.get(f'{k}_rate_on_rare', 0) or 0:.2f}" for k in ("single", "pair", "triple"))
        part = c.get("pair_part_alone_rate") or 0
        print(
            f"| {m['name']} | {m['arch']} | {spec['layers']} x {spec['width']} | {m['parameters']:,} "
            f"| {m['training']['sequences']:,} | {m['training']['seconds']} | {rates}, {part:.2f} |"
        )


def instances() -> None:
    head = ["instance", "prompt length", "test/dev cases", "mechanisms", "hallucinating / drawn"]
    print("| " + " | ".join([*head, "verified (pass rate)", "main failed checks"]) + " |")
    print("|---|---|---|---|---|---|---|")
    for path in sorted(ROOT.glob("*/*/MANIFEST.json")):
        if path.parent.parent.name.startswith("_"):
            continue
        m = json.loads(path.read_text())
        mining = m["mining"]
        top = ", ".join(f"{k} {v}" for k, v in sorted(mining["failed_checks"].items(), key=lambda kv: -kv[1])[:3])
        counts = f"{m['counts']['test']}/{m['counts']['dev']}"
        print(
            f"| {m['task']}/{m['model']['name']} | {span(m['prompt_length'])} | {counts} | {len(m['mechanisms'])} "
            f"| {mining['hallucinating']} / {mining['candidates_drawn']} "
            f"| {mining['verified']} ({mining['verification_pass_rate']:.0%}) | {top or '-'} |"
        )


if __name__ == "__main__":
    models()
    print()
    instances()
