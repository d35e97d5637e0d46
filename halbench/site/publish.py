"""Publishing a build: render into a staging folder beside the target, make it world-readable, swap it in whole.

A failed build leaves the previous site untouched. ``tempfile.mkdtemp`` creates its folder with mode
700, which is why v1's ``site/_build`` could not be served; every folder is set to 755 and every file
to 644 before the swap, whatever the umask.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

DIR_MODE, FILE_MODE = 0o755, 0o644


def world_readable(root: Path) -> None:
    os.chmod(root, DIR_MODE)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(Path(folder) / name, DIR_MODE)
        for name in files:
            os.chmod(Path(folder) / name, FILE_MODE)


def swap(staging: Path, out: Path) -> None:
    """Replace ``out`` with ``staging`` (two renames; the old build is removed afterwards)."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{time.time_ns()}")
        out.rename(old)
    staging.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def publish(out: Path, fill: Callable[[Path], None]) -> None:
    """Call ``fill(staging)``, then make the staging folder world-readable and swap it in as ``out``."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: exists and is not a folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
    try:
        fill(staging)
        world_readable(staging)
        swap(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
