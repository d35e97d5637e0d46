"""Finding and validating submission folders without running their code.

A submission is ``submissions/<slug>/`` with ``submission.yaml`` (declared metadata, kind and
hyper-parameters) and ``method.py``. The harness reads the YAML only: ``method.py`` is executed
nowhere but inside the sandboxed worker (:mod:`halbench.isolation`), which checks that its one
``Method`` class matches the declaration. Listing submissions, building the leaderboard and the
site therefore run nobody's code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from halbench.methods.base import registered
from halbench.submissions.spec import SPEC_FILE, SubmissionError, SubmissionSpec, load_spec, validate_slug

METHOD_FILE = "method.py"
RESULTS_DIR = "results"


@dataclass(frozen=True)
class Submission:
    """A valid submission folder: its slug, its declaration, and where its results go."""

    slug: str
    folder: Path
    spec: SubmissionSpec

    @property
    def results(self) -> Path:
        return self.folder / RESULTS_DIR

    @property
    def method_file(self) -> Path:
        return self.folder / METHOD_FILE


def load_submission(folder: Path) -> Submission:
    """Validate ``folder`` (slug, ``submission.yaml``, presence of ``method.py``); every problem at once."""
    folder = Path(folder).resolve()
    problems = []
    try:
        slug = validate_slug(folder.name)
    except SubmissionError as exc:
        problems.append(f"{folder}: {exc}")
        slug = None
    try:
        spec = load_spec(folder / SPEC_FILE)
    except SubmissionError as exc:
        problems.append(str(exc))
        spec = None
    if not (folder / METHOD_FILE).is_file():
        problems.append(f"{folder / METHOD_FILE}: (top level): file not found")
    if slug is not None and slug in registered():
        problems.append(f"{folder}: slug: {slug!r} is the name of a built-in method; choose another")
    if problems:
        raise SubmissionError("\n".join(problems))
    return Submission(slug, folder, spec)


def discover_submissions(root: Path) -> tuple[list[Submission], list[str]]:
    """Every ``root/*/submission.yaml`` folder: the valid submissions, and one readable error per invalid one."""
    good, errors = [], []
    for spec_file in sorted(Path(root).glob(f"*/{SPEC_FILE}")):
        try:
            good.append(load_submission(spec_file.parent))
        except SubmissionError as exc:
            errors.append(str(exc))
    return good, errors
