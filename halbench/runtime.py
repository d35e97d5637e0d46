"""Process-wide numeric settings that make numbers reproducible.

Matrix kernels may split a reduction differently for odd thread counts, which changes the last bits of
a result (measured: 3 threads differ from 1, 2 and 4 on some shapes). halbench therefore runs torch's
intra-op pool at a power of two (the largest not above the cores it may use, or ``$HALBENCH_THREADS``
rounded down the same way), so a record does not depend on how many cores a machine happens to have
free within the tested range.
"""

from __future__ import annotations

import os

import torch


def power_of_two_at_most(n: int) -> int:
    n = max(1, int(n))
    return 1 << (n.bit_length() - 1)


def configure_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads to a power of two; returns the number set."""
    if threads is None:
        env = os.environ.get("HALBENCH_THREADS")
        threads = int(env) if env else len(os.sched_getaffinity(0))
    chosen = power_of_two_at_most(threads)
    if torch.get_num_threads() != chosen:
        torch.set_num_threads(chosen)
    return chosen
