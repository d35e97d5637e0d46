"""Staged verification (mining's) against running every check, on the same hallucinating candidates.

Mining verifies every hallucinating candidate, and most fail (2-10% pass on multi-token tasks), so
verification is nearly all of a build's mining time. Staged, the checks run in ``verify.STAGES`` order and
a candidate's later rows are skipped once one check fails. This draws an instance's first test candidates
as mining does, keeps the hallucinating ones, verifies them both ways in the same run, and prints the time
of each, the ratio, and whether the verdicts agree: the same candidates must pass, with the same rates.

Usage: python benchmarks/staged_verify.py [--candidates 512] [--instance task/model ...]
"""

from __future__ import annotations

import time

import click
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from halbench.runtime import configure_threads
from halbench.tasks import artifacts
from halbench.tasks.build import load_refills
from halbench.tasks.forward import last_logits
from halbench.tasks.mining import draw_candidate
from halbench.tasks.registry import resolve_instances, resolve_model
from halbench.tasks.spec import TaskSpec
from halbench.tasks.verify import verify
from halbench.tasks.world import build_world

INSTANCES = ("conjunctive/grammar-llama-c", "partial/grammar-gpt2-f", "decoy/grammar-gpt2-g", "single/grammar-llama-b")


def hallucinating(name: str, n: int):
    """The instance's model and the hallucinating ones of its first ``n`` test candidates."""
    ref = resolve_instances(name)[0]
    spec = TaskSpec.model_validate(ref.manifest()["spec"])
    recipe = resolve_model(ref.model).recipe()
    world = build_world(recipe.world)
    folder = ref.model_folder
    tok = AutoTokenizer.from_pretrained(folder / artifacts.MODEL_DIR)
    model = AutoModelForCausalLM.from_pretrained(folder / artifacts.MODEL_DIR).eval()
    drawn = [d for i in range(n) if (d := draw_candidate(spec, recipe, world, tok, i, "test"))]
    with torch.inference_mode():
        greedy = last_logits(model, [d.candidate.prompt_ids for d in drawn]).argmax(-1).tolist()
    cands = [d.candidate for d, g in zip(drawn, greedy, strict=True) if g == d.candidate.target_id]
    return spec, model, load_refills(folder), cands


def measure(name: str, n: int) -> str:
    spec, model, refills, cands = hallucinating(name, n)
    thresholds = {"neutral": spec.verification.neutral, "unigram": spec.verification.unigram}
    runs = {}
    for staged in (False, True):
        start = time.perf_counter()
        with torch.inference_mode():
            verdicts = verify(model, cands, refills, thresholds, spec.verification.refills, staged=staged)
        runs[staged] = (time.perf_counter() - start, verdicts)
    (full_s, full), (staged_s, fast) = runs[False], runs[True]
    same = all(a.passed == b.passed and (not a.passed or a.rates == b.rates) for a, b in zip(full, fast, strict=True))
    passed = sum(v.passed for v in full)
    return (
        f"{name:<28} {len(cands):>6} {passed:>6} {full_s:>9.1f} {staged_s:>9.1f} {full_s / staged_s:>6.2f}x "
        f"{'yes' if same else 'NO'}"
    )


@click.command()
@click.option("--candidates", default=512, show_default=True, help="test candidates drawn per instance")
@click.option("--instance", "instances", multiple=True, help="task/model (repeatable; default: four of the suite)")
def main(candidates: int, instances: tuple[str, ...]) -> None:
    click.echo(f"torch threads: {configure_threads()}")
    click.echo(f"{'instance':<28} {'halluc':>6} {'pass':>6} {'full s':>9} {'staged s':>9} {'ratio':>7} same")
    for name in instances or INSTANCES:
        click.echo(measure(name, candidates))


if __name__ == "__main__":
    main()
