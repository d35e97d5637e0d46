"""Which names may become page names: task, model, method and case names come from folders and files.

A result folder is written by whoever produced the results, so its name is untrusted: it becomes a
path (``methods/<name>.html``) and part of links. Only a plain charset passes; anything else is
skipped and reported, never escaped into a path.
"""

from __future__ import annotations

import re

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,119}$")


def is_safe(name: object) -> bool:
    """True for 1-120 characters of letters, digits, ``_ . -``, starting with a letter or digit."""
    return isinstance(name, str) and SAFE_NAME.fullmatch(name) is not None and ".." not in name
