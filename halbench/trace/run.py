"""Diagnosing one hallucination of one model: attribute it, then measure how well the attribution reproduces it.

Why not a one-case task instance: ``halbench trace`` answers a user's question about their own model and
prompt, right away, so it builds the case in memory (as an external text case would be built: same
tokenization, same editable positions) and runs the same method, scorer and reproducibility metrics
that ``halbench eval`` runs, with the same seeds for the same case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from halbench.case import PublicCase
from halbench.external.modelfolder import ModelFolderError, locate_model
from halbench.external.textcases import TextCase, TextCaseError, text_record
from halbench.methods.base import MethodError, get_method
from halbench.metrics.faithfulness import ALPHAS, case_draws, faithfulness_metrics
from halbench.runner import case_rng, stored_scores
from halbench.scoring import Scorer

CASE_ID = "trace"


class TraceError(RuntimeError):
    """The trace cannot run: no model at the path, a method that cannot attribute this case, ..."""


@dataclass(frozen=True)
class TraceSettings:
    method: str = "sat"
    params: dict = field(default_factory=dict)
    budget: int = 256
    refills: int = 16
    lm_refills: int = 16
    seed: int = 0
    device: str = "auto"
    chat_template: bool = False


@dataclass
class Trace:
    """Everything the summary and the report show."""

    model_path: str
    arch: str
    parameters: int
    device: str
    prompt: str
    hallucination: str
    settings: TraceSettings
    method_params: dict
    record: dict
    tokens: list[str]  # each prompt position's text, as the tokenizer decodes it alone
    scores: np.ndarray
    subsequence: tuple[int, ...] | None
    search: object | None  # a sat_search.SearchResult when the method reports its beam
    metrics: dict[str, float]
    p_target: float
    greedy_hit: bool
    greedy_text: str
    cost: dict
    seconds: float
    token_text: Callable[[int], str] = field(repr=False, default=str)

    @property
    def editable(self) -> list[int]:
        return list(self.record["editable"])

    @property
    def alphas(self) -> tuple[float, ...]:
        return ALPHAS


class _CountingScorer(Scorer):
    """A Scorer that reports every charged row, for the progress bar."""

    def __init__(self, *args, on_rows: Callable[[int], object], **kwargs):
        super().__init__(*args, **kwargs)
        self._on_rows = on_rows

    def _charge(self, forward: int, backward: int = 0) -> None:
        super()._charge(forward, backward)
        self._on_rows(forward + 2 * backward)


def metric_rows(settings: TraceSettings, greedy_tokens: int) -> int:
    """Model rows the baseline and the reproducibility metrics take at most (the bar's second part)."""
    per_alpha = settings.refills + settings.lm_refills
    return 2 + greedy_tokens + (1 if settings.lm_refills else 0) + len(ALPHAS) * per_alpha + settings.refills


def run_trace(model_path: Path | str, prompt: str, hallucination: str, settings: TraceSettings,
              progress: bool = True) -> Trace:  # fmt: skip
    """Load the model, build the case, attribute it under the budget, and score the attribution."""
    from tqdm.auto import tqdm
    from transformers import AutoTokenizer

    from halbench.quiet import quiet_transformers
    from halbench.scoring import resolve_device
    from halbench.tasks.bundle import load_model, load_unigram, replacements_for

    try:
        location = locate_model(model_path)
        method = get_method(settings.method, **settings.params)
        device = resolve_device(settings.device)
    except (ModelFolderError, MethodError, ValueError) as exc:
        raise TraceError(str(exc)) from None
    if method.uses_dev:
        raise TraceError(f"method {settings.method} learns from a task's dev split first; a trace has none")
    with quiet_transformers():
        tok = AutoTokenizer.from_pretrained(location.weights)
    model = load_model(location.weights, device)
    try:
        case = TextCase(id=CASE_ID, prompt=prompt, hallucination=hallucination,
                        chat_template=settings.chat_template)  # fmt: skip
        record = text_record(tok, case)
    except (TextCaseError, ValueError) as exc:
        raise TraceError(str(exc)) from None
    vocab = model.get_input_embeddings().num_embeddings
    unigram = load_unigram(location.unigram.parent if location.unigram else None, vocab)
    reps = replacements_for(model, tok, unigram)
    public = PublicCase.from_record(record)
    greedy_tokens = max(len(public.target_ids), 8)
    total = settings.budget + metric_rows(settings, greedy_tokens)
    bar = tqdm(total=total, desc=f"trace ({settings.method})", unit="row", disable=None if progress else True)
    try:
        scorer = _CountingScorer(model, public, reps, settings.budget, tokenizer=tok, on_rows=bar.update)
        start = time.perf_counter()
        try:
            attribution = method.attribute(public, scorer, case_rng(settings.seed, CASE_ID))
            attribution.validate(public)
        except Exception as exc:  # a method's failure is reported, with its reason
            raise TraceError(f"{settings.method} failed: {type(exc).__name__}: {exc}") from None
        seconds = time.perf_counter() - start
        scores = stored_scores(attribution.scores)
        evaluator = _CountingScorer(model, public, reps, None, tokenizer=tok, on_rows=bar.update)
        logprob, hit = evaluator.target_scores(evaluator.prompt[None])
        greedy = evaluator.generate(evaluator.prompt[None], new_tokens=greedy_tokens)
        draws = case_draws(evaluator, settings.refills, settings.seed, settings.lm_refills)
        metrics = faithfulness_metrics(scores, evaluator, draws)
    finally:
        bar.close()

    def token_text(token_id: int) -> str:
        return tok.decode([int(token_id)])

    return Trace(
        model_path=str(model_path),
        arch=location.model_type,
        parameters=sum(p.numel() for p in model.parameters()),
        device=str(device),
        prompt=prompt,
        hallucination=hallucination,
        settings=settings,
        method_params=dict(method.params),
        record=record,
        tokens=[token_text(i) for i in record["prompt_ids"]],
        scores=scores,
        subsequence=attribution.subsequence,
        search=attribution.extras.get("search"),
        metrics=metrics,
        p_target=float(np.exp(logprob[0])),
        greedy_hit=bool(hit[0]),
        greedy_text=tok.decode([int(i) for i in greedy[0]], skip_special_tokens=True),
        cost=scorer.cost.as_record(),
        seconds=seconds,
        token_text=token_text,
    )
