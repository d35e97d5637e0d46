"""Built task artifacts: ``model/``, ``cases.jsonl`` and ``MANIFEST.json``.

The manifest pins every file by sha256 and derives the task's content hash
from them, so a result computed on a task can name exactly which weights and
cases it saw, and any change to them is detected.
"""

from __future__ import annotations

import json
import platform
import shutil
import tempfile
from pathlib import Path

from halbench import __version__
from halbench.atomic import atomic_write_json, atomic_write_text, canonical_hash, sha256_file

MANIFEST = "MANIFEST.json"
CASES = "cases.jsonl"
MODEL_DIR = "model"
LIBRARIES = ("torch", "transformers", "tokenizers", "datasets", "numpy", "safetensors", "pydantic")


class ManifestError(RuntimeError):
    """Artifacts are missing or do not match their manifest."""


def library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"halbench": __version__, "python": platform.python_version()}
    for lib in LIBRARIES:
        try:
            out[lib] = version(lib)
        except PackageNotFoundError:
            out[lib] = "missing"
    return out


def hashed_files(root: Path) -> dict[str, str]:
    """sha256 of every artifact file under ``root`` (the manifest itself excluded)."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST and not p.name.startswith("."))
    files = [p for p in files if p.name != "task.yaml"]
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in files}


def content_hash(files: dict[str, str], spec_hash: str, neutral_ids: list[int]) -> str:
    return canonical_hash({"files": files, "spec_hash": spec_hash, "neutral_ids": neutral_ids})


def write_cases(path: Path, records: list[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def read_cases(path: Path) -> list[dict]:
    """Read ``cases.jsonl``; a malformed line is reported with its line number."""
    out = []
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ManifestError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
    return out


def read_manifest(root: Path) -> dict:
    path = Path(root) / MANIFEST
    if not path.exists():
        raise ManifestError(f"{root}: no {MANIFEST}; build the task first (halbench tasks build)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{path}: not valid JSON ({exc.msg})") from None


def check_manifest(root: Path) -> list[str]:
    """Every mismatch between the files on disk and the manifest (empty when intact)."""
    root = Path(root)
    manifest = read_manifest(root)
    recorded, actual = manifest.get("files", {}), hashed_files(root)
    problems = [f"{name}: missing" for name in sorted(set(recorded) - set(actual))]
    problems += [f"{name}: not in the manifest" for name in sorted(set(actual) - set(recorded))]
    problems += [
        f"{name}: sha256 differs from the manifest"
        for name in sorted(set(recorded) & set(actual))
        if recorded[name] != actual[name]
    ]
    expected = content_hash(recorded, manifest.get("spec_hash", ""), manifest.get("neutral_ids", []))
    if manifest.get("content_hash") != expected:
        problems.append("content_hash does not match the recorded files")
    return problems


def publish(staging: Path, dest: Path) -> None:
    """Move freshly built artifacts into ``dest``, replacing old ones; the manifest goes last."""
    dest.mkdir(parents=True, exist_ok=True)
    trash = Path(tempfile.mkdtemp(prefix=".old-", dir=dest))
    try:
        for name in (MODEL_DIR, CASES, MANIFEST):
            if (dest / name).exists():
                (dest / name).rename(trash / name)
        for name in (MODEL_DIR, CASES, MANIFEST):
            (staging / name).rename(dest / name)
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def write_manifest(root: Path, manifest: dict) -> None:
    atomic_write_json(Path(root) / MANIFEST, manifest)
