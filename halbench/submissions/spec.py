"""The schema of ``submissions/<slug>/submission.yaml``, and the slug rule.

Submissions come from outside the project, so validation is strict (unknown
keys and loose types are errors) and reports every problem at once, each as
``<file>: <dotted.field>: <message>``, like task files. Free text (``name``,
``description``) may hold anything printable, HTML included: the site escapes
it. Whatever reaches a path or a URL is checked here: the slug (it names
folders and the registered method) and the ``paper``/``code`` links.
"""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

SPEC_FILE = "submission.yaml"
SLUG_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$"
LICENCE_PATTERN = r"^[A-Za-z0-9.+-]{1,40}$"


class SubmissionError(ValueError):
    """A submission is unreadable or invalid; the message lists every problem, one per line."""


def validate_slug(slug: str) -> str:
    """The slug names a folder, a module and a registered method, so only ``[a-z0-9-]`` passes."""
    if not isinstance(slug, str) or re.fullmatch(SLUG_PATTERN, slug) is None:
        raise SubmissionError(
            f"slug {slug!r}: folder name must be 1-40 characters of a-z, 0-9 and '-', "
            "starting and ending with a letter or digit"
        )
    return slug


def _no_controls(text: str, allowed: str = "") -> str:
    bad = sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Cc" and c not in allowed})
    if bad:
        raise ValueError(f"must not contain control characters (found {', '.join(bad)})")
    if not text.strip():
        raise ValueError("must not be blank")
    return text


def _printable(text: str) -> str:
    """One line of visible text (names, authors): no control characters, newlines included."""
    return _no_controls(text)


def _paragraphs(text: str) -> str:
    """Free text that may span lines and hold HTML (the site escapes it), but no other control characters."""
    return _no_controls(text, allowed="\n\t")


def _web_url(url: str) -> str:
    """Only http(s) links with a host: a link is rendered on the site, so ``javascript:`` and the like are out."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url):
        raise ValueError("must be an http:// or https:// URL with a host and no spaces")
    return url


def _json_values(params: dict[str, Any]) -> dict[str, Any]:
    """Hyper-parameters are stored in result JSON, so each is a finite JSON scalar or a list of them."""
    bad = [key for key, value in params.items() if not _is_json_value(value)]
    if bad:
        raise ValueError(f"{', '.join(bad)}: each value must be a string, number, boolean, null or a list of those")
    return params


def _is_json_value(value: Any, nested: bool = False) -> bool:
    if isinstance(value, list) and not nested:
        return all(_is_json_value(v, nested=True) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str | int | bool)


NonEmpty = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_printable)]
Url = Annotated[str, Field(max_length=500), AfterValidator(_web_url)]


class SubmissionSpec(BaseModel):
    """What a submitter declares; the method itself lives in ``method.py`` and runs only in the sandbox.

    ``kind`` and ``hyperparameters`` (the method's defaults) are declared here so that the harness,
    the leaderboard and the site never need to import the submitter's code.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: Annotated[str, Field(min_length=1, max_length=80), AfterValidator(_printable)]
    authors: Annotated[list[NonEmpty], Field(min_length=1)]
    description: Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_paragraphs)]
    paper: Url | None = None
    code: Url | None = None
    licence: Annotated[str, Field(pattern=LICENCE_PATTERN)]
    kind: Literal["baseline", "perturbation", "gradient", "attention", "tracer"] = Field(
        description="what kind of method it is; the sandboxed worker checks it against the class"
    )
    hyperparameters: Annotated[dict[str, Any], AfterValidator(_json_values)] = Field(default_factory=dict)


def format_errors(source: str, exc: ValidationError) -> list[str]:
    """One ``<file>: <dotted.field>: <message>`` line per problem."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required field is missing"
        lines.append(f"{source}: {loc}: {msg}")
    return lines


def read_yaml(path: Path) -> dict:
    """The top-level mapping of ``path``; unreadable files and YAML errors become a :class:`SubmissionError`."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SubmissionError(f"{path}: (top level): file not found") from None
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"{path}: (top level): not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SubmissionError(f"{path}: (top level): not valid YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        raise SubmissionError(f"{path}: (top level): expected a mapping of fields, got {type(data).__name__}")
    return data


def load_spec(path: Path) -> SubmissionSpec:
    """Load and validate one ``submission.yaml``, reporting every problem at once."""
    raw = read_yaml(path)
    try:
        return SubmissionSpec.model_validate(raw)
    except ValidationError as exc:
        raise SubmissionError("\n".join(format_errors(str(path), exc))) from None
