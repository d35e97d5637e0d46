"""Executors: where a sweep's units run. Each yields ``(unit position, results)`` as units complete.

- ``local``: in this process (one worker), or a pool of worker processes (``--workers N``);
- ``ray``: tasks on a Ray cluster, a local one by default (all cores) or an existing one by
  ``--address``; a unit asks Ray for a GPU when the sweep runs on CUDA.

Workers only compute and return records; the driver writes them (see :mod:`halbench.sweep`).
Every worker runs torch at a power-of-two thread count (:mod:`halbench.runtime`), so the records do
not depend on the executor.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator

from halbench.sweep import Unit, iter_unit, run_unit

Results = Iterator[tuple[int, list]]


def cores() -> int:
    return len(os.sched_getaffinity(0))


def _indexed(item: tuple[int, Unit]) -> tuple[int, list]:
    position, unit = item
    return position, run_unit(unit)


def _init_worker(threads: int) -> None:
    os.environ["HALBENCH_THREADS"] = str(threads)


def local_executor(workers: int = 1):
    """Units in this process (``workers == 1``) or in a pool of ``workers`` spawned processes."""

    def run(work: list[Unit]) -> Results:
        if workers <= 1 or len(work) <= 1:
            for position, unit in enumerate(work):
                for result in iter_unit(unit):  # case by case: Ctrl-C loses only the case in flight
                    yield position, [result]
            return
        threads = max(1, cores() // workers)
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(workers, initializer=_init_worker, initargs=(threads,), maxtasksperchild=None) as pool:
            yield from pool.imap_unordered(_indexed, enumerate(work))

    return run


def ray_executor(address: str | None = None, workers: int | None = None, gpu: bool = False):
    """Units as Ray tasks: a local cluster of ``workers`` CPUs (default: all cores), or the cluster at ``address``."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("the Ray executor needs Ray: pip install 'halbench[ray]'") from None

    def run(work: list[Unit]) -> Results:
        started = not ray.is_initialized()
        if started:
            options = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            if address:
                ray.init(address=address, **options)
            else:
                ray.init(num_cpus=workers or cores(), num_gpus=None, **options)
        try:
            threads = 1
            remote = ray.remote(num_cpus=threads, num_gpus=1 if gpu else 0)(_ray_unit)
            pending = {remote.remote(position, unit, threads): position for position, unit in enumerate(work)}
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    pending.pop(ref)
                    yield ray.get(ref)
        finally:
            if started:
                ray.shutdown()

    return run


def _ray_unit(position: int, unit: Unit, threads: int) -> tuple[int, list]:
    _init_worker(threads)
    return position, run_unit(unit)


def make_executor(name: str, workers: int | None = None, address: str | None = None, gpu: bool = False):
    if name == "local":
        return local_executor(workers or 1)
    if name == "ray":
        return ray_executor(address, workers, gpu)
    raise ValueError(f"unknown executor {name!r} (local or ray)")
