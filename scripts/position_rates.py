#!/usr/bin/env python
"""Where the cause sits and how often the model hallucinates from there: the source of the position prior.

`scripts/position_probe.py` finds that a prior fitted on dev causes' positions beats random on a few
instances. Layout draws a cause's slots uniformly, so the regularity comes from selection: this script
draws a split's mining candidates again (the same seeded draws mining made), runs the model once on each and
prints the greedy hallucination rate by where the cause sits (fifths of the editable positions, by the mean
rank of the cause's words). A flat row means the admitted cases inherit no position from the model; a slope
(say early causes hallucinate more often) is what a position prior learns. Defaults to ``dev``: what a
remedy (slots drawn against the slope) may be tuned on.

    python scripts/position_rates.py --task decoy --model grammar-gpt2-g
"""

from __future__ import annotations

import click
import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from halbench.tasks.artifacts import MODEL_DIR
from halbench.tasks.forward import last_logits
from halbench.tasks.mining import draw_candidate
from halbench.tasks.registry import resolve, resolve_model
from halbench.tasks.world import build_world

FIFTHS = 5


def cause_rank(editable: list[int], cause: list[int]) -> float:
    """Mean rank of the cause's positions among the editable ones, from 0 (first) to 1 (last)."""
    last = max(1, len(editable) - 1)
    return float(np.mean([editable.index(p) / last for p in cause]))


def rates_by_fifth(ranks: np.ndarray, hallucinated: np.ndarray) -> tuple[list[float], list[int]]:
    """Hallucination rate and candidate count in each fifth of ``ranks`` (nan where a fifth is empty)."""
    bins = np.minimum((np.asarray(ranks) * FIFTHS).astype(int), FIFTHS - 1)
    hallucinated = np.asarray(hallucinated, dtype=float)
    counts = np.bincount(bins, minlength=FIFTHS)
    rates = [float(hallucinated[bins == b].mean()) if counts[b] else float("nan") for b in range(FIFTHS)]
    return rates, counts.tolist()


@click.command()
@click.option("--task", required=True)
@click.option("--model", "model_name", required=True)
@click.option("--split", type=click.Choice(["dev", "test"]), default="dev", show_default=True)
@click.option("--candidates", type=click.IntRange(min=10), default=1500, show_default=True)
def main(task: str, model_name: str, split: str, candidates: int) -> None:
    spec, ref = resolve(task).spec(), resolve_model(model_name)
    recipe = ref.recipe()
    tok = AutoTokenizer.from_pretrained(ref.folder / MODEL_DIR)
    model = AutoModelForCausalLM.from_pretrained(ref.folder / MODEL_DIR).eval()
    world = build_world(recipe.world)
    drawn = [d for i in range(candidates) if (d := draw_candidate(spec, recipe, world, tok, i, split))]
    with torch.no_grad():
        greedy = last_logits(model, [d.candidate.prompt_ids for d in drawn], spec.mining.batch_rows).argmax(-1)
    ranks = np.array([cause_rank(d.candidate.editable, d.candidate.causes[0]) for d in drawn])
    hits = np.array([g == d.candidate.target_id for d, g in zip(drawn, greedy.tolist(), strict=True)])
    rates, counts = rates_by_fifth(ranks, hits)
    click.echo(f"{task}/{model_name} ({split}, {len(drawn)} candidates): hallucination rate by fifth of the prompt")
    click.echo("| fifth | 1 | 2 | 3 | 4 | 5 |\n|---|---|---|---|---|---|")
    click.echo("| rate | " + " | ".join(f"{r:.2f}" for r in rates) + " |")
    click.echo("| candidates | " + " | ".join(str(c) for c in counts) + " |")


if __name__ == "__main__":
    main()
