"""An external task's standard instance, derived from its sources at first use and stored beside them.

Why derive and store rather than compute on the fly: the sweep, ``tasks verify`` and every method take
a built instance (``cases.jsonl`` of token ids and a manifest pinning every file by sha256), and text
cases must be tokenized into one anyway. So the first use writes, under ``<task>/.halbench/`` (or, when
the task folder is read-only, under the halbench cache):

- ``model/``: a model record: ``MANIFEST.json``, ``model`` (a relative symlink to the checkpoint, never a
  copy: checkpoints are large) and ``unigram.json`` when the model ships one;
- ``instance/``: ``cases.jsonl`` (the cases as token records) and ``MANIFEST.json`` (kind instance,
  ``model.path`` pointing at the record), with the fingerprint of the sources it came from.

Nothing the user wrote is ever rewritten: only this derived folder is, which git is told to ignore.
When a source changes (task.yaml, the cases, the checkpoint's files) the instance is derived again, and
its content hash changes with the content, so the sweep refuses to mix records computed on the old one.
Integrity is still checked where it always is: every evaluation re-hashes every file it loads.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from halbench.atomic import atomic_write_text, canonical_hash, sha256_file
from halbench.external.spec import ExternalTask, load_external
from halbench.external.textcases import TextCaseError, read_text_cases, text_record
from halbench.external.tokencases import read_token_cases
from halbench.quiet import quiet_transformers
from halbench.tasks.artifacts import (
    CASES,
    MANIFEST,
    MODEL_DIR,
    UNIGRAM,
    ManifestError,
    content_hash,
    hashed_files,
    publish,
    read_manifest,
    write_cases,
    write_manifest,
)
from halbench.tasks.registry import InstanceRef, cache_root

DERIVED = ".halbench"
INSTANCE = "instance"
RECORD = "model"
DERIVATION = 1  # bump when the derivation below changes what it writes


def external_instance(folder: Path) -> InstanceRef:
    """The instance of the external task in ``folder``, derived first if missing or out of date."""
    task = load_external(Path(folder))
    root = derived_root(task.folder)
    ref = InstanceRef(task.name, task.model_name, root / INSTANCE)
    sources = fingerprint(task)
    if not _current(ref, sources):
        derive(task, root, sources)
    return ref


def derived_root(folder: Path) -> Path:
    """``<task>/.halbench`` when the task folder is writable, else a folder of the halbench cache."""
    beside = Path(folder) / DERIVED
    writable = os.access(beside, os.W_OK) if beside.is_dir() else not beside.exists() and os.access(folder, os.W_OK)
    if writable:
        return beside
    key = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:16]
    return cache_root() / "external" / key


def fingerprint(task: ExternalTask) -> dict:
    """What the derived instance depends on: content hashes of the small sources, file stats of the model.

    Stats (path, size, mtime) keep this cheap for multi-gigabyte checkpoints; the full hashes are
    checked by every evaluation anyway.
    """
    weights = task.location.weights
    stats = sorted(
        (p.relative_to(weights).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
        for p in weights.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )
    unigram = task.location.unigram
    return {
        "derivation": DERIVATION,
        "definition": sha256_file(task.definition),
        "cases": sha256_file(task.cases),
        "model_files": canonical_hash(stats),
        "unigram": sha256_file(unigram) if unigram else None,
    }


def _current(ref: InstanceRef, sources: dict) -> bool:
    try:
        manifest = read_manifest(ref.folder)
        read_manifest(ref.model_folder)
    except ManifestError:
        return False
    return (manifest.get("external") or {}).get("sources") == sources


# ------------------------------------------------------------------------------------------ derivation


def derive(task: ExternalTask, root: Path, sources: dict) -> None:
    """Write the model record and the instance under ``root`` (each published atomically, manifest last)."""
    from transformers import AutoConfig, AutoTokenizer

    with quiet_transformers():
        tok = AutoTokenizer.from_pretrained(task.location.weights)
        config = AutoConfig.from_pretrained(task.location.weights)
    records, fmt = case_records(task, tok, int(getattr(config, "vocab_size", None) or len(tok)))
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(root / ".gitignore", "# derived by halbench from the task's sources; safe to delete\n*\n")
    model = _write_record(task, root)
    _write_instance(task, root, records, fmt, model, sources)


def case_records(task: ExternalTask, tok, vocab: int) -> tuple[list[dict], str]:
    """The task's cases as token records, and the format they were read in."""
    fmt = task.spec.format or detect_format(task.cases)
    if fmt == "tokens":
        from halbench.tasks.bundle import marker_ids

        records = read_token_cases(task.cases, vocab, marker_ids(tok))
        for record in records:
            if record["prompt_tokens"] is None:
                record["prompt_tokens"] = tok.convert_ids_to_tokens(record["prompt_ids"])
    else:
        records, problems = [], []
        for case in read_text_cases(task.cases):
            try:
                records.append(text_record(tok, case))
            except TextCaseError as exc:
                problems.append(str(exc))
        if problems:
            raise ManifestError(f"{task.cases}: {len(problems)} problem(s):\n  " + "\n  ".join(problems[:50]))
    if not records:
        raise ManifestError(f"{task.cases}: no cases")
    return records, fmt


def detect_format(path: Path) -> str:
    """``tokens`` when the first case has ``prompt_ids``, ``text`` when it has ``prompt``."""
    from halbench.external.jsonl import json_lines

    for n, first in json_lines(path):
        if isinstance(first, dict) and "prompt_ids" in first:
            return "tokens"
        if isinstance(first, dict) and "prompt" in first:
            return "text"
        raise ManifestError(
            f"{path}:{n}: cannot tell the format: a case needs prompt_ids (token cases) or prompt (text cases); "
            "or set `format` in task.yaml"
        )
    raise ManifestError(f"{path}: no cases")


def _staging(root: Path, name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f".stage-{name}-", dir=root))


def _write_record(task: ExternalTask, root: Path) -> dict:
    """The model record: a relative symlink to the checkpoint, its unigram, a manifest hashing them."""
    staging = _staging(root, RECORD)
    try:
        target = os.path.relpath(task.location.weights, root / RECORD)
        try:
            os.symlink(target, staging / MODEL_DIR, target_is_directory=True)
        except OSError as exc:
            raise ManifestError(f"{root}: cannot link to the model folder ({exc})") from None
        names = [MODEL_DIR]
        if task.location.unigram:
            shutil.copyfile(task.location.unigram, staging / UNIGRAM)
            names.append(UNIGRAM)
        files = hashed_files(staging, tuple(names))
        manifest = {
            "kind": "model",
            "name": task.model_name,
            "spec_hash": "external",
            "files": files,
            "content_hash": content_hash(files, "external"),
            "arch": task.location.model_type,
            "parameters": parameter_count(task.location.weights),
            "external": {"weights": str(task.location.weights)},
        }
        write_manifest(staging, manifest)
        publish(staging, root / RECORD, (*names, MANIFEST))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _write_instance(task: ExternalTask, root: Path, records: list[dict], fmt: str, model: dict, sources: dict):
    staging = _staging(root, INSTANCE)
    try:
        write_cases(staging / CASES, records)
        files = hashed_files(staging, (CASES,))
        spec_hash = canonical_hash({"external": task.spec.model_dump(), "derivation": DERIVATION})
        lengths = [len(r["prompt_ids"]) for r in records]
        manifest = {
            "kind": "instance",
            "task": task.name,
            "version": 1,
            "family": "external",
            "quick": False,
            "description": task.spec.description,
            "model": {
                "name": task.model_name,
                "content_hash": model["content_hash"],
                "arch": model["arch"],
                "parameters": model["parameters"],
                "path": f"../{RECORD}",
            },
            "content_hash": content_hash(files, spec_hash, model["content_hash"]),
            "spec_hash": spec_hash,
            "files": files,
            "counts": {s: sum(r["split"] == s for r in records) for s in ("test", "dev")},
            "prompt_length": {"min": min(lengths), "max": max(lengths), "mean": round(sum(lengths) / len(lengths), 2)},
            "external": {
                "format": fmt,
                "with_causes": sum(bool(r["causes"]) for r in records),
                "verification": task.spec.verification.model_dump(),
                "sources": sources,
            },
        }
        write_manifest(staging, manifest)
        publish(staging, root / INSTANCE, (CASES, MANIFEST))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def parameter_count(weights: Path) -> int:
    """Parameters from the safetensors headers (no weights loaded); 0 when the checkpoint has none."""
    try:
        from safetensors import safe_open
    except ImportError:  # pragma: no cover - safetensors is a dependency
        return 0
    total = 0
    for path in sorted(Path(weights).glob("*.safetensors")):
        with safe_open(str(path), framework="numpy") as handle:
            for key in handle.keys():  # noqa: SIM118 (a safetensors handle is not a dict)
                shape = handle.get_slice(key).get_shape()
                count = 1
                for dim in shape:
                    count *= int(dim)
                total += count
    return total
