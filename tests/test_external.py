"""External tasks end to end: a model folder and a cases file, with and without causes, from the command line.

Real artifacts throughout: tiny random checkpoints built from transformers configs (Llama, OLMo-2,
Qwen-2, and halbench's own GPT-2/Llama layout), real tokenizers with chat templates, real sweeps.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoTokenizer

from halbench.atomic import sha256_file
from halbench.external.instance import DERIVED, external_instance
from halbench.external.textcases import read_text_cases, text_record
from halbench.external.verify import reverify_external
from halbench.tasks.artifacts import CASES, read_cases, read_manifest
from halbench.tasks.bundle import load_bundle, verify_instance
from halbench.tasks.registry import REPO_ROOT

from .conftest import invoke
from .hf_models import ARCHS, make_hf_model
from .tiny import make_tiny_instance

MINIMAL = "kind: external\nmodel: model\ncases: cases.jsonl\n"
TEXT_CASES = [
    {"prompt": "Tell me a bio of Mira Olsen.", "hallucination": "She was born in Lund", "chat_template": True},
    {"id": "capital", "prompt": "The capital of Australia is", "hallucination": "Sydney", "faithful": "Canberra"},
]


def _folder_hashes(folder: Path) -> dict[str, str]:
    """The user's files (everything but the derived folder), by content."""
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and DERIVED not in p.relative_to(folder).parts
    }


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _held_out(root: Path, cause: str = "last") -> Path:
    """A task folder with only model/, cases.jsonl (with causes) and a minimal task.yaml.

    The model is halbench's tiny random Llama; each case's target is its greedy answer and its cause the
    last prompt token (a random network's next token depends mostly on it), so the causes verify for
    real. ``cause="first"`` claims the first editable token instead, a cause that does not hold.
    """
    ref = make_tiny_instance(root / "source", "llama", cases=6, dev=2)
    bundle = load_bundle(ref, device="cpu")
    folder = root / "heldout"
    folder.mkdir()
    shutil.copytree(ref.model_folder / "model", folder / "model")
    rows = []
    for record in bundle.records:
        prompt = record["prompt_ids"][:-1]  # drop the fixed query marker: the last token is then editable
        with torch.no_grad():
            answer = int(bundle.model(input_ids=torch.tensor([prompt])).logits[0, -1].argmax())
        editable = record["editable"]
        claimed = editable[-1] if cause == "last" else editable[0]
        rows.append({"id": record["id"], "split": record["split"], "prompt_ids": prompt, "editable": editable,
                     "target_ids": [answer], "causes": [[claimed]]})  # fmt: skip
    _write_jsonl(folder / "cases.jsonl", rows)
    (folder / "task.yaml").write_text(MINIMAL)
    return folder


@pytest.fixture(scope="module")
def held_out(tmp_path_factory) -> Path:
    return _held_out(tmp_path_factory.mktemp("heldout"))


# --------------------------------------------------------------------------------------- held-out import


def test_held_out_task_runs_eval_with_no_other_file(held_out, tmp_path):
    before = _folder_hashes(held_out)
    out = tmp_path / "results"
    result = invoke("eval", "--method", "sat", "--task", str(held_out), "--budget", "16", "--limit", "3",
                    "--out", str(out), "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "heldout/llama" in result.output
    summary = json.loads((out / "heldout" / "llama" / "sat" / "budget-16.json").read_text())
    assert summary["cases"] == 3 and summary["failed"] == 0, summary["failures"]
    assert {"average_precision", "hit_at_k", "s_rep@0.5", "p_rep@0.5"} <= set(summary["metrics"])
    assert _folder_hashes(held_out) == before  # nothing the user wrote was touched
    assert sorted(p.name for p in held_out.iterdir()) == sorted([DERIVED, "cases.jsonl", "model", "task.yaml"])


def test_held_out_causes_reverify(held_out):
    [ref] = [external_instance(held_out)]
    manifest, model_folder = verify_instance(ref)
    records = read_cases(ref.folder / CASES)
    problems, checked = reverify_external(manifest, model_folder, records, sample=32, seed=0)
    assert problems == [] and checked == len(records) == 8


def test_a_cause_that_does_not_hold_fails_reverification(tmp_path):
    folder = _held_out(tmp_path, cause="first")
    ref = external_instance(folder)
    manifest, model_folder = verify_instance(ref)
    problems, _ = reverify_external(manifest, model_folder, read_cases(ref.folder / CASES), sample=4, seed=0)
    for family in ("corpus (uniform refills)", "mask (mask refills)"):  # no unigram shipped: uniform refills
        assert sum(f"{family}: necessity" in p for p in problems) == 4, problems
        assert any(f"{family}: sufficiency" in p for p in problems), problems


def test_held_out_tasks_verify_cli(held_out):
    result = invoke("tasks", "verify", str(held_out), "--sample", "4")
    assert result.exit_code == 0, result.output
    assert "ok   heldout/llama" in result.output and "4 cases re-verified" in result.output


def test_derived_instance_is_reused_then_rederived_when_a_source_changes(tmp_path):
    folder = _held_out(tmp_path)
    first = external_instance(folder)
    manifest = read_manifest(first.folder)
    mtime = (first.folder / "MANIFEST.json").stat().st_mtime_ns
    assert external_instance(folder) == first
    assert (first.folder / "MANIFEST.json").stat().st_mtime_ns == mtime  # unchanged sources: not rewritten
    rows = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    _write_jsonl(folder / "cases.jsonl", rows[:-1])
    again = external_instance(folder)
    changed = read_manifest(again.folder)
    assert changed["content_hash"] != manifest["content_hash"]
    assert sum(changed["counts"].values()) == len(rows) - 1
    assert (folder / DERIVED / ".gitignore").read_text().strip().endswith("*")


# --------------------------------------------------------------------------------------- text cases


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf")
    return {arch: make_hf_model(root / arch, arch) for arch in ARCHS}


@pytest.mark.parametrize("arch", ARCHS)
def test_text_cases_on_each_architecture_run_without_ground_truth(arch, hf_models, tmp_path):
    folder = tmp_path / "own"
    folder.mkdir()
    shutil.copytree(hf_models[arch], folder / "model")
    _write_jsonl(folder / "cases.jsonl", TEXT_CASES)
    (folder / "task.yaml").write_text(MINIMAL + "model_name: tiny\n")
    out = tmp_path / "results"
    result = invoke("eval", "--method", "sat", "--task", str(folder), "--budget", "16", "--out", str(out),
                    "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "own" / "tiny" / "sat" / "budget-16.json").read_text())
    assert summary["cases"] == 2 and summary["failed"] == 0, summary["failures"]
    assert "s_rep@0.5" in summary["metrics"] and "average_precision" not in summary["metrics"]


@pytest.mark.parametrize("arch", ARCHS)
def test_chat_template_fixes_the_template_and_edits_only_the_prompt(arch, hf_models):
    tok = AutoTokenizer.from_pretrained(hf_models[arch])
    [wrapped, plain] = [text_record(tok, c) for c in _text_cases(TEXT_CASES)]
    editable = wrapped["editable"]
    assert tok.decode([wrapped["prompt_ids"][p] for p in editable]) == TEXT_CASES[0]["prompt"]
    assert len(wrapped["prompt_ids"]) > len(editable)  # the template's own tokens are there, and fixed
    rendered = tok.apply_chat_template([{"role": "user", "content": TEXT_CASES[0]["prompt"]}],
                                       add_generation_prompt=True, tokenize=False)  # fmt: skip
    assert tok.decode(wrapped["prompt_ids"]) == rendered
    assert tok.decode(wrapped["target_ids"]) == TEXT_CASES[0]["hallucination"]
    assert tok.decode(plain["target_ids"]) == " Sydney"  # continues after the prompt with its space
    assert wrapped["target_text"] == "She was born in Lund" and wrapped["causes"] == []


def _text_cases(rows: list[dict]):
    from halbench.external.textcases import TextCase

    return [TextCase(**{"id": f"c{i}", **r}) for i, r in enumerate(rows)]


def test_example_cases_file_is_valid(hf_models):
    cases = read_text_cases(REPO_ROOT / "examples" / "own-model" / "cases.jsonl")
    assert len(cases) >= 4 and any(c.chat_template for c in cases) and any(c.split == "dev" for c in cases)
    tok = AutoTokenizer.from_pretrained(hf_models["olmo2"])
    assert all(text_record(tok, c)["target_ids"] for c in cases)


# --------------------------------------------------------------------------------------- clear errors


def _task(tmp_path: Path, spec: dict | str, cases: list[dict] | None = None) -> Path:
    folder = tmp_path / "task"
    folder.mkdir(exist_ok=True)
    text = spec if isinstance(spec, str) else yaml.safe_dump(spec)
    (folder / "task.yaml").write_text(text)
    if cases is not None:
        _write_jsonl(folder / "cases.jsonl", cases)
    return folder


def _eval_error(folder: Path) -> str:
    result = invoke("eval", "--method", "sat", "--task", str(folder), "--budget", "16", "--no-progress")
    assert result.exit_code == 1, result.output
    return result.output


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "external", "cases": "cases.jsonl"}, "field `model`: required field is missing"),
        ({"kind": "externl", "model": "model", "cases": "cases.jsonl"}, "field `kind`: Input should be 'external'"),
        ({"kind": "external", "model": "model", "cases": "cases.jsonl", "modle": "x"}, "field `modle`: unknown key"),
        ({"kind": "external", "model": "nowhere", "cases": "cases.jsonl"}, "field `model`:"),
        ({"kind": "external", "model": "model", "cases": "missing.jsonl"}, "field `cases`:"),
        ({"kind": "external", "model": "model", "cases": "cases.jsonl", "format": "csv"}, "field `format`:"),
        ({"kind": "external", "model": "model", "cases": "cases.jsonl", "verification": {"necessity": 2}},
         "field `verification.necessity`: Input should be less than or equal to 1"),
    ],
)  # fmt: skip
def test_each_malformed_field_gets_one_clear_message(spec, message, tmp_path, hf_models):
    folder = _task(tmp_path, spec, TEXT_CASES)
    shutil.copytree(hf_models["llama"], folder / "model")
    output = _eval_error(folder)
    assert output.count(message) == 1, output
    assert "task.yaml" in output and "1 problem(s)" in output


def test_every_problem_is_reported_at_once(tmp_path):
    folder = _task(tmp_path, {"kind": "external", "model": "nowhere", "cases": "missing.jsonl"})
    output = _eval_error(folder)
    assert "2 problem(s)" in output and "field `model`" in output and "field `cases`" in output


def test_malformed_cases_name_file_line_and_field(tmp_path, hf_models):
    token_rows = [
        {"id": "a", "prompt_ids": [5, 6, 7], "target_ids": [8], "causes": [[9]]},
        {"id": "b", "prompt_ids": [5, 6, 7], "target_ids": [8], "cause": [[1]]},
        {"id": "a", "prompt_ids": [5, 6, 10**6], "target_ids": [8]},
    ]
    folder = _task(tmp_path, MINIMAL, token_rows)
    shutil.copytree(hf_models["qwen2"], folder / "model")
    output = _eval_error(folder)
    cases = folder / "cases.jsonl"
    assert f"{cases}:1: field `causes.0`: positions [9] are not editable prompt positions" in output
    assert f"{cases}:2: field `cause`: unknown key" in output
    assert f"{cases}:3: field `prompt_ids`: token ids [1000000] are outside the model's vocabulary" in output
    assert "case id 'a' appears twice" in output
    _write_jsonl(cases, [{"prompt": "hello"}, {"prompt": "", "hallucination": "x", "chat_template": "maybe"}])
    output = _eval_error(folder)
    assert f"{cases}:1: field `hallucination`: required field is missing" in output
    assert f"{cases}:2: field `prompt`:" in output and f"{cases}:2: field `chat_template`:" in output


# --------------------------------------------------------------------------------------- HALoGEN import


def test_halogen_import_parses_literal_lists_safely_and_counts_skips(tmp_path):
    path = tmp_path / "biographies_responses_halu.csv"
    rows = [
        ("0", "Tell me a bio of Mira Olsen", "Mira Olsen is a painter. She was born in Lund, Sweden.",
         "[('born', 'Lund, Sweden')]"),
        ("1", "Name a library for parsing", "Use the fastparse2 module.", "['fastparse2', 'other']"),
        ("2", "Tell me a bio of Ada", "Ada was a mathematician.", "[]"),
        ("3", "Tell me a bio of Bo", "Bo was born in Oslo.", "[('born', 'Bergen')]"),
        ("4", "Tell me a bio of Cy", "Cy was born in Rome.", "__import__('os').system('echo owned')"),
        ("5", "Tell me a bio of Di", "Di was born in Lima.", "[('born', 'Lima'"),
    ]  # fmt: skip
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["", "prompt", "response", "atoms", "hallucinated_atomic_units"])
        for index, prompt, response, atoms in rows:
            writer.writerow([index, prompt, response, "| x |", atoms])
    out = tmp_path / "cases.jsonl"
    result = invoke("import", "halogen", str(path), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "wrote 2 case(s)" in result.output
    assert "skipped 4 row(s)" in result.output and "2 unparsable hallucinated_atomic_units" in result.output
    assert "1 no hallucinated atom" in result.output and "1 no atom occurs in the response" in result.output
    cases = read_text_cases(out)
    assert [(c.id, c.hallucination, c.chat_template) for c in cases] == [
        ("biographies-0", "Lund, Sweden", True),
        ("biographies-1", "fastparse2", True),
    ]


def test_halogen_import_needs_its_columns(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("prompt,answer\nhi,there\n")
    result = invoke("import", "halogen", str(path), "--out", str(tmp_path / "cases.jsonl"))
    assert result.exit_code == 1
    assert "missing column(s) response, hallucinated_atomic_units" in result.output
