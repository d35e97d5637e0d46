"""Scorer throughput against the plain transformers forward, measured in the same run.

The reference is what a method would write without the Scorer: the task model loaded as saved
(GPT-2's five-op ``gelu_new``, eager attention) and a full forward whose LM head runs at every
position. The Scorer loads the same weights with the fused tanh-GELU kernel and SDPA, and applies
the head only where the target is read. Prints rows per second for both, the ratio, and the
largest log-probability difference (the two must agree to 1e-4).

Usage: python benchmarks/scorer_forward.py [--rows 1024] [--repeats 3]
"""

from __future__ import annotations

import time

import click
import numpy as np
import torch
from transformers import AutoModelForCausalLM

from halbench.tasks.bundle import load_bundle
from halbench.tasks.registry import resolve

TASKS = ("single", "conjunctive", "decoy")  # prompt lengths 16, 24, 48


def reference_logprob(model: torch.nn.Module, rows: np.ndarray, target: int, batch: int = 256) -> np.ndarray:
    out = []
    with torch.inference_mode():
        for chunk in torch.as_tensor(rows).split(batch):
            logits = model(input_ids=chunk).logits[:, -1].float().log_softmax(-1)
            out.append(logits[:, target])
    return torch.cat(out).double().numpy()


def best_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(name: str, rows: int, repeats: int) -> str:
    folder = resolve(name).artifacts
    bundle = load_bundle(folder, device="cpu")
    record = bundle.cases("dev")[0]
    scorer = bundle.scorer(record, budget=None)
    perturbed, _ = scorer.perturb(np.random.default_rng(0), rows, 0.5)
    plain = AutoModelForCausalLM.from_pretrained(folder / "model", attn_implementation="eager").eval()
    target = int(record["target_ids"][0])
    ref = best_time(lambda: reference_logprob(plain, perturbed, target), repeats)
    fast = best_time(lambda: bundle.scorer(record, budget=None).target_logprob(perturbed), repeats)
    diff = np.abs(reference_logprob(plain, perturbed, target) - scorer.target_logprob(perturbed)).max()
    if diff > 1e-4:
        raise SystemExit(f"{name}: the Scorer disagrees with the reference by {diff:.2e}")
    line = f"{name:<12} {perturbed.shape[1]:>3} {rows / ref:>17.0f} {rows / fast:>14.0f} {ref / fast:>5.2f}x"
    return f"{line} {diff:>11.1e}"


@click.command()
@click.option("--rows", default=1024, show_default=True)
@click.option("--repeats", default=3, show_default=True)
def main(rows: int, repeats: int) -> None:
    click.echo(f"torch threads: {torch.get_num_threads()}")
    click.echo(f"{'task':<12} {'L':>3} {'reference rows/s':>17} {'scorer rows/s':>14} {'ratio':>6} {'max |diff|':>11}")
    for name in TASKS:
        click.echo(measure(name, rows, repeats))


if __name__ == "__main__":
    main()
