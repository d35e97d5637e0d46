"""``halbench trace``: diagnose one hallucination of one model, in the terminal and in an HTML report."""

from __future__ import annotations

from pathlib import Path

import click

from halbench.cli.eval_cmd import parse_params
from halbench.cli.paths import out_problem


@click.command("trace")
@click.option(
    "--model",
    "model_path",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="a local Hugging Face causal LM folder (or a halbench model folder with model/ inside)",
)
@click.option("--prompt", required=True, help="the prompt, as the user wrote it")
@click.option("--hallucination", required=True, help="the hallucinated string the model answers with")
@click.option("--method", default="sat", show_default=True, help="attribution method (halbench methods list)")
@click.option("--param", "params", multiple=True, help="method hyper-parameter KEY=VALUE (repeatable)")
@click.option("--budget", type=click.IntRange(min=1), default=256, show_default=True, help="model rows for the method")
@click.option("--chat-template", is_flag=True, help="wrap the prompt in the tokenizer's chat template")
@click.option("--refills", type=click.IntRange(min=1), default=16, show_default=True,
              help="random refills per alpha for the reproducibility curve")  # fmt: skip
@click.option("--lm-refills", type=click.IntRange(min=0), default=16, show_default=True,
              help="model-written refills per alpha (0: skip that curve)")  # fmt: skip
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("trace-report.html"),
              show_default=True, help="where to write the HTML report")  # fmt: skip
@click.option("--progress/--no-progress", default=True)
def trace(model_path, prompt, hallucination, method, params, budget, chat_template, refills, lm_refills, seed,
          device, out, progress) -> None:  # fmt: skip
    """Which part of PROMPT makes the model at --model say --hallucination?

    Runs the method under the budget, prints the top subsequences and per-token scores, measures how often
    keeping the top-scored tokens (alpha 0.25, 0.5, 0.75 of the prompt) brings the hallucination back, and
    writes a self-contained HTML report (heat map, search beam by level, reproducibility curve).
    """
    from halbench.runtime import configure_threads
    from halbench.trace.report import summary_text, write_report
    from halbench.trace.run import TraceError, TraceSettings, run_trace

    problem = out_problem(out, folder=False)
    if problem:
        raise click.UsageError(problem)  # before the run, not after it
    configure_threads()
    settings = TraceSettings(method, parse_params(params), budget, refills, lm_refills, seed, device, chat_template)
    try:
        result = run_trace(model_path, prompt, hallucination, settings, progress=progress)
    except TraceError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(summary_text(result))
    write_report(result, out)
    click.echo(f"\nreport: {out}")
