"""Silence transformers' own logging and progress bars: a newcomer reads halbench's output, not library chatter."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """No "Loading weights" or "Writing model shards" bars and no warnings for the duration."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()
