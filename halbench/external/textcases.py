"""Text cases (HALoGEN style): a prompt and the hallucinated string a model answers with.

One JSON object per line::

    {"id": "capital-1", "prompt": "The capital of Australia is", "hallucination": "Sydney",
     "faithful": "Canberra", "chat_template": false}

Only ``prompt`` and ``hallucination`` are required. Each becomes a case record without causes (scored by
the ground-truth-free metrics only):

- ``prompt_ids``: the prompt as the model reads it, inside the tokenizer's chat template when
  ``chat_template`` is true; only the user prompt's own tokens are editable (the template's, and special
  tokens written in the prompt, are fixed);
- ``target_ids``: the hallucinated string tokenized as the model would continue;
- ``target_text``: the string itself (for substring detection in sampled responses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from halbench.external.jsonl import duplicate_ids, raise_problems, valid_lines

FAMILY = "external"
SENTINEL = "\x00HALBENCH_USER_PROMPT\x00"


class TextCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: Annotated[str, Field(min_length=1)]
    hallucination: Annotated[str, Field(min_length=1)]
    faithful: str | None = None
    chat_template: bool = False
    id: Annotated[str, Field(min_length=1, pattern=r"^\S+$")] | None = None
    split: Literal["dev", "test"] = "test"


class TextCaseError(ValueError):
    """A text case cannot be tokenized as asked (no chat template, an empty prompt...)."""


def read_text_cases(path: Path) -> list[TextCase]:
    """Every case of ``path``; all malformed lines reported at once, each with file, line and field."""
    cases, problems = [], []
    for n, case in valid_lines(path, TextCase, problems):
        cases.append(case.model_copy(update={"id": case.id or f"case-{n:04d}"}))
    raise_problems(path, problems + duplicate_ids(path, [c.id for c in cases]))
    return cases


# ------------------------------------------------------------------------------------------ tokenization


def _encode(tok, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"]) if text else []


def prompt_parts(tok, case: TextCase) -> tuple[list[int], list[int], list[int], str]:
    """``(before, prompt, after, text)``: fixed ids, the editable prompt's ids, fixed ids, the full text.

    Each part is tokenized on its own, so the editable tokens are exactly the prompt's whatever the
    template (the reference code, too, perturbs the bare prompt and wraps it only to generate).
    """
    body = _encode(tok, case.prompt)
    if not editable_positions(tok, [], body):
        raise TextCaseError(f"case {case.id}: the prompt has no ordinary token to attribute to")
    if case.chat_template:
        if not getattr(tok, "chat_template", None):
            raise TextCaseError(f"case {case.id}: chat_template is true but the tokenizer has no chat template")
        rendered = tok.apply_chat_template(
            [{"role": "user", "content": SENTINEL}], add_generation_prompt=True, tokenize=False
        )
        if rendered.count(SENTINEL) != 1:
            raise TextCaseError(f"case {case.id}: the chat template does not place the user message verbatim")
        head, tail = rendered.split(SENTINEL)
        return _encode(tok, head), body, _encode(tok, tail), head + case.prompt + tail
    full = list(tok(case.prompt, add_special_tokens=True)["input_ids"])
    start = _find(full, body)
    return full[:start], body, [], case.prompt


def _find(seq: list[int], part: list[int]) -> int:
    """Where ``part`` starts in ``seq`` (the specials a tokenizer adds come before it), else 0."""
    for i in range(len(seq) - len(part) + 1):
        if seq[i : i + len(part)] == part:
            return i
    return 0


def continuation_ids(tok, text: str, answer: str, joined: bool) -> list[int]:
    """``answer`` tokenized as the model would write it right after ``text``.

    Tokenizing text and answer together and keeping what follows the text's own tokens gets the
    tokenizer's word-boundary conventions (GPT-2's leading space, SentencePiece's ``▁``) right. Without
    a chat template a space separates them unless one side already has whitespace there.
    """
    answer = answer.strip()
    joiner = "" if joined or not text or text[-1].isspace() else " "
    before = _encode(tok, text)
    both = _encode(tok, text + joiner + answer)
    if both[: len(before)] == before and len(both) > len(before):
        return both[len(before) :]
    return _encode(tok, joiner + answer) or _encode(tok, answer)


def editable_positions(tok, before: list[int], body: list[int]) -> list[int]:
    """The prompt's own positions, less any special token written in it (a ``[BOS]``, a query marker)."""
    from halbench.tasks.bundle import marker_ids

    special = marker_ids(tok)
    return [len(before) + i for i, t in enumerate(body) if t not in special]


def text_record(tok, case: TextCase) -> dict:
    """The case record of ``case`` for the model whose tokenizer is ``tok``."""
    before, body, after, text = prompt_parts(tok, case)
    prompt = before + body + after
    target = continuation_ids(tok, text, case.hallucination, case.chat_template)
    if not target:
        raise TextCaseError(f"case {case.id}: the hallucination tokenizes to nothing")
    faithful = continuation_ids(tok, text, case.faithful, case.chat_template) if case.faithful else None
    return {
        "id": case.id,
        "split": case.split,
        "family": FAMILY,
        "prompt_ids": prompt,
        "prompt_tokens": tok.convert_ids_to_tokens(prompt),
        "target_ids": target,
        "target_tokens": tok.convert_ids_to_tokens(target),
        "target_text": case.hallucination.strip(),
        "faithful_ids": faithful,
        "faithful_tokens": tok.convert_ids_to_tokens(faithful) if faithful else None,
        "causes": [],
        "editable": editable_positions(tok, before, body),
        "decoys": [],
        "entity": [],
        "verification": {},
    }
