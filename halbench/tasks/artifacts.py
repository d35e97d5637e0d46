"""Built artifacts and their manifests.

A built model (``tasks/_models/<model>/``) holds ``model/`` (a plain
transformers folder), ``unigram.json`` (corpus token counts, public),
``world.json`` (the roles of its tokens, for the verifier only) and
``MANIFEST.json``. A built task instance (``tasks/<task>/<model>/``) holds
``cases.jsonl`` and ``MANIFEST.json``, which pins the model by its content
hash. Every manifest pins every file by sha256 and derives a content hash from
them, so a result can name exactly which weights and cases it saw, and any
change to them is detected before anything is scored.
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
MODELS_DIR = "_models"
UNIGRAM = "unigram.json"
WORLD = "world.json"
RECIPE = "model.yaml"
TASK_FILE = "task.yaml"
LIBRARIES = ("torch", "transformers", "tokenizers", "datasets", "numpy", "safetensors", "pydantic")
DEFINITIONS = (MANIFEST, TASK_FILE, RECIPE)


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


def hashed_files(root: Path, names: tuple[str, ...] | None = None) -> dict[str, str]:
    """sha256 of the artifact files under ``root`` (definitions, the manifest and hidden files excluded).

    ``names``: only these top-level entries (files or folders), so an instance folder does not hash
    the folders of other builds beneath it.
    """
    root = Path(root)
    tops = [root / n for n in names] if names is not None else [root]
    files = []
    for top in tops:
        if top.is_file():
            files.append(top)
        elif top.is_dir():
            files += [p for p in top.rglob("*") if p.is_file()]
    files = [p for p in files if p.name not in DEFINITIONS and not p.name.startswith(".")]
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(files)}


def content_hash(files: dict[str, str], spec_hash: str, model_hash: str | None = None) -> str:
    return canonical_hash({"files": files, "spec_hash": spec_hash, "model_hash": model_hash})


def write_cases(path: Path, records: list[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def read_cases(path: Path) -> list[dict]:
    """Read ``cases.jsonl``; a malformed line is reported with its file and line number."""
    out = []
    try:
        with open(path, encoding="utf-8") as handle:
            for n, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ManifestError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
                if not isinstance(record, dict):
                    raise ManifestError(f"{path}:{n}: a case must be a JSON object")
                out.append(record)
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except FileNotFoundError:
        raise ManifestError(f"{path}: file not found") from None
    return out


def read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path}: missing ({what})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: expected a JSON object")
    return data


def read_manifest(root: Path) -> dict:
    path = Path(root) / MANIFEST
    if not path.exists():
        raise ManifestError(f"{root}: no {MANIFEST}; build it first (halbench tasks build)")
    return read_json(path, "manifest")


def check_manifest(root: Path) -> list[str]:
    """Every mismatch between the files on disk and the manifest (empty when intact)."""
    root = Path(root)
    try:
        manifest = read_manifest(root)
    except ManifestError as exc:
        return [str(exc)]
    recorded = manifest.get("files")
    if not isinstance(recorded, dict) or not recorded:
        return [f"{root / MANIFEST}: no file hashes recorded"]
    tops = tuple(sorted({name.split("/")[0] for name in recorded}))
    actual = hashed_files(root, tops)
    problems = [f"{root / name}: missing" for name in sorted(set(recorded) - set(actual))]
    problems += [f"{root / name}: not in the manifest" for name in sorted(set(actual) - set(recorded))]
    problems += [
        f"{root / name}: sha256 differs from the manifest (the file was changed after the build)"
        for name in sorted(set(recorded) & set(actual))
        if recorded[name] != actual[name]
    ]
    model_hash = (manifest.get("model") or {}).get("content_hash") if manifest.get("kind") == "instance" else None
    expected = content_hash(recorded, manifest.get("spec_hash", ""), model_hash)
    if manifest.get("content_hash") != expected:
        problems.append(f"{root / MANIFEST}: content_hash does not match the recorded files")
    return problems


def publish(staging: Path, dest: Path, names: tuple[str, ...]) -> None:
    """Move freshly built ``names`` into ``dest``, replacing old ones; the manifest goes last."""
    dest.mkdir(parents=True, exist_ok=True)
    trash = Path(tempfile.mkdtemp(prefix=".old-", dir=dest))
    ordered = [n for n in names if n != MANIFEST] + [MANIFEST]
    try:
        for name in ordered:
            if (dest / name).exists():
                (dest / name).rename(trash / name)
        for name in ordered:
            (staging / name).rename(dest / name)
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def write_manifest(root: Path, manifest: dict) -> None:
    atomic_write_json(Path(root) / MANIFEST, manifest)
