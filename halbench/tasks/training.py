"""Training a small decoder-only transformer from scratch on the answer slot of the corpus.

Only the answer after the query is a training target: the model never needs
to predict filler, so all of its capacity goes to facts and associations.
Two architectures: GPT-2 (learned positions, LayerNorm, GELU) and Llama
(RoPE, RMSNorm, SwiGLU), both plain ``transformers`` classes, so a trained
model loads with ``AutoModelForCausalLM`` and nothing else.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerFast,
    get_cosine_schedule_with_warmup,
)

from halbench.tasks.corpus import Example
from halbench.tasks.forward import logits_at, pad_right
from halbench.tasks.spec import ArchSpec, TrainingSpec


@dataclass
class TrainingReport:
    steps: int
    seconds: float
    final_loss: float
    parameters: int


def make_model(spec: ArchSpec, tokenizer: PreTrainedTokenizerFast) -> PreTrainedModel:
    common = {
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": None,
        "pad_token_id": tokenizer.pad_token_id,
        "tie_word_embeddings": True,
    }
    if spec.arch == "gpt2":
        config = GPT2Config(
            n_positions=spec.positions,
            n_embd=spec.width,
            n_layer=spec.layers,
            n_head=spec.heads,
            activation_function="gelu_pytorch_tanh",
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            **common,
        )
        return GPT2LMHeadModel(config)
    config = LlamaConfig(
        hidden_size=spec.width,
        intermediate_size=_swiglu_width(spec.width),
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.heads,
        max_position_embeddings=spec.positions,
        rope_theta=10000.0,
        attention_dropout=0.0,
        **common,
    )
    return LlamaForCausalLM(config)


def _swiglu_width(width: int) -> int:
    """Llama's hidden MLP width: 8/3 of the model width (same parameters as a 4x GELU MLP), a multiple of 8."""
    return max(8, (8 * width // 3 + 7) // 8 * 8)


def encode(examples: list[Example], tokenizer: PreTrainedTokenizerFast) -> tuple[list[list[int]], torch.Tensor]:
    rows = [tokenizer.convert_tokens_to_ids(ex.prompt.tokens) for ex in examples]
    answers = torch.tensor(tokenizer.convert_tokens_to_ids([ex.answer for ex in examples]))
    return rows, answers


def train_model(
    examples: list[Example],
    tokenizer: PreTrainedTokenizerFast,
    arch: ArchSpec,
    spec: TrainingSpec,
    progress: bool = True,
) -> tuple[PreTrainedModel, TrainingReport]:
    """Train deterministically for ``spec.seed`` (on CPU, with ``spec.threads`` threads)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(spec.threads)
    try:
        return _train(examples, tokenizer, arch, spec, progress)
    finally:
        torch.set_num_threads(threads)


def _batches(rows: list[list[int]], order: torch.Tensor, size: int, gen: torch.Generator) -> list[torch.Tensor]:
    """Batches of similar length (sorted within windows of 32 batches): less padding, the same epoch."""
    window = size * 32
    out = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        chunk = chunk[torch.argsort(torch.tensor([len(rows[i]) for i in chunk]), stable=True)]
        out += list(chunk.split(size))
    return [out[i] for i in torch.randperm(len(out), generator=gen)]


def train_step(model, params, opt, rows: list[list[int]], answers: torch.Tensor, pad_id: int) -> torch.Tensor:
    """One optimiser step on a batch (loss on the answer slot only, gradients clipped at 1); returns the loss."""
    ids, last = pad_right(rows, pad_id)
    loss = torch.nn.functional.cross_entropy(logits_at(model, ids, last), answers)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    return loss


@dataclass
class TrainingRun:
    """A seeded model, its optimiser and encoded corpus, ready for ``train_step`` (shared by the build and
    ``benchmarks/build_time.py``, so the benchmark times the build's own steps)."""

    model: PreTrainedModel
    params: list[torch.nn.Parameter]
    opt: torch.optim.Optimizer
    rows: list[list[int]]
    answers: torch.Tensor
    gen: torch.Generator
    total: int  # optimiser steps over every epoch
    pad_id: int

    def epoch(self, batch_size: int) -> list[torch.Tensor]:
        """One epoch's batches of row indices, drawn from the run's generator."""
        return _batches(self.rows, torch.randperm(len(self.rows), generator=self.gen), batch_size, self.gen)

    def step(self, idx: torch.Tensor) -> torch.Tensor:
        return train_step(
            self.model, self.params, self.opt, [self.rows[i] for i in idx], self.answers[idx], self.pad_id
        )


def start_run(examples, tokenizer, arch: ArchSpec, spec: TrainingSpec) -> TrainingRun:
    torch.manual_seed(spec.seed)
    model = make_model(arch, tokenizer)
    rows, answers = encode(examples, tokenizer)
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=spec.lr, weight_decay=spec.weight_decay)
    total = spec.epochs * ((len(rows) + spec.batch_size - 1) // spec.batch_size)
    gen = torch.Generator().manual_seed(spec.seed)
    model.train()
    return TrainingRun(model, params, opt, rows, answers, gen, total, tokenizer.pad_token_id)


def _train(examples, tokenizer, arch, spec, progress):
    run = start_run(examples, tokenizer, arch, spec)
    model, total = run.model, run.total
    sched = get_cosine_schedule_with_warmup(run.opt, spec.warmup_steps, total)
    start, loss_ema, steps = time.perf_counter(), float("nan"), 0
    bar = tqdm(total=total, desc="train", unit="step", disable=not progress, leave=False)
    for _ in range(spec.epochs):
        for idx in run.epoch(spec.batch_size):
            loss = run.step(idx)
            sched.step()
            steps += 1
            loss_ema = loss.item() if loss_ema != loss_ema else 0.95 * loss_ema + 0.05 * loss.item()
            bar.update(1)
            bar.set_postfix(loss=f"{loss_ema:.3f}", refresh=False)
    bar.close()
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    return model, TrainingReport(steps, time.perf_counter() - start, loss_ema, n_params)
