"""Building a task: world -> corpus -> model -> mined, verified cases -> artifacts.

Tasks that share a world, model and training settings share one trained model:
it is trained once and cached under the build cache (keyed by the hash of those
settings), then copied into each task's ``model/`` so every task folder stands
alone.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from halbench.atomic import atomic_write_json, canonical_hash
from halbench.tasks import artifacts
from halbench.tasks.controls import measure_controls
from halbench.tasks.corpus import training_corpus
from halbench.tasks.mining import Drawn, mine
from halbench.tasks.spec import TaskSpec
from halbench.tasks.tokenizer import build_tokenizer
from halbench.tasks.training import train_model
from halbench.tasks.verify import Verdict
from halbench.tasks.world import World, build_world

TRAINING_RECORD = "training.json"


class BuildError(RuntimeError):
    """A build could not produce the cases its task asks for."""


def model_key(spec: TaskSpec) -> str:
    """Tasks with equal keys train byte-identical models and share one."""
    return canonical_hash(
        {"world": spec.world.model_dump(), "model": spec.model.model_dump(), "training": spec.training.model_dump()}
    )[:16]


def spec_hash(spec: TaskSpec) -> str:
    return canonical_hash(spec.model_dump(exclude={"quick"}))


def trained_model(spec: TaskSpec, world: World, cache: Path, progress: bool) -> tuple[Path, dict]:
    """Path of the trained model for ``spec`` (training it if not cached) and its training record."""
    folder = cache / "models" / model_key(spec)
    record = folder / TRAINING_RECORD
    if record.exists():
        return folder, json.loads(record.read_text())
    tok = build_tokenizer(world.vocab())
    corpus = training_corpus(world, spec.world)
    model, report = train_model(corpus, tok, spec.model, spec.training, progress=progress)
    controls = measure_controls(spec, world, tok, model)
    staging = Path(tempfile.mkdtemp(prefix=".train-", dir=cache))
    model.save_pretrained(staging)
    tok.save_pretrained(staging)
    info = {
        **asdict(report),
        "seconds": round(report.seconds, 1),
        "final_loss": round(report.final_loss, 4),
        "sequences": len(corpus),
        "controls": controls,
    }
    atomic_write_json(staging / TRAINING_RECORD, info)
    folder.parent.mkdir(parents=True, exist_ok=True)
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
    return folder, info


def case_record(spec: TaskSpec, drawn: Drawn, verdict: Verdict, case_id: str, split: str) -> dict:
    cand = drawn.candidate
    return {
        "id": case_id,
        "split": split,
        "family": spec.family,
        "mechanisms": [m.name for m in drawn.mechanisms],
        "prompt_ids": cand.prompt_ids,
        "prompt_tokens": drawn.prompt.tokens,
        "target_ids": [cand.target_id],
        "target_tokens": [drawn.target],
        "faithful_ids": None if cand.faithful_id is None else [cand.faithful_id],
        "faithful_tokens": None if drawn.faithful is None else [drawn.faithful],
        "causes": cand.causes,
        "editable": cand.editable,
        "decoys": cand.decoys,
        "entity": cand.entity,
        "verification": verdict.as_record(),
        "verify_seed": list(cand.seed),
    }


def assign_splits(spec: TaskSpec, n: int) -> list[str]:
    rng = np.random.default_rng([spec.seed, 5])
    dev = set(rng.permutation(n)[: spec.cases.dev].tolist())
    return ["dev" if i in dev else "test" for i in range(n)]


def build_task(spec: TaskSpec, out: Path, cache: Path, quick: bool = False, progress: bool = True) -> dict:
    """Build ``spec`` into ``out`` (atomically replacing earlier artifacts) and return its manifest."""
    cache.mkdir(parents=True, exist_ok=True)
    world = build_world(spec.world)
    model_dir, training = trained_model(spec, world, cache, progress)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    neutral_ids = sorted(tok.convert_tokens_to_ids(world.neutral))
    started = time.perf_counter()
    with torch.no_grad():
        accepted, stats = mine(spec, world, tok, model, neutral_ids, progress=progress)
    want = spec.cases.test + spec.cases.dev
    if len(accepted) < want:
        raise BuildError(
            f"task {spec.name}: only {len(accepted)} of {want} cases passed verification after "
            f"{stats.drawn} candidates ({json.dumps(stats.as_record())}); raise mining.max_candidates "
            f"or strengthen the planted association"
        )
    splits = assign_splits(spec, len(accepted))
    records = [
        case_record(spec, d, v, f"{spec.name}-{i:04d}", s)
        for i, ((d, v), s) in enumerate(zip(accepted, splits, strict=True))
    ]
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        shutil.copytree(model_dir, staging / artifacts.MODEL_DIR, ignore=shutil.ignore_patterns(TRAINING_RECORD))
        artifacts.write_cases(staging / artifacts.CASES, records)
        manifest = _manifest(spec, staging, neutral_ids, training, stats, records, quick)
        manifest["mining"]["seconds"] = round(time.perf_counter() - started, 1)
        artifacts.write_manifest(staging, manifest)
        artifacts.publish(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _manifest(spec, staging, neutral_ids, training, stats, records, quick) -> dict:
    files = artifacts.hashed_files(staging)
    s_hash = spec_hash(spec)
    lengths = [len(r["prompt_ids"]) for r in records]
    return {
        "task": spec.name,
        "version": spec.version,
        "family": spec.family,
        "quick": quick,
        "content_hash": artifacts.content_hash(files, s_hash, neutral_ids),
        "spec_hash": s_hash,
        "spec": spec.model_dump(exclude={"quick"}),
        "files": files,
        "neutral_ids": neutral_ids,
        "seeds": {"task": spec.seed, "world": spec.world.seed, "training": spec.training.seed},
        "model": {
            "key": model_key(spec),
            "parameters": training["parameters"],
            "size_bytes": (staging / artifacts.MODEL_DIR / "model.safetensors").stat().st_size,
        },
        "training": training,
        "mining": stats.as_record(),
        "counts": {
            "test": sum(r["split"] == "test" for r in records),
            "dev": sum(r["split"] == "dev" for r in records),
        },
        "prompt_length": {"min": min(lengths), "max": max(lengths), "mean": round(float(np.mean(lengths)), 2)},
        "versions": artifacts.library_versions(),
    }
