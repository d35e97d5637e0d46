"""``tasks verify`` for external tasks: re-check a seeded sample of cases under refills any model has.

A generated task is re-verified against its generator's neutral words and corpus; an external one has
neither, so its causes are checked under the two refill families every model has (see
:class:`halbench.external.spec.ExternalVerification`): the greedy answer is the target, refilling the
causes removes it (necessity), keeping one alternative with every other editable position refilled
keeps it (sufficiency). A case without causes has no claim to check beyond its record: its structure,
and that its target decodes back to the hallucinated string.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import torch

from halbench.case import PublicCase
from halbench.external.tokencases import position_problems
from halbench.replacements import Replacements
from halbench.scoring import Scorer
from halbench.tasks.artifacts import MODEL_DIR

FAMILY_KINDS = {"corpus": ("unigram", "uniform"), "mask": ("mask", "uniform")}


def refill_kind(family: str, reps: Replacements) -> str:
    """The replacement strategy a family stands for with this model: its first choice, else uniform."""
    first, fallback = FAMILY_KINDS[family]
    available = reps.has_unigram if first == "unigram" else reps.mask_id is not None
    return first if available else fallback


def reverify_external(
    manifest: dict, model_folder: Path, records: list[dict], sample: int = 32, seed: int = 0
) -> tuple[list[str], int]:
    """``(problems, cases re-verified)`` for an external instance whose hashes were already checked."""
    from transformers import AutoTokenizer

    from halbench.quiet import quiet_transformers
    from halbench.tasks.bundle import load_model, load_unigram, replacements_for

    settings = (manifest.get("external") or {}).get("verification") or {}
    model = load_model(Path(model_folder) / MODEL_DIR, torch.device("cpu"))
    with quiet_transformers():
        tok = AutoTokenizer.from_pretrained(Path(model_folder) / MODEL_DIR)
    vocab = model.get_input_embeddings().num_embeddings
    problems = [f"case {r.get('id', '?')}: {p}" for r in records for p in _structure(r, vocab)]
    if problems:
        return problems, 0
    reps = replacements_for(model, tok, load_unigram(Path(model_folder), vocab))
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(records), size=min(sample, len(records)), replace=False).tolist())
    for i in picked:
        record = records[i]
        if record["causes"]:
            problems += check_causes(model, tok, reps, record, settings, seed)
        else:
            problems += _round_trip(tok, record)
    return problems, len(picked)


def _structure(record: dict, vocab: int) -> list[str]:
    missing = [k for k in ("id", "split", "prompt_ids", "target_ids", "causes", "editable") if k not in record]
    if missing:
        return [f"missing fields {missing}"]
    record = {"decoys": [], "entity": [], "faithful_ids": None, "prompt_tokens": None, **record}
    return position_problems(record, vocab)


def _round_trip(tok, record: dict) -> list[str]:
    """A text case's target must decode back to its hallucinated string (ignoring case and spacing)."""
    text = record.get("target_text")
    if not text:
        return []
    decoded = tok.decode(record["target_ids"], skip_special_tokens=True)
    if " ".join(text.lower().split()) not in " ".join(decoded.lower().split()):
        return [f"case {record['id']}: target_ids decode to {decoded!r}, not the hallucination {text!r}"]
    return []


def check_causes(model, tok, reps: Replacements, record: dict, settings: dict, seed: int) -> list[str]:
    """Greedy, necessity and sufficiency of one case under each configured refill family."""
    scorer = Scorer(model, PublicCase.from_record(record), reps, budget=None, tokenizer=tok)
    cid, out = record["id"], []
    if not scorer.target_scores(scorer.prompt[None])[1][0]:
        out.append(f"case {cid}: the greedy answer is not the target")
    n = int(settings.get("refills", 16))
    editable = list(record["editable"])
    union = sorted({p for alt in record["causes"] for p in alt})
    for f, family in enumerate(settings.get("families") or ("corpus", "mask")):
        kind = refill_kind(family, reps)
        rng = np.random.default_rng([seed, zlib.crc32(str(cid).encode()), f])
        lost = 1.0 - _keeps(scorer, reps, rng, union, n, kind)
        suff = min(_keeps(scorer, reps, rng, [p for p in editable if p not in set(alt)], n, kind)
                   for alt in record["causes"])  # fmt: skip
        for check, rate in (("necessity", lost), ("sufficiency", suff)):
            limit = float(settings.get(check, 0.75))
            if rate < limit:
                out.append(f"case {cid}: {family} ({kind} refills): {check} {rate:.2f} is below {limit:.2f}")
    return out


def _keeps(scorer: Scorer, reps: Replacements, rng: np.random.Generator, refill: list[int], n: int, kind: str):
    """Share of ``n`` rows with ``refill`` refilled whose greedy answer is still the target."""
    mask = np.zeros((n, scorer.case.length), dtype=bool)
    mask[:, refill] = True
    rows = reps.sample(rng, scorer.prompt, mask, kind)
    return float(scorer.target_scores(rows)[1].mean())
