"""A tiny task instance built in seconds, for tests that need real artifacts but not a trained model.

A randomly initialised transformers model (GPT-2 or Llama) with a word-level tokenizer, random
prompts and arbitrary "causes", laid out exactly as ``halbench tasks build`` lays out a real
instance (``_models/<model>/`` and ``<task>/<model>/`` with manifests and hashes). Ground truth is
meaningless here: use it for mechanics (isolation, determinism, resuming, executors), never to
judge a method.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from halbench.atomic import atomic_write_json, canonical_hash
from halbench.tasks import artifacts
from halbench.tasks.registry import InstanceRef
from halbench.tasks.spec import ArchSpec
from halbench.tasks.tokenizer import build_tokenizer
from halbench.tasks.training import make_model
from halbench.tasks.world import SPECIALS


def make_tiny_instance(
    root: Path,
    arch: str = "llama",
    task: str = "tiny",
    model_name: str | None = None,
    cases: int = 12,
    dev: int = 4,
    length: int = 24,
    vocab: int = 60,
    seed: int = 0,
) -> InstanceRef:
    """Build ``root/_models/<model>/`` and ``root/<task>/<model>/``; returns the instance."""
    model_name = model_name or f"tiny-{arch}"
    rng = np.random.default_rng(seed)
    words = [f"w{i:03d}" for i in range(vocab)]
    tok = build_tokenizer([*SPECIALS, *words])
    torch.manual_seed(seed)
    model = make_model(ArchSpec(arch=arch, layers=2, width=32, heads=2, positions=64), tok)
    folder = root / artifacts.MODELS_DIR / model_name
    (folder / artifacts.MODEL_DIR).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder / artifacts.MODEL_DIR)
    tok.save_pretrained(folder / artifacts.MODEL_DIR)
    ids = tok.convert_tokens_to_ids(words)
    counts = [0] * len(SPECIALS) + [int(c) for c in rng.integers(1, 100, size=vocab)]
    atomic_write_json(folder / artifacts.UNIGRAM, {"counts": counts, "sequences": 1})
    atomic_write_json(folder / artifacts.WORLD, {"kind": "tiny", "pools": {"any": ids, "function": ids[:8]}})
    files = artifacts.hashed_files(folder, (artifacts.MODEL_DIR, artifacts.UNIGRAM, artifacts.WORLD))
    model_hash = artifacts.content_hash(files, "tiny")
    artifacts.write_manifest(
        folder,
        {"kind": "model", "name": model_name, "spec_hash": "tiny", "files": files, "content_hash": model_hash,
         "arch": arch, "parameters": sum(p.numel() for p in model.parameters()), "training": {"seconds": 0}},
    )  # fmt: skip
    bos, q = tok.convert_tokens_to_ids(["[BOS]", "[Q]"])
    records = []
    for i in range(cases + dev):
        prompt = [bos, *rng.choice(ids, size=length - 2).tolist(), q]
        editable = list(range(1, length - 1))
        cause = sorted(rng.choice(editable, size=int(rng.integers(1, 3)), replace=False).tolist())
        split = "dev" if i >= cases else "test"
        records.append(
            {"id": f"{task}-{model_name}-{split}-{i:04d}", "split": split, "family": "single", "model": model_name,
             "mechanisms": [f"m{i % 3}"], "prompt_ids": prompt, "prompt_tokens": tok.convert_ids_to_tokens(prompt),
             "target_ids": [int(rng.choice(ids))], "target_tokens": None, "faithful_ids": None,
             "faithful_tokens": None, "causes": [cause], "editable": editable, "decoys": [], "entity": [],
             "slots": [None, *["any"] * (length - 2), None], "verify_seed": [seed, i],
             "verification": {"p_target": 0.5, "p_faithful": None, "greedy_is_target": True}}
        )  # fmt: skip
    instance = root / task / model_name
    instance.mkdir(parents=True, exist_ok=True)
    artifacts.write_cases(instance / artifacts.CASES, records)
    files = artifacts.hashed_files(instance, (artifacts.CASES,))
    spec_hash = canonical_hash({"tiny": task})
    artifacts.write_manifest(
        instance,
        {"kind": "instance", "task": task, "version": 1, "family": "single", "quick": True,
         "model": {"name": model_name, "content_hash": model_hash, "arch": arch, "parameters": 0},
         "content_hash": artifacts.content_hash(files, spec_hash, model_hash), "spec_hash": spec_hash,
         "files": files, "counts": {"test": cases, "dev": dev}, "mechanisms": {},
         "prompt_length": {"min": length, "max": length, "mean": length}},
    )  # fmt: skip
    return InstanceRef(task, model_name, instance)
