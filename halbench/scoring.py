"""The Scorer: the only door from an attribution method to the model.

Every model call a method makes goes through here, batched and counted, so
methods compete under the same budget of model rows per case (a forward row
costs one, a backward row two) and cannot see the ground truth. The target is
teacher-forced after the prompt, so a row's hallucination score is exact and
costs one forward row.

Numbers do not depend on batch composition: every call runs in chunks whose
row count is a multiple of ``pad_rows`` (the last chunk padded with copies of
its last row), and a row's result never depends on the other rows of a chunk
of that shape. Which rows share a call, how many there are and how the caller
batched them therefore leave each row's value bit-identical.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from halbench.case import PublicCase
from halbench.replacements import Replacements


@contextlib.contextmanager
def _eager_attention(model: torch.nn.Module) -> Iterator[None]:
    """Eager attention for the duration (fused kernels do not return attention weights)."""
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        yield
    finally:
        model.set_attn_implementation(before)


class BudgetExceeded(RuntimeError):
    """A method asked for more model rows than its per-case budget allows."""


@dataclass
class Cost:
    forward_rows: int = 0
    backward_rows: int = 0
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        """Budget units: a backward row counts as two forward rows."""
        return self.forward_rows + 2 * self.backward_rows

    def as_record(self) -> dict:
        return {
            "forward_rows": self.forward_rows,
            "backward_rows": self.backward_rows,
            "rows": self.rows,
            "seconds": round(self.seconds, 4),
        }


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda requested but no CUDA device is available")
    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise ValueError(f"unknown device {name!r} (auto, cpu, cuda or cuda:N)")
    return torch.device(name)


def padded_chunks(rows: torch.Tensor, batch_rows: int, pad_rows: int) -> Iterator[tuple[torch.Tensor, int]]:
    """``(chunk, real)``: chunks of at most ``batch_rows`` rows, each padded to a multiple of ``pad_rows``."""
    batch_rows = max(pad_rows, batch_rows // pad_rows * pad_rows)
    for start in range(0, rows.shape[0], batch_rows):
        chunk = rows[start : start + batch_rows]
        real = chunk.shape[0]
        extra = -real % pad_rows
        if extra:
            chunk = torch.cat([chunk, chunk[-1:].expand(extra, *chunk.shape[1:])])
        yield chunk, real


class _EmbeddingGrad(torch.autograd.Function):
    """A differentiable ``log p(target | embeds)`` whose gradient was computed with the value.

    The model is called once per call with value and gradient together (forward + backward, charged
    as such), so a method holding only this function, in another process, gets exact gradients.
    """

    @staticmethod
    def forward(ctx, embeds: torch.Tensor, value_and_grad: Callable) -> torch.Tensor:
        value, grad = value_and_grad(embeds.detach())
        ctx.save_for_backward(grad)
        return value

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (grad,) = ctx.saved_tensors
        return grad_out.reshape(-1, *([1] * (grad.ndim - 1))) * grad, None


class Scorer:
    """Batched, counting, budgeted access to one case's model, for one case at a time."""

    def __init__(
        self,
        model: torch.nn.Module,
        case: PublicCase,
        replacements: Replacements,
        budget: int | None = 1024,
        batch_rows: int = 256,
        pad_rows: int = 8,
        tokenizer=None,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.case = case
        self.replacements = replacements
        self.budget = budget
        self.batch_rows = batch_rows
        self.pad_rows = pad_rows
        self.cost = Cost()
        self.device = next(model.parameters()).device
        self.prompt = np.asarray(case.prompt_ids, dtype=np.int64)
        self._target = torch.tensor(case.target_ids, dtype=torch.long, device=self.device)

    # -- budget -----------------------------------------------------------------------------------------
    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else self.budget - self.cost.rows

    def rows_left(self, cap: int) -> int:
        """Rows a method may still spend, at most ``cap`` (``cap`` itself when there is no budget)."""
        return cap if self.budget is None else max(0, min(cap, self.remaining))

    def _charge(self, forward: int, backward: int = 0) -> None:
        needed = forward + 2 * backward
        if self.budget is not None and self.cost.rows + needed > self.budget:
            raise BudgetExceeded(
                f"case {self.case.id}: {needed} more rows would exceed the budget of {self.budget} "
                f"({self.cost.rows} used)"
            )
        self.cost.forward_rows += forward
        self.cost.backward_rows += backward

    def _ids(self, input_ids) -> torch.Tensor:
        ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
        if ids.ndim != 2 or ids.shape[1] != len(self.prompt):
            raise ValueError(f"input_ids must have shape [B, {len(self.prompt)}], got {tuple(ids.shape)}")
        vocab = self.model.get_input_embeddings().num_embeddings
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
            raise ValueError(f"input_ids must be token ids in [0, {vocab})")
        return ids

    # -- teacher-forced target scores ---------------------------------------------------------------------
    def _with_target(self, ids: torch.Tensor) -> torch.Tensor:
        if len(self._target) == 1:
            return ids
        tail = self._target[:-1].expand(ids.shape[0], -1)
        return torch.cat([ids, tail], dim=1)

    def _target_logits(self, full: torch.Tensor, length: int) -> torch.Tensor:
        """Logits at the positions that predict the target tokens only (the LM head nowhere else)."""
        hidden = self.model.base_model(input_ids=full).last_hidden_state
        return self.model.get_output_embeddings()(hidden[:, length - 1 : length - 1 + len(self._target)]).float()

    def _logprob_from_logits(self, logits: torch.Tensor, length: int) -> torch.Tensor:
        """Sum of the target tokens' log-probabilities, read at the positions that predict them."""
        steps = logits[:, length - 1 : length - 1 + len(self._target)].float().log_softmax(-1)
        picked = steps.gather(-1, self._target.expand(logits.shape[0], -1).unsqueeze(-1)).squeeze(-1)
        return picked.sum(-1)

    def target_scores(self, input_ids: np.ndarray | torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """Per row: teacher-forced ``log p(target)`` and whether greedy decoding reproduces the target.

        Greedy decoding emits the target exactly when, at every target position, the target token is the
        argmax given the target's own prefix: the teacher-forced logits decide it, in the same forward.
        """
        ids = self._ids(input_ids)
        self._charge(ids.shape[0])
        start, values, hits = time.perf_counter(), [], []
        with torch.inference_mode():
            for chunk, real in padded_chunks(ids, self.batch_rows, self.pad_rows):
                logits = self._target_logits(self._with_target(chunk.to(self.device)), ids.shape[1])
                values.append(self._logprob_from_logits(logits, 1)[:real].cpu())
                hits.append((logits.argmax(-1) == self._target[None, :]).all(-1)[:real].cpu())
        self.cost.seconds += time.perf_counter() - start
        if not values:
            return np.zeros(0), np.zeros(0, dtype=bool)
        return torch.cat(values).numpy().astype(np.float64), torch.cat(hits).numpy()

    def target_logprob(self, input_ids: np.ndarray | torch.Tensor) -> np.ndarray:
        """Teacher-forced log p(target | row) for each row of ``input_ids`` ``[B, L]``."""
        return self.target_scores(input_ids)[0]

    def next_token_logprobs(self, input_ids: np.ndarray | None = None) -> np.ndarray:
        """``[B, L, V]`` log-probabilities of the next token after every prefix of each row (forward rows)."""
        ids = self._ids(self.prompt[None] if input_ids is None else input_ids)
        self._charge(ids.shape[0])
        start, out = time.perf_counter(), []
        with torch.inference_mode():
            for chunk, real in padded_chunks(ids, self.batch_rows, self.pad_rows):
                logits = self.model(input_ids=chunk.to(self.device)).logits.float()
                out.append(logits[:real].log_softmax(-1).cpu())
        self.cost.seconds += time.perf_counter() - start
        return torch.cat(out).numpy().astype(np.float64)

    def target_prob(self, input_ids: np.ndarray | torch.Tensor) -> np.ndarray:
        return np.exp(self.target_logprob(input_ids))

    # -- generation ------------------------------------------------------------------------------------------
    def generate(
        self,
        input_ids: np.ndarray,
        rng: np.random.Generator | None = None,
        new_tokens: int | None = None,
        temperature: float = 1.0,
    ) -> np.ndarray:
        """``new_tokens`` (default: the target's length) generated after each row: ``[B, T]``.

        Greedy when ``rng`` is None, else ancestral sampling at ``temperature`` seeded from ``rng``.
        Charged one forward row per row and generated token.
        """
        ids = self._ids(input_ids)
        steps = len(self._target) if new_tokens is None else int(new_tokens)
        if steps < 1 or not temperature > 0:
            raise ValueError("generate needs new_tokens >= 1 and temperature > 0")
        self._charge(ids.shape[0] * steps)
        start, out = time.perf_counter(), []
        gen = None if rng is None else torch.Generator(device=self.device).manual_seed(int(rng.integers(2**62)))
        head = self.model.get_output_embeddings()
        with torch.inference_mode():
            for chunk, real in padded_chunks(ids, self.batch_rows, self.pad_rows):
                seq = chunk.to(self.device)
                for _ in range(steps):
                    logits = head(self.model.base_model(input_ids=seq).last_hidden_state[:, -1]).float()
                    if gen is None:
                        nxt = logits.argmax(-1, keepdim=True)
                    else:
                        nxt = torch.multinomial((logits / temperature).softmax(-1), 1, generator=gen)
                    seq = torch.cat([seq, nxt], dim=1)
                out.append(seq[:real, chunk.shape[1] :].cpu())
        self.cost.seconds += time.perf_counter() - start
        return torch.cat(out).numpy()

    def sampled_hallucination(
        self,
        input_ids: np.ndarray,
        rng: np.random.Generator,
        samples: int = 1,
        temperature: float = 1.0,
        match: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> np.ndarray:
        """Per row, the share of ``samples`` generated continuations that hallucinate (the paper's estimate).

        ``match`` maps generated ids ``[B, T]`` to booleans; by default a continuation hallucinates when
        it equals the target. Its expectation is :meth:`target_prob` (at temperature 1); this is the
        sampled estimate, for models whose hallucination is a property of free text.
        """
        rows = np.repeat(np.asarray(input_ids), samples, axis=0)
        generated = self.generate(rows, rng, temperature=temperature)
        hits = match(generated) if match else (generated == self._target.cpu().numpy()[None, :]).all(1)
        return np.asarray(hits, dtype=np.float64).reshape(-1, samples).mean(1)

    def decode(self, ids: np.ndarray) -> list[str]:
        """Text of each row of generated ids ``[B, T]`` (free; needs the model's tokenizer)."""
        if self.tokenizer is None:
            raise ValueError("this scorer has no tokenizer to decode with")
        return [self.tokenizer.decode([int(i) for i in row], skip_special_tokens=True) for row in np.asarray(ids)]

    # -- gradients and attention ----------------------------------------------------------------------------
    def embedding_matrix(self) -> torch.Tensor:
        """The input-embedding table ``[V, D]`` (free: no model row)."""
        return self.model.get_input_embeddings().weight.detach().float().cpu()

    def baseline_embedding(self, kind: str | None = None) -> torch.Tensor:
        """An uninformative input embedding ``[D]`` (free): the expected embedding under a replacement strategy.

        ``unigram`` and ``uniform`` average the table by their probabilities (``neighbours`` has no
        context-free expectation and uses ``uniform``); ``mask`` is the mask token's embedding.
        """
        reps, table = self.replacements, self.embedding_matrix()
        kind = kind or reps.default
        if kind == "mask":
            return table[reps.tokens("mask", np.random.default_rng(0), (1,))[0]]
        weights = reps.unigram_p if kind == "unigram" else np.full(len(reps.pool), 1.0 / len(reps.pool))
        return (torch.as_tensor(weights, dtype=torch.float32)[:, None] * table[torch.as_tensor(reps.pool)]).sum(0)

    def input_embeddings(self, input_ids: np.ndarray | None = None) -> torch.Tensor:
        """Input-token embeddings ``[B, L, D]`` (free: a table lookup, not a model row)."""
        ids = torch.as_tensor(self.prompt[None] if input_ids is None else np.asarray(input_ids), dtype=torch.long)
        return self.model.get_input_embeddings()(ids.to(self.device)).detach().float().cpu()

    def logprob_and_grad(self, embeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``log p(target)`` per row of input embeddings ``[B, L, D]`` and its gradient; forward + backward rows."""
        embeds = torch.as_tensor(embeds, dtype=torch.float32)
        if embeds.ndim != 3 or embeds.shape[1] != len(self.prompt):
            raise ValueError(f"embeddings must have shape [B, {len(self.prompt)}, D], got {tuple(embeds.shape)}")
        self._charge(embeds.shape[0], embeds.shape[0])
        start, values, grads = time.perf_counter(), [], []
        dtype = self.model.get_input_embeddings().weight.dtype
        for chunk, real in padded_chunks(embeds, self.batch_rows, self.pad_rows):
            with torch.enable_grad():  # also inside an autograd Function's forward, where grad mode is off
                x = chunk.to(self.device, dtype).requires_grad_(True)
                full = x
                if len(self._target) > 1:
                    tail = self.model.get_input_embeddings()(self._target[:-1]).expand(x.shape[0], -1, -1)
                    full = torch.cat([x, tail], dim=1)
                value = self._logprob_from_logits(self.model(inputs_embeds=full).logits, x.shape[1])
                (grad,) = torch.autograd.grad(value.sum(), x)
            values.append(value[:real].detach().float().cpu())
            grads.append(grad[:real].float().cpu())
        self.cost.seconds += time.perf_counter() - start
        return torch.cat(values), torch.cat(grads)

    def target_logprob_from_embeddings(self, embeds: torch.Tensor) -> torch.Tensor:
        """Differentiable log p(target) from input embeddings ``[B, L, D]``; charged as forward + backward rows."""
        return _EmbeddingGrad.apply(embeds, self.logprob_and_grad)

    def attentions(self, input_ids: np.ndarray | None = None) -> list[torch.Tensor]:
        """Per-layer attention weights ``[B, H, L, L]`` over the prompt (forward rows)."""
        ids = self._ids(self.prompt[None] if input_ids is None else input_ids)
        self._charge(ids.shape[0])
        start, layers = time.perf_counter(), []
        with torch.inference_mode(), _eager_attention(self.model):
            for chunk, real in padded_chunks(ids, self.batch_rows, self.pad_rows):
                out = self.model(input_ids=chunk.to(self.device), output_attentions=True)
                layers.append([a[:real].float().cpu() for a in out.attentions])
        self.cost.seconds += time.perf_counter() - start
        return [torch.cat(per_layer) for per_layer in zip(*layers, strict=True)]

    # -- perturbations -------------------------------------------------------------------------------------
    def perturb(self, rng: np.random.Generator, n: int, rate: float, kind: str | None = None):
        """``n`` prompts with each editable position replaced with probability ``rate``; returns (ids, kept)."""
        editable = np.zeros(len(self.prompt), dtype=bool)
        editable[list(self.case.editable)] = True
        replace = (rng.random((n, len(self.prompt))) < rate) & editable
        return self.replacements.sample(rng, self.prompt, replace, kind), ~replace
