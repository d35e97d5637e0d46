"""Per-case result files: resumable, checked line by line, never silently mixed or truncated.

One (task instance, method, budget) is three files beside each other:
``budget-<B>.cases.jsonl`` (one record per case), ``budget-<B>.config.json``
(what the records were computed under; a resume under another configuration
is refused) and, when the run completes, ``budget-<B>.json`` (the summary).
Wall-clock seconds, which differ between runs, go to ``budget-<B>.timing.jsonl``
so that the records themselves are byte-identical between runs and executors.

While a run is going, records are appended and flushed one line at a time in
completion order; a completed run rewrites the file atomically in case order.
A torn last line (a killed run) is reported and dropped; a malformed line
anywhere else, or a case recorded twice, is an error naming file and line.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from halbench.atomic import atomic_write_json, atomic_write_text


class RecordError(RuntimeError):
    """A results file is corrupt or belongs to another configuration; the message says which and where."""


@dataclass(frozen=True)
class ResultFiles:
    stem: Path  # .../<task>/<model>/<method>/budget-<B>

    @property
    def cases(self) -> Path:
        return self.stem.with_name(self.stem.name + ".cases.jsonl")

    @property
    def config(self) -> Path:
        return self.stem.with_name(self.stem.name + ".config.json")

    @property
    def summary(self) -> Path:
        return self.stem.with_name(self.stem.name + ".json")

    @property
    def timing(self) -> Path:
        return self.stem.with_name(self.stem.name + ".timing.jsonl")


def result_files(out: Path, instance: str, method: str, budget: int) -> ResultFiles:
    return ResultFiles(Path(out) / instance / method / f"budget-{budget}")


def read_records(path: Path, repair: bool = False) -> tuple[list[dict], list[str]]:
    """Records of a per-case file and notes on what was repaired.

    A last line without a newline that does not parse is a torn write: with ``repair`` it is cut off
    (and noted), without it reported as an error. Any other bad line, a record without an ``id``, or a
    case recorded twice raises :class:`RecordError` with the file and line number.
    """
    if not path.exists():
        return [], []
    try:
        data = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: not UTF-8 text at byte {exc.start}") from None
    lines = data.split("\n")
    records, notes, seen, good = [], [], {}, 0
    for number, line in enumerate(lines, 1):
        last = number == len(lines)
        if not line.strip():
            good += len(line) + (0 if last else 1)
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                raise ValueError("not a case record (an object with a string id)")
        except ValueError as exc:
            if last and repair:
                notes.append(f"{path}:{number}: dropped a torn last line from an interrupted run")
                break
            raise RecordError(f"{path}:{number}: corrupt record ({exc}); fix or delete the line to resume") from None
        if record["id"] in seen:
            raise RecordError(
                f"{path}:{number}: case {record['id']} was already recorded on line {seen[record['id']]} "
                "(two runs wrote to one file?)"
            )
        seen[record["id"]] = number
        records.append(record)
        good += len(line.encode("utf-8")) + (0 if last else 1)
    if notes:
        with open(path, "r+b") as handle:
            handle.truncate(good)
    return records, notes


def check_config(files: ResultFiles, config: dict) -> None:
    """Refuse to add records computed under another configuration to an existing file."""
    if not files.config.exists():
        if files.cases.exists() and files.cases.stat().st_size:
            raise RecordError(
                f"{files.cases}: records exist without {files.config.name}; cannot tell what they were computed "
                "under, delete them to start afresh"
            )
        return
    try:
        stored = json.loads(files.config.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"{files.config}: unreadable ({exc})") from None
    changed = sorted(k for k in set(stored) | set(config) if stored.get(k) != config.get(k))
    if changed:
        detail = ", ".join(f"{k}: {stored.get(k)!r} -> {config.get(k)!r}" for k in changed)
        raise RecordError(
            f"{files.config}: these records were computed under another configuration ({detail}); "
            f"delete {files.stem.parent} to start afresh (or, for eval, use another --out)"
        )


def start(files: ResultFiles, config: dict) -> None:
    files.stem.parent.mkdir(parents=True, exist_ok=True)
    if not files.config.exists():
        atomic_write_json(files.config, config)


class Appender:
    """Appends records (and their timings) one flushed, fsynced line at a time."""

    def __init__(self, files: ResultFiles):
        self.files = files
        self._cases = open(files.cases, "a", encoding="utf-8")  # noqa: SIM115 (held for the run, closed by close)
        self._timing = open(files.timing, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, record: dict, seconds: float) -> None:
        for handle, obj in ((self._cases, record), (self._timing, {"id": record["id"], "seconds": round(seconds, 4)})):
            handle.write(json.dumps(obj, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        self._cases.close()
        self._timing.close()


def finalize(files: ResultFiles, records: list[dict], order: list[str]) -> None:
    """Rewrite the per-case file atomically in case order (byte-identical whoever computed it)."""
    rank = {cid: i for i, cid in enumerate(order)}
    ordered = sorted(records, key=lambda r: rank.get(r["id"], len(rank)))
    atomic_write_text(files.cases, "".join(json.dumps(r, sort_keys=True) + "\n" for r in ordered))
    timings = read_timings(files.timing)
    atomic_write_text(
        files.timing,
        "".join(
            json.dumps({"id": r["id"], "seconds": timings.get(r["id"], 0.0)}, sort_keys=True) + "\n" for r in ordered
        ),
    )


def read_timings(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
            out[str(item["id"])] = float(item["seconds"])
        except (ValueError, KeyError, TypeError):
            continue  # timing is informative only; a torn line costs nothing
    return out


LOCK_FILE = ".halbench.lock"  # left in the output folder after a run; not a result


@contextmanager
def output_lock(out: Path) -> Iterator[None]:
    """An exclusive lock on an output folder for the whole run: a second run on it is refused at once."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RecordError(f"--out {out}: is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    handle = open(out / LOCK_FILE, "w")  # noqa: SIM115 (held until the run ends)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise RecordError(
            f"{out}: another halbench run is writing here (lock held); wait for it or use another --out"
        ) from None
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
