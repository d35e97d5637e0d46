"""What a trace shows: a terminal summary and a self-contained HTML report.

The report is one file with inline CSS and JS that loads nothing from the network (it is opened from
disk, often offline, and may be mailed around); every piece of text in it, prompts and token strings
included, goes through jinja2's autoescaping, and data reach the page as escaped attributes, never as
script.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from halbench import __version__
from halbench.atomic import atomic_write_text
from halbench.trace.run import Trace

TEMPLATE = "report.html.j2"
TOP = 10
SERIES = (
    ("s_rep", "greedy reproduction, random refills", "#dc2626"),
    ("s_rep_lm", "greedy reproduction, model refills", "#2563eb"),
    ("p_rep", "probability, random refills", "#6b7280"),
)


@dataclass(frozen=True)
class Cell:
    """One prompt position in the heat map."""

    pos: int
    text: str
    score: float
    heat: float  # 0..1 among editable positions
    editable: bool
    chosen: bool  # in the method's subsequence


@dataclass(frozen=True)
class BeamRow:
    rank: int
    tokens: list[str]
    positions: list[int]
    score: float
    support: int


def shown(text: str) -> str:
    """A token's text with its whitespace visible: newlines as ``↵``, tabs as ``⇥``."""
    return text.replace("\n", "↵").replace("\t", "⇥") or "∅"


def cells(trace: Trace) -> list[Cell]:
    editable = set(trace.editable)
    values = np.asarray([trace.scores[p] for p in sorted(editable)], dtype=np.float64)
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    chosen = set(trace.subsequence or ())

    def heat(score: float) -> float:
        return (score - low) / (high - low) if high > low else 0.0

    return [
        Cell(p, shown(text), float(trace.scores[p]), heat(float(trace.scores[p])) if p in editable else 0.0,
             p in editable, p in chosen)
        for p, text in enumerate(trace.tokens)
    ]  # fmt: skip


def beam_by_level(trace: Trace) -> list[tuple[int, list[BeamRow]]]:
    """The kept candidates of each search level, best first (empty when the method reports no beam)."""
    ranked = getattr(trace.search, "ranked", None) or []
    levels: dict[int, list[BeamRow]] = {}
    for sub in ranked:
        rows = levels.setdefault(int(sub.level), [])
        rows.append(BeamRow(len(rows) + 1, [shown(trace.token_text(t)) for t in sub.tokens],
                            [int(p) for p in sub.positions], float(sub.score), int(sub.support)))  # fmt: skip
    return sorted(levels.items())


def top_subsequences(trace: Trace, top: int = TOP) -> list[tuple[int, int, BeamRow]]:
    """``(rank, level, row)`` of the best ``top`` candidates over all levels."""
    ranked = getattr(trace.search, "ranked", None) or []
    return [
        (k + 1, int(sub.level), BeamRow(k + 1, [shown(trace.token_text(t)) for t in sub.tokens],
                                        [int(p) for p in sub.positions], float(sub.score), int(sub.support)))
        for k, sub in enumerate(ranked[:top])
    ]  # fmt: skip


def curves(trace: Trace) -> list[dict]:
    """Each reproducibility series over alpha that was computed: name, label, colour, values."""
    out = []
    for name, label, colour in SERIES:
        values = [trace.metrics.get(f"{name}@{a}") for a in trace.alphas]
        if all(v is not None for v in values):
            out.append({"name": name, "label": label, "colour": colour, "values": [float(v) for v in values]})
    return out


def chart(trace: Trace, width: int = 440, height: int = 240, pad: int = 40) -> dict:
    """SVG coordinates of the curves: alpha 0..1 across, rate 0..1 up."""

    def x(alpha: float) -> float:
        return round(pad + alpha * (width - 2 * pad), 1)

    def y(value: float) -> float:
        return round(height - pad - value * (height - 2 * pad), 1)

    series = []
    for curve in curves(trace):
        points = [(x(a), y(v), a, v) for a, v in zip(trace.alphas, curve["values"], strict=True)]
        series.append({**curve, "points": points, "path": " ".join(f"{px},{py}" for px, py, _, _ in points)})
    ticks = [(x(t), y(t), t) for t in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return {"width": width, "height": height, "pad": pad, "series": series, "ticks": ticks}


# ----------------------------------------------------------------------------------------------- terminal


def summary_text(trace: Trace, top: int = TOP) -> str:
    """The terminal summary: the case, the top subsequences, the per-token scores, the reproducibility."""
    r, s = trace.record, trace.settings
    lines = [
        f"halbench trace: {s.method} on {trace.model_path} ({trace.arch}, {trace.parameters:,} parameters, "
        f"{trace.device})",
        f"prompt: {len(r['prompt_ids'])} tokens, {len(trace.editable)} editable"
        f"{' (inside the chat template)' if s.chat_template else ''}",
        f"hallucination: {trace.hallucination!r} = {len(r['target_ids'])} token(s); "
        f"p = {trace.p_target:.4g}, greedy answer is it: {'yes' if trace.greedy_hit else 'no'}",
        f"greedy continuation: {trace.greedy_text!r}",
        f"method: {trace.cost['rows']} of {s.budget} rows in {trace.seconds:.2f} s",
        "",
    ]
    best = top_subsequences(trace, top)
    if best:
        lines.append("top subsequences (score: mean hallucination of the perturbed prompts containing it; "
                     "support: how many)")  # fmt: skip
        lines.append(f"  {'rank':>4}  {'level':>5}  {'score':>9}  {'support':>7}  tokens")
        for rank, level, row in best:
            tokens = " ".join(repr(t) for t in row.tokens)
            lines.append(f"  {rank:>4}  {level:>5}  {row.score:>9.4g}  {row.support:>7}  {tokens}")
    elif trace.subsequence:
        lines.append(f"subsequence: positions {list(trace.subsequence)} (the method reports no search beam)")
    else:
        lines.append("subsequence: none reported by this method")
    lines += ["", "per-token scores (prompt order; * in the subsequence, fixed positions are not scored)"]
    shown_cells = cells(trace)
    width = min(28, max(len(repr(c.text)) for c in shown_cells))
    for c in shown_cells:
        text = repr(c.text) if len(repr(c.text)) <= width else repr(c.text)[: width - 1] + "…"
        if c.editable:
            bar = "█" * round(c.heat * 20)
            lines.append(f"  {c.pos:>4} {'*' if c.chosen else ' '} {text:<{width}}  {c.score:>8.4f}  {bar}")
        else:
            lines.append(f"  {c.pos:>4}   {text:<{width}}  {'fixed':>8}")
    lines += ["", f"reproducibility (top alpha of the editable prompt kept, the rest refilled; {s.refills} random"
              f"{f', {s.lm_refills} model' if s.lm_refills else ''} refills)"]  # fmt: skip
    names = [c["name"] for c in curves(trace)]
    lines.append(f"  {'alpha':>5}  " + "  ".join(f"{n:>8}" for n in names))
    for a in trace.alphas:
        lines.append(f"  {a:>5}  " + "  ".join(f"{trace.metrics[f'{n}@{a}']:>8.3f}" for n in names))
    if "comprehensiveness" in trace.metrics:
        lines.append(f"  comprehensiveness (probability drop with the top 25% refilled): "
                     f"{trace.metrics['comprehensiveness']:.4g}")  # fmt: skip
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- HTML


def environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(Path(__file__).parent),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(trace: Trace) -> str:
    template = environment().get_template(TEMPLATE)
    return template.render(
        trace=trace,
        cells=cells(trace),
        levels=beam_by_level(trace),
        top=top_subsequences(trace),
        chart=chart(trace),
        version=__version__,
        target_tokens=[shown(trace.token_text(t)) for t in trace.record["target_ids"]],
    )


def write_report(trace: Trace, path: Path) -> None:
    atomic_write_text(Path(path), render_html(trace))
