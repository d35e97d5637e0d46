"""Checking an ``--out`` path before any work is done, so that a bad one is one line, not a traceback."""

from __future__ import annotations

from pathlib import Path


def out_problem(path: Path, folder: bool = True) -> str | None:
    """Why ``path`` cannot be written (as a folder, or as a file when ``folder`` is false), or None.

    An existing file where a folder must be (``path`` itself, or any folder above it) is the problem.
    """
    path = Path(path)
    for candidate in ([path] if folder else []) + list(path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else f"--out {path}: {candidate} is a file, not a folder"
    return None
