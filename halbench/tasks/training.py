"""Training a small GPT-2 from scratch on the answer slot of the corpus.

Only the answer after the query is a training target: the model never needs
to predict filler, so all of its capacity goes to facts and associations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, get_cosine_schedule_with_warmup

from halbench.tasks.corpus import Example
from halbench.tasks.forward import logits_at, pad_right
from halbench.tasks.spec import ModelSpec, TrainingSpec


@dataclass
class TrainingReport:
    steps: int
    seconds: float
    final_loss: float
    parameters: int


def make_model(spec: ModelSpec, tokenizer: PreTrainedTokenizerFast) -> GPT2LMHeadModel:
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=spec.n_positions,
        n_embd=spec.n_embd,
        n_layer=spec.n_layer,
        n_head=spec.n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=None,
        pad_token_id=tokenizer.pad_token_id,
    )
    return GPT2LMHeadModel(config)


def encode(examples: list[Example], tokenizer: PreTrainedTokenizerFast) -> tuple[list[list[int]], torch.Tensor]:
    rows = [tokenizer.convert_tokens_to_ids(ex.prompt.tokens) for ex in examples]
    answers = torch.tensor(tokenizer.convert_tokens_to_ids([ex.answer for ex in examples]))
    return rows, answers


def train_model(
    examples: list[Example],
    tokenizer: PreTrainedTokenizerFast,
    model_spec: ModelSpec,
    spec: TrainingSpec,
    progress: bool = True,
) -> tuple[GPT2LMHeadModel, TrainingReport]:
    """Train deterministically for ``spec.seed`` (on CPU, with ``spec.threads`` threads)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(spec.threads)
    try:
        return _train(examples, tokenizer, model_spec, spec, progress)
    finally:
        torch.set_num_threads(threads)


def _train(examples, tokenizer, model_spec, spec, progress):
    torch.manual_seed(spec.seed)
    model = make_model(model_spec, tokenizer)
    rows, answers = encode(examples, tokenizer)
    params = [p for p in model.parameters()]
    opt = torch.optim.AdamW(params, lr=spec.lr, weight_decay=spec.weight_decay)
    per_epoch = (len(rows) + spec.batch_size - 1) // spec.batch_size
    total = per_epoch * spec.epochs
    sched = get_cosine_schedule_with_warmup(opt, spec.warmup_steps, total)
    gen = torch.Generator().manual_seed(spec.seed)
    model.train()
    start, loss_ema = time.perf_counter(), float("nan")
    bar = tqdm(total=total, desc="train", unit="step", disable=not progress, leave=False)
    for _ in range(spec.epochs):
        order = torch.randperm(len(rows), generator=gen)
        for b in range(per_epoch):
            idx = order[b * spec.batch_size : (b + 1) * spec.batch_size]
            ids, last = pad_right([rows[i] for i in idx], tokenizer.pad_token_id)
            loss = torch.nn.functional.cross_entropy(logits_at(model, ids, last), answers[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            loss_ema = loss.item() if loss_ema != loss_ema else 0.95 * loss_ema + 0.05 * loss.item()
            bar.update(1)
            bar.set_postfix(loss=f"{loss_ema:.3f}", refresh=False)
    bar.close()
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    return model, TrainingReport(total, time.perf_counter() - start, loss_ema, n_params)
