#!/usr/bin/env python
"""Print a Markdown table of every built task from its MANIFEST.json (for notes and docs)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "tasks"


def main() -> None:
    print(
        "| task | prompt length | test/dev cases | model params | training s | candidates | hallucinating "
        "| verified (pass rate) | main failed checks |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(ROOT.glob("*/MANIFEST.json")):
        m = json.loads(path.read_text())
        length, mining = m["prompt_length"], m["mining"]
        span = f"{length['min']}" if length["min"] == length["max"] else f"{length['min']}-{length['max']}"
        fails = ", ".join(f"{k} {v}" for k, v in sorted(mining["failed_checks"].items(), key=lambda kv: -kv[1]))
        print(
            f"| {m['task']} | {span} | {m['counts']['test']}/{m['counts']['dev']} | {m['model']['parameters']:,} "
            f"| {m['training']['seconds']} | {mining['candidates_drawn']} | {mining['hallucinating']} "
            f"| {mining['verified']} ({mining['verification_pass_rate']:.0%}) | {fails or '-'} |"
        )


if __name__ == "__main__":
    main()
