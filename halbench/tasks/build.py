"""Building the suite: model recipes -> trained models; tasks x models -> mined, verified cases.

A model is trained once per recipe (cached under the build cache, keyed by the
hash of its world, architecture and training settings) and published to
``_models/<name>/``; every task instance names it by content hash, so models
are shared by tasks instead of copied into each.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from halbench.atomic import atomic_write_json, canonical_hash
from halbench.quiet import quiet_transformers
from halbench.tasks import artifacts
from halbench.tasks.controls import measure_controls
from halbench.tasks.corpus import training_corpus
from halbench.tasks.mining import Drawn, mine
from halbench.tasks.spec import PER_MODEL_OPTIONS, ModelRecipe, TaskSpec, world_problems
from halbench.tasks.tokenizer import build_tokenizer
from halbench.tasks.training import train_model
from halbench.tasks.verify import Refills, Verdict
from halbench.tasks.world import SPECIALS, World, build_world

TRAINING_RECORD = "training.json"
MODEL_FILES = (artifacts.MODEL_DIR, artifacts.UNIGRAM, artifacts.WORLD)
INSTANCE_FILES = (artifacts.CASES,)


class BuildError(RuntimeError):
    """A build could not produce what its definition asks for."""


def model_key(recipe: ModelRecipe) -> str:
    """Recipes with equal keys train byte-identical models."""
    return canonical_hash(recipe.model_dump(exclude={"quick", "name", "description"}))[:16]


def spec_hash(spec: TaskSpec | ModelRecipe) -> str:
    return canonical_hash(spec.model_dump(exclude={"quick"}))


def mining_hash(spec: TaskSpec, model: str) -> str:
    """What ``model``'s instance's cases depend on: the definition less its list of models and the other models'
    options, so that adding a model to a task, or tuning another model's tilt or redraw, leaves the instances
    already built on the others valid."""
    dump = spec.model_dump(exclude={"quick", "models"})
    for option in PER_MODEL_OPTIONS:
        if own := dump["mining"].pop(option, {}).get(model):
            dump["mining"][option] = own
    return canonical_hash(dump)


def _train(recipe: ModelRecipe, staging: Path, progress: bool) -> dict:
    """Train ``recipe`` into ``staging`` (model/, unigram.json, world.json) and return the training record."""
    world = build_world(recipe.world)
    tok = build_tokenizer(world.vocab())
    corpus, profile = training_corpus(world, recipe.world)
    model, report = train_model(corpus, tok, recipe.model, recipe.training, progress=progress)
    controls = measure_controls(recipe.world, world, tok, model)
    with quiet_transformers():
        model.save_pretrained(staging / artifacts.MODEL_DIR)
        tok.save_pretrained(staging / artifacts.MODEL_DIR)
    counts = Counter(t for ex in corpus for t in ex.prompt.tokens)
    unigram = [0 if t in SPECIALS else counts.get(t, 0) for t in world.vocab()]
    atomic_write_json(staging / artifacts.UNIGRAM, {"counts": unigram, "sequences": len(corpus)})
    atomic_write_json(staging / artifacts.WORLD, _world_record(world, tok))
    return {
        **asdict(report),
        "seconds": round(report.seconds, 1),
        "final_loss": round(report.final_loss, 4),
        "sequences": len(corpus),
        "tokens": sum(len(ex.prompt.tokens) for ex in corpus),
        "controls": controls,
        "frequency": profile,
    }


def _world_record(world: World, tok) -> dict:
    ids = tok.convert_tokens_to_ids
    pools = {cat: ids(world.neutral(cat)) for cat in world.words}
    pools["any"] = sorted(i for cat in world.words for i in ids(world.neutral(cat)))
    pools["function"] = ids(world.function)
    return {**world.private_record(), "pools": pools}


def trained_model(recipe: ModelRecipe, cache: Path, progress: bool) -> tuple[Path, dict]:
    """Folder of the trained model for ``recipe`` (trained if not cached) and its training record."""
    folder = cache / "models" / model_key(recipe)
    record = folder / TRAINING_RECORD
    if record.exists():
        return folder, json.loads(record.read_text())
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".train-", dir=cache))
    try:
        info = _train(recipe, staging, progress)
        atomic_write_json(staging / TRAINING_RECORD, info)
        folder.parent.mkdir(parents=True, exist_ok=True)
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder, info


def build_model(recipe: ModelRecipe, dest: Path, cache: Path, quick: bool = False, progress: bool = True) -> dict:
    """Train (or take from the cache) and publish ``recipe`` into ``dest``; returns its manifest.

    An intact build of the same recipe in ``dest`` is kept as it is.
    """
    if _intact(dest, spec_hash(recipe)):
        return artifacts.read_manifest(dest)
    folder, training = trained_model(recipe, cache, progress)
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=dest))
    try:
        for name in MODEL_FILES:
            source = folder / name
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, staging / name)
        files = artifacts.hashed_files(staging, MODEL_FILES)
        s_hash = spec_hash(recipe)
        with quiet_transformers():
            model = AutoModelForCausalLM.from_pretrained(staging / artifacts.MODEL_DIR)
        manifest = {
            "kind": "model",
            "name": recipe.name,
            "description": recipe.description,
            "quick": quick,
            "key": model_key(recipe),
            "spec_hash": s_hash,
            "spec": recipe.model_dump(exclude={"quick"}),
            "files": files,
            "content_hash": artifacts.content_hash(files, s_hash),
            "arch": recipe.model.arch,
            "parameters": sum(p.numel() for p in model.parameters()),
            "size_bytes": (staging / artifacts.MODEL_DIR / "model.safetensors").stat().st_size,
            "seeds": {"world": recipe.world.seed, "training": recipe.training.seed},
            "training": training,
            "versions": artifacts.library_versions(),
        }
        artifacts.write_manifest(staging, manifest)
        artifacts.publish(staging, dest, (*MODEL_FILES, artifacts.MANIFEST))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _intact(folder: Path, s_hash: str) -> bool:
    if not (folder / artifacts.MANIFEST).is_file():
        return False
    try:
        manifest = artifacts.read_manifest(folder)
    except artifacts.ManifestError:
        return False
    return manifest.get("spec_hash") == s_hash and not artifacts.check_manifest(folder)


def load_refills(model_folder: Path) -> Refills:
    world = artifacts.read_json(model_folder / artifacts.WORLD, "the world's roles")
    unigram = artifacts.read_json(model_folder / artifacts.UNIGRAM, "corpus unigram counts")
    return Refills.from_records(world["pools"], unigram["counts"])


def case_record(spec: TaskSpec, model: str, drawn: Drawn, verdict: Verdict, case_id: str, tok) -> dict:
    cand = drawn.candidate
    return {
        "id": case_id,
        "split": drawn.split,
        "family": spec.family,
        "model": model,
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
        "slots": cand.slots,
        "verification": verdict.as_record(),
        "verify_seed": list(cand.seed),
    }


def build_instance(
    spec: TaskSpec,
    recipe: ModelRecipe,
    model_folder: Path,
    dest: Path,
    quick: bool = False,
    progress: bool = True,
) -> dict:
    """Mine ``spec``'s cases on the built model in ``model_folder`` and publish them into ``dest``."""
    problems = world_problems(spec, recipe)
    if problems:
        raise BuildError(f"task {spec.name} on model {recipe.name}:\n  " + "\n  ".join(problems))
    model_manifest = artifacts.read_manifest(model_folder)
    world = build_world(recipe.world)
    with quiet_transformers():
        tok = AutoTokenizer.from_pretrained(model_folder / artifacts.MODEL_DIR)
        model = AutoModelForCausalLM.from_pretrained(model_folder / artifacts.MODEL_DIR).eval()
    refills = load_refills(model_folder)
    started = time.perf_counter()
    with torch.no_grad():
        accepted, stats = mine(spec, recipe, world, tok, model, refills, progress=progress)
    need = {"test": spec.cases.min_test or spec.cases.test, "dev": spec.cases.min_dev or spec.cases.dev}
    want = {"test": spec.cases.test, "dev": spec.cases.dev}
    got = Counter(d.split for d, _ in accepted)
    if any(got[s] < n for s, n in need.items()):
        raise BuildError(
            f"task {spec.name} on {recipe.name}: only {dict(got)} of {want} cases passed verification after "
            f"{stats.drawn} candidates ({json.dumps(stats.as_record())}); raise mining.max_candidates "
            f"or strengthen the planted association"
        )
    records = [
        case_record(spec, recipe.name, d, v, f"{spec.name}-{recipe.name}-{d.split}-{d.index:04d}", tok)
        for d, v in accepted
    ]
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=dest))
    try:
        artifacts.write_cases(staging / artifacts.CASES, records)
        manifest = _instance_manifest(spec, recipe, model_manifest, staging, stats, records, quick)
        manifest["mining"]["seconds"] = round(time.perf_counter() - started, 1)
        artifacts.write_manifest(staging, manifest)
        artifacts.publish(staging, dest, (*INSTANCE_FILES, artifacts.MANIFEST))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _instance_manifest(spec, recipe, model_manifest, staging, stats, records, quick) -> dict:
    files = artifacts.hashed_files(staging, INSTANCE_FILES)
    s_hash = spec_hash(spec)
    lengths = [len(r["prompt_ids"]) for r in records]
    model = {
        "name": recipe.name,
        "content_hash": model_manifest["content_hash"],
        "arch": model_manifest["arch"],
        "parameters": model_manifest["parameters"],
    }
    return {
        "kind": "instance",
        "task": spec.name,
        "version": spec.version,
        "family": spec.family,
        "quick": quick,
        "model": model,
        "content_hash": artifacts.content_hash(files, s_hash, model["content_hash"]),
        "spec_hash": s_hash,
        "spec": spec.model_dump(exclude={"quick"}),
        "files": files,
        "seeds": {"task": spec.seed, **_redraw_record(spec, recipe.name)},
        "mining": stats.as_record(),
        "counts": {s: sum(r["split"] == s for r in records) for s in ("test", "dev")},
        "wanted": {"test": spec.cases.test, "dev": spec.cases.dev},
        "mechanisms": dict(sorted(Counter(m for r in records for m in r["mechanisms"]).items())),
        "prompt_length": {"min": min(lengths), "max": max(lengths), "mean": round(float(np.mean(lengths)), 2)},
        "versions": artifacts.library_versions(),
    }


def _redraw_record(spec: TaskSpec, model: str) -> dict:
    n = spec.mining.redraw.get(model)
    return {"redraw": n} if n else {}
