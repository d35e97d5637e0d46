"""Loading a submission folder: its spec, and the one :class:`Method` its ``method.py`` defines.

``method.py`` is executed under a module name fixed by the slug, so loading the
same submission again (an edited file, a second copy in a test) replaces the
earlier class instead of tripping the registry's duplicate-name check. Every
problem becomes a :class:`SubmissionError` naming the file, so one bad folder
never takes a listing of all submissions down with it.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from halbench.methods import base
from halbench.methods.base import KINDS, Method, registered
from halbench.submissions.spec import SPEC_FILE, SubmissionError, SubmissionSpec, load_spec, validate_slug

METHOD_FILE = "method.py"
RESULTS_DIR = "results"


@dataclass(frozen=True)
class Submission:
    """A loaded, valid submission: ``method_cls.name == slug`` and the spec's hyper-parameters fit it."""

    slug: str
    folder: Path
    spec: SubmissionSpec
    method_cls: type[Method]

    @property
    def results(self) -> Path:
        return self.folder / RESULTS_DIR


def module_name(slug: str) -> str:
    return "halbench_submission_" + slug.replace("-", "_")


def load_submission(folder: Path) -> Submission:
    """Validate ``folder`` (slug, ``submission.yaml``, ``method.py``) and return it with its method class."""
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
    if problems:
        raise SubmissionError("\n".join(problems))
    _refuse_builtin_name(folder, slug)
    method_cls = _import_method(folder / METHOD_FILE, slug)
    try:
        _check_method(folder / METHOD_FILE, method_cls, slug, spec)
    except SubmissionError:
        _forget(module_name(slug))
        raise
    sub = Submission(slug, folder, spec, method_cls)
    activate(sub)
    return sub


def discover_submissions(root: Path) -> tuple[list[Submission], list[str]]:
    """Every ``root/*/submission.yaml`` folder: the valid submissions, and one readable error per invalid one."""
    good, errors = [], []
    for spec_file in sorted(Path(root).glob(f"*/{SPEC_FILE}")):
        try:
            good.append(load_submission(spec_file.parent))
        except SubmissionError as exc:
            errors.append(str(exc))
        except Exception as exc:  # a broken folder must not hide the others
            errors.append(f"{spec_file.parent}: (top level): {type(exc).__name__}: {exc}")
    return good, errors


def activate(sub: Submission) -> None:
    """Make ``sub``'s class the one registered under its slug (the runner looks methods up by name)."""
    current = registered().get(sub.slug)
    if current is not None and current is not sub.method_cls and not _is_submission(current):
        raise SubmissionError(f"{sub.folder}: slug: {sub.slug!r} is the name of a built-in method")
    base._REGISTRY[sub.slug] = sub.method_cls


def _is_submission(cls: type) -> bool:
    return cls.__module__.startswith("halbench_submission_")


def _refuse_builtin_name(folder: Path, slug: str) -> None:
    existing = registered().get(slug)
    if existing is not None and not _is_submission(existing):
        raise SubmissionError(
            f"{folder}: slug: {slug!r} is the name of a built-in method ({existing.__module__}); choose another"
        )


def _forget(name: str) -> None:
    """Drop a submission module and every method it registered, so it can be loaded afresh."""
    for key, cls in list(base._REGISTRY.items()):
        if cls.__module__ == name:
            del base._REGISTRY[key]
    sys.modules.pop(name, None)


def _import_method(path: Path, slug: str) -> type[Method]:
    """Execute ``method.py`` afresh and return the single named Method subclass it defines."""
    if not path.is_file():
        raise SubmissionError(f"{path}: (top level): file not found")
    name = module_name(slug)
    _forget(name)
    module = _execute(path, name)
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, Method) and obj.__module__ == name
    ]
    named = [cls for cls in classes if "name" in cls.__dict__]
    if len(named) == 1:
        return named[0]
    _forget(name)
    if named:
        listed = ", ".join(sorted(cls.__name__ for cls in named))
        raise SubmissionError(f"{path}: (module): defines {len(named)} Method subclasses ({listed}); exactly one")
    hint = f" ({', '.join(c.__name__ for c in classes)} set no `name`)" if classes else ""
    raise SubmissionError(f"{path}: (module): defines no Method subclass with a `name`{hint}")


def _execute(path: Path, name: str) -> ModuleType:
    """Run the file as module ``name``; compiled here, so no bytecode cache can serve a stale copy."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        source = path.read_text(encoding="utf-8")
        exec(compile(source, str(path), "exec"), module.__dict__)
    except SyntaxError as exc:
        _forget(name)
        raise SubmissionError(f"{path}: line {exc.lineno}: SyntaxError: {exc.msg}") from None
    except Exception as exc:
        _forget(name)
        raise SubmissionError(f"{path}: {_where(exc, path)}: {type(exc).__name__}: {exc}") from None
    return module


def _where(exc: BaseException, path: Path) -> str:
    """The deepest line of ``path`` in the traceback: where the submission's own code failed."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return f"line {lines[-1]}" if lines else "(import)"


def _check_method(path: Path, cls: type[Method], slug: str, spec: SubmissionSpec) -> None:
    where = f"{path}: class {cls.__name__}"
    problems = []
    if cls.name != slug:
        problems.append(f"{where}: name: {cls.name!r} must equal the folder name {slug!r}")
    if getattr(cls, "kind", None) not in KINDS:
        problems.append(f"{where}: kind: must be one of {', '.join(KINDS)}")
    if not isinstance(getattr(cls, "description", None), str) or not cls.description.strip():
        problems.append(f"{where}: description: must be a non-empty string")
    if inspect.isabstract(cls):
        problems.append(f"{where}: attribute: must be implemented")
    if not isinstance(cls.defaults, dict):
        problems.append(f"{where}: defaults: must be a dict of hyper-parameters")
    else:
        spec_file = path.parent / SPEC_FILE
        for key in sorted(set(spec.hyperparameters) - set(cls.defaults)):
            known = ", ".join(sorted(cls.defaults)) or "none"
            problems.append(f"{spec_file}: hyperparameters.{key}: not a hyper-parameter of {slug} (known: {known})")
    if problems:
        raise SubmissionError("\n".join(problems))
