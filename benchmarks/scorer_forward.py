"""Scorer throughput against the plain transformers forward on the same rows, measured in the same run.

The reference is what a method would write without the Scorer: the model loaded as saved and a full
forward whose LM head runs at every position, at its best batch size (tried: 16, 64, 256, 1024). The
Scorer loads the same weights with fused kernels where the architecture allows and SDPA, pads every
call to fixed-shape chunks (the price of batch-independent numbers) and applies the head only where the
target is read. Prints rows per second for both, the ratio, and the largest log-probability difference
(they must agree to 1e-4 in float32). Runs on the CPU, and on the GPU too when one is present.

Usage: python benchmarks/scorer_forward.py [--rows 1024] [--repeats 3] [--instance task/model ...]
"""

from __future__ import annotations

import time

import click
import numpy as np
import torch
from transformers import AutoModelForCausalLM

from halbench.runtime import configure_threads
from halbench.tasks.bundle import load_bundle
from halbench.tasks.registry import resolve_instances

INSTANCES = ("single/grammar-gpt2-a", "ordered/grammar-llama-b", "decoy/grammar-llama-c", "natural/natural-gpt2-c")
BATCHES = (16, 64, 256, 1024)


def reference_logprob(model: torch.nn.Module, rows: torch.Tensor, target: int, batch: int) -> torch.Tensor:
    out = []
    with torch.inference_mode():
        for chunk in rows.split(batch):
            logits = model(input_ids=chunk).logits[:, -1].float().log_softmax(-1)
            out.append(logits[:, target].cpu())
    return torch.cat(out).double()


def best_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(name: str, device: str, rows: int, repeats: int) -> str:
    ref = resolve_instances(name)[0]
    bundle = load_bundle(ref, device=device)
    record = bundle.cases("dev")[0]
    scorer = bundle.scorer(record, budget=None)
    perturbed, _ = scorer.perturb(np.random.default_rng(0), rows, 0.5)
    dtype = next(bundle.model.parameters()).dtype
    plain = AutoModelForCausalLM.from_pretrained(ref.model_folder / "model", dtype=dtype).to(device).eval()
    target = int(record["target_ids"][0])
    ids = torch.as_tensor(perturbed).to(device)
    timings = {b: best_time(lambda b=b: reference_logprob(plain, ids, target, b), repeats) for b in BATCHES}
    batch, plain_s = min(timings.items(), key=lambda kv: kv[1])
    fast_s = best_time(lambda: bundle.scorer(record, budget=None).target_logprob(perturbed), repeats)
    diff = float(np.abs(reference_logprob(plain, ids, target, batch).numpy() - scorer.target_logprob(perturbed)).max())
    tol = 1e-4 if dtype == torch.float32 else 5e-2
    verdict = "" if diff <= tol else "  DISAGREES"
    return (
        f"{name:<26} {device:<5} {perturbed.shape[1]:>4} {rows / plain_s:>15.0f} (b={batch:<4}) "
        f"{rows / fast_s:>13.0f} {plain_s / fast_s:>6.2f}x {diff:>10.1e}{verdict}"
    )


@click.command()
@click.option("--rows", default=1024, show_default=True)
@click.option("--repeats", default=3, show_default=True)
@click.option("--instance", "instances", multiple=True, help="task/model (repeatable; default: four of the suite)")
def main(rows: int, repeats: int, instances: tuple[str, ...]) -> None:
    click.echo(f"torch threads: {configure_threads()}")
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    head = f"{'plain rows/s':>15} {'':>8} {'scorer rows/s':>13} {'ratio':>7} {'max|diff|':>10}"
    click.echo(f"{'instance':<26} {'dev':<5} {'L':>4} {head}")
    for device in devices:
        for name in instances or INSTANCES:
            click.echo(measure(name, device, rows, repeats))


if __name__ == "__main__":
    main()
