"""Cost-versus-accuracy plots as inline SVG (matplotlib), with the Pareto front of the points drawn.

Output is deterministic (fixed SVG id salt, no date) so rebuilding an unchanged site changes no byte.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt


@dataclass(frozen=True)
class Point:
    method: str
    budget: int
    rows: float  # mean model rows per case actually spent
    value: float  # the metric's mean


def pareto_front(points: list[Point]) -> list[Point]:
    """Points no other point beats on both axes (fewer rows and a higher value), cheapest first."""
    front: list[Point] = []
    for point in sorted(points, key=lambda p: (p.rows, -p.value)):
        if not front or point.value > front[-1].value:
            front.append(point)
    return front


def cost_plot(points: list[Point], title: str, ylabel: str = "average precision") -> str:
    """An SVG document: one line per method across its budgets, the Pareto front as a dashed step line."""
    with plt.rc_context({"svg.hashsalt": "halbench", "svg.fonttype": "none", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=96)
        colors = plt.get_cmap("tab20")
        for i, method in enumerate(sorted({p.method for p in points})):
            mine = sorted((p for p in points if p.method == method), key=lambda p: p.budget)
            xs, ys = [max(p.rows, 1.0) for p in mine], [p.value for p in mine]
            ax.plot(xs, ys, marker="o", ms=4, lw=1.2, color=colors(i % 20), label=method)
        front = pareto_front(points)
        if front:
            ax.step(
                [max(p.rows, 1.0) for p in front],
                [p.value for p in front],
                where="post",
                color="black",
                lw=1.0,
                ls="--",
                label="Pareto front",
            )
        ax.set_xscale("log")
        ax.set_xticks([1, 4, 16, 64, 256, 1024], labels=["1", "4", "16", "64", "256", "1024"])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlim(0.7, 1500)
        ax.set_xlabel("model rows per case (log scale; a backward row counts as two)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        fig.tight_layout()
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]  # drop the XML prolog and doctype for inlining
