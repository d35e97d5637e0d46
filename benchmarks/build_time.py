"""What a whole-suite build costs on this machine: each model's training, estimated from a timed run of its
first steps, beside the seconds its committed manifest records, and each instance's recorded mining.

A full build takes hours, so training is sampled: the world and corpus are generated (timed in full) and
``--steps`` optimiser steps are run with the recipe's batch size and threads (the first 5 are warm-up and
not counted); the rest of the recipe's steps are assumed to cost the same. Recorded training seconds were
often measured with several builds sharing the cores, so the estimate is the fairer figure for one build
alone. Mining seconds are read from the instance manifests (``--mined ROOT`` reads a rebuild's instead).

Usage: python benchmarks/build_time.py [--steps 40] [--model NAME ...] [--mined /tmp/rebuild]
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import torch

from halbench.tasks.corpus import training_corpus
from halbench.tasks.registry import model_names, resolve_model, tasks_root
from halbench.tasks.tokenizer import build_tokenizer
from halbench.tasks.training import start_run
from halbench.tasks.world import build_world

WARMUP = 5


def training_estimate(name: str, steps: int) -> tuple[float, float, int, float]:
    """(corpus seconds, estimated training seconds, total steps, recorded training seconds) for a model."""
    recipe = resolve_model(name).recipe()
    start = time.perf_counter()
    world = build_world(recipe.world)
    tok = build_tokenizer(world.vocab())
    corpus, _ = training_corpus(world, recipe.world)
    corpus_s = time.perf_counter() - start
    spec = recipe.training
    torch.set_num_threads(spec.threads)
    run = start_run(corpus, tok, recipe.model, spec)
    batches = run.epoch(spec.batch_size)[: steps + WARMUP]
    for k, idx in enumerate(batches):
        if k == WARMUP:
            timed = time.perf_counter()
        run.step(idx)
    per_step = (time.perf_counter() - timed) / (len(batches) - WARMUP)
    recorded = json.loads((tasks_root() / "_models" / name / "MANIFEST.json").read_text())["training"]["seconds"]
    return corpus_s, per_step * run.total, run.total, recorded


def mining_seconds(root: Path) -> dict[str, float]:
    out = {}
    for path in sorted(root.glob("*/*/MANIFEST.json")):
        if not path.parent.parent.name.startswith("_"):
            out[f"{path.parent.parent.name}/{path.parent.name}"] = json.loads(path.read_text())["mining"]["seconds"]
    return out


@click.command()
@click.option("--steps", default=40, show_default=True, help="timed training steps per model")
@click.option("--model", "models", multiple=True, help="only these models (default: every committed one)")
@click.option("--mined", type=click.Path(path_type=Path, file_okay=False), help="a rebuild's root to read mining from")
def main(steps: int, models: tuple[str, ...], mined: Path | None) -> None:
    click.echo(f"{'model':<18} {'corpus s':>9} {'steps':>6} {'est. train s':>13} {'recorded s':>11}")
    est_total = rec_total = 0.0
    for name in models or model_names():
        corpus_s, est, total, recorded = training_estimate(name, steps)
        est_total += corpus_s + est
        rec_total += recorded
        click.echo(f"{name:<18} {corpus_s:>9.1f} {total:>6} {est:>13.0f} {recorded:>11.0f}")
    click.echo(f"{'training':<18} {'':>9} {'':>6} {est_total:>13.0f} {rec_total:>11.0f}")
    committed = mining_seconds(tasks_root())
    rebuilt = mining_seconds(mined) if mined else {}
    for name, seconds in committed.items():
        if name in rebuilt:
            click.echo(f"mining {name:<32} committed {seconds:>7.0f} s, rebuilt {rebuilt[name]:>7.0f} s")
    click.echo(f"mining, committed manifests: {sum(committed.values()):.0f} s over {len(committed)} instances")
    hours = (est_total + sum(committed.values())) / 3600
    click.echo(f"whole suite (estimated training + committed mining): {hours:.2f} h")


if __name__ == "__main__":
    main()
