"""HALoGEN result CSVs of the SAT reference code as text cases (``halbench import halogen``).

The reference (github.com/sunyiyou/SAT, ``data_preprocess.py``) writes ``halu_results/<model>/<type>/
<type>_responses_halu.csv`` with columns ``prompt``, ``response`` and ``hallucinated_atomic_units``: a
Python-literal list whose items are strings (a hallucinated module, reference, number) or tuples whose
last item is the hallucinated content (``('born', 'Bangkok')``). The list is parsed with
:func:`ast.literal_eval`, never evaluated. Each row becomes one case whose hallucination is its first
atom that occurs in the response (ignoring case; the reference traces only such rows), so the case
asks what in the prompt makes the model say it. Rows without such an atom are skipped and counted.
"""

from __future__ import annotations

import ast
import csv
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from halbench.atomic import atomic_write_text
from halbench.external.textcases import TextCase

COLUMNS = ("prompt", "response", "hallucinated_atomic_units")


class HalogenError(ValueError):
    """The CSV cannot be read as a HALoGEN result file."""


@dataclass
class ImportReport:
    cases: list[TextCase] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> rows

    @property
    def skipped_rows(self) -> int:
        return sum(self.skipped.values())


def atom_text(atom: object) -> str | None:
    """The hallucinated string of one atom: the string itself, or a tuple's last item; None if neither."""
    if isinstance(atom, (tuple, list)) and atom:
        atom = atom[-1]
    if isinstance(atom, str) and atom.strip():
        return atom.strip()
    return None


def parse_atoms(cell: str) -> list[str] | None:
    """The atoms of one ``hallucinated_atomic_units`` cell; None when it is not a literal list."""
    try:
        value = ast.literal_eval(cell.strip()) if cell and cell.strip() else []
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, (list, tuple)):
        return None
    return [text for text in map(atom_text, value) if text]


def read_halogen(path: Path, chat_template: bool = True) -> ImportReport:
    """Text cases from a HALoGEN result CSV, one per row with a hallucinated atom found in the response."""
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # responses run long
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return _read(csv.DictReader(handle), Path(path), chat_template)
    except OSError as exc:
        raise HalogenError(f"{path}: cannot read ({exc.strerror})") from None


def _read(reader: csv.DictReader, path: Path, chat_template: bool) -> ImportReport:
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise HalogenError(f"{path}: missing column(s) {', '.join(missing)} (found: {reader.fieldnames})")
    report, stem = ImportReport(), _stem(path)
    for n, row in enumerate(reader):
        reason, case = _case(row, f"{stem}-{(row.get('') or '').strip() or n}", chat_template)
        if case is None:
            report.skipped[reason] += 1
        else:
            report.cases.append(case)
    return report


def _stem(path: Path) -> str:
    return path.name.removesuffix(".csv").removesuffix("_responses_halu").replace("_", "-") or "halogen"


def _case(row: dict, cid: str, chat_template: bool) -> tuple[str, TextCase | None]:
    prompt, response = (row.get("prompt") or "").strip(), row.get("response") or ""
    if not prompt:
        return "empty prompt", None
    atoms = parse_atoms(row.get("hallucinated_atomic_units") or "")
    if atoms is None:
        return "unparsable hallucinated_atomic_units", None
    if not atoms:
        return "no hallucinated atom", None
    found = [a for a in atoms if a.lower() in response.lower()]
    if not found:
        return "no atom occurs in the response", None
    return "", TextCase(id="-".join(cid.split()), prompt=prompt, hallucination=found[0], chat_template=chat_template)


def write_text_cases(path: Path, cases: list[TextCase]) -> None:
    lines = [json.dumps(c.model_dump(exclude_defaults=True), ensure_ascii=False) for c in cases]
    atomic_write_text(Path(path), "".join(line + "\n" for line in lines))
