"""What a method page says about a method: prose and links, and the settings its results ran with.

Built-ins are described by their registered class (our own code, already imported by the harness);
submissions only by their ``submission.yaml``. A submission's ``method.py`` is never imported: its
text reaches the page through jinja2's escaping, and its links passed the spec's http(s) check.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from halbench.methods.base import registered
from halbench.results import ResultStore
from halbench.submissions.loader import Submission


@dataclass
class MethodInfo:
    name: str
    display: str
    kind: str
    source: str
    description: str
    authors: list[str] = field(default_factory=list)
    paper: str | None = None
    code: str | None = None
    licence: str | None = None
    module: str | None = None  # where a built-in lives in this repository
    settings: list[dict] = field(default_factory=list)  # distinct ``params`` its results were computed with


def settings_of(store: ResultStore, method: str) -> list[dict]:
    """The distinct settings in ``method``'s summaries (normally one)."""
    seen: dict[str, dict] = {}
    for e in store.entries:
        if e.method == method and isinstance(e.summary.get("params"), dict):
            seen.setdefault(json.dumps(e.summary["params"], sort_keys=True, default=str), e.summary["params"])
    return list(seen.values())


def method_info(name: str, store: ResultStore, submissions: dict[str, Submission]) -> MethodInfo:
    entry = next(e for e in store.entries if e.method == name)
    kind, source = str(entry.summary.get("kind", "?")), entry.source
    settings = settings_of(store, name)
    if name in submissions:
        spec = submissions[name].spec
        return MethodInfo(
            name, spec.name, kind, source, spec.description, list(spec.authors), spec.paper, spec.code, spec.licence,
            settings=settings,
        )  # fmt: skip
    cls = registered().get(name)
    if cls is None:
        return MethodInfo(name, name, kind, source, "(not a registered method in this version)", settings=settings)
    return MethodInfo(
        name, name, kind, source, cls.description, ["halbench maintainers"], cls.paper, cls.code, "Apache-2.0",
        cls.__module__.replace(".", "/") + ".py", settings,
    )  # fmt: skip
