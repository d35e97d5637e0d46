#!/usr/bin/env python
"""Demo: trace one committed ``natural`` hallucination with ``halbench trace``, then show the planted cause.

``halbench trace`` sees only the model folder, the prompt text and the hallucinated word (the setting of
a practitioner with their own model); this script knows the verified ground truth and prints it after.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECIALS = {"[BOS]", "[EOS]", "[PAD]", "[UNK]"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", default="natural/natural-gpt2-a")
    parser.add_argument("--case", type=int, default=0, help="index among the instance's test cases")
    parser.add_argument("--budget", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path("build/demo/trace.html"))
    args = parser.parse_args()
    task, model = args.instance.split("/")
    lines = (ROOT / "tasks" / task / model / "cases.jsonl").read_text().splitlines()
    case = [c for c in map(json.loads, lines) if c["split"] == "test"][args.case]
    tokens = case["prompt_tokens"]
    prompt = " ".join(t for t in tokens if t not in SPECIALS)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "halbench", "trace", "--model", str(ROOT / "tasks" / "_models" / model),
               "--prompt", prompt, "--hallucination", case["target_tokens"][0], "--budget", str(args.budget),
               "--no-progress", "--out", str(args.out)]  # fmt: skip
    print("$ halbench trace --model", model, f"--prompt {prompt!r} --hallucination", case["target_tokens"][0])
    done = subprocess.run(command, check=False)
    causes = [" ".join(tokens[p] for p in alt) for alt in case["causes"]]
    decoys = [tokens[p] for p in case.get("decoys") or []]
    print(f"\nground truth ({case['id']}): cause {causes}; the true answer is {case['faithful_tokens'][0]!r};")
    print(f"decoy words that do nothing here: {decoys}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
