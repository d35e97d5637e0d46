"""The Scorer: the only door from an attribution method to the model.

Every model call a method makes goes through here, batched and counted, so
methods compete under the same budget of model rows per case (a forward row
costs one, a backward row two) and cannot see the ground truth. The target is
teacher-forced after the prompt, so a row's hallucination score is exact and
costs one forward row.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from halbench.case import PublicCase


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
    return torch.device(name)


class Replacements:
    """Replacement distributions for perturbations, shared by every method and by the metrics.

    ``neighbours`` (the paper's): for each token, its ``k`` nearest tokens by cosine
    similarity in the model's input-embedding matrix, drawn from the pool of
    ordinary tokens; ``neutral``: the task's neutral filler ids.

    The default is ``neutral`` wherever a task has neutral filler: the ground
    truth was verified with neutral refills, and on planted tasks a trigger's
    embedding neighbours are other triggers and entities (the geometry clusters
    tokens by role), so a neighbour refill often keeps the hallucination.
    ``neighbours`` remains for real models, which have no neutral filler.
    """

    def __init__(self, embedding: torch.Tensor, pool: list[int], neutral: list[int], k: int = 8):
        self.neutral = np.asarray(sorted(neutral), dtype=np.int64)
        self.pool = np.asarray(sorted(pool), dtype=np.int64)
        self.k = min(k, len(self.pool) - 1)
        emb = torch.nn.functional.normalize(embedding.detach().float().cpu(), dim=-1)
        self._emb = emb
        self._cache: dict[int, np.ndarray] = {}
        self.default = "neutral" if len(self.neutral) else "neighbours"

    def neighbours(self, token: int) -> np.ndarray:
        if token not in self._cache:
            sims = self._emb[self.pool] @ self._emb[token]
            sims[torch.as_tensor(self.pool == token)] = -2.0
            top = torch.topk(sims, self.k).indices.numpy()
            self._cache[token] = self.pool[np.sort(top)]
        return self._cache[token]

    def sample(
        self, rng: np.random.Generator, prompt: np.ndarray, mask: np.ndarray, kind: str | None = None
    ) -> np.ndarray:
        """Copy of ``prompt`` broadcast to ``mask``'s shape with masked positions replaced."""
        kind = kind or self.default
        rows = np.broadcast_to(prompt, mask.shape).copy()
        if kind == "neutral":
            draws = self.neutral[rng.integers(len(self.neutral), size=mask.shape)]
            rows[mask] = draws[mask]
            return rows
        if kind != "neighbours":
            raise ValueError(f"unknown replacement distribution {kind!r} (neighbours or neutral)")
        for pos in np.nonzero(mask.any(0))[0]:
            options = self.neighbours(int(prompt[pos]))
            draws = options[rng.integers(len(options), size=mask.shape[0])]
            rows[mask[:, pos], pos] = draws[mask[:, pos]]
        return rows


class Scorer:
    """Batched, counting, budgeted access to one case's model, for one case at a time."""

    def __init__(
        self,
        model: torch.nn.Module,
        case: PublicCase,
        replacements: Replacements,
        budget: int | None = 1024,
        batch_rows: int = 256,
    ):
        self.model = model
        self.case = case
        self.replacements = replacements
        self.budget = budget
        self.batch_rows = batch_rows
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

    # -- teacher-forced target scores ---------------------------------------------------------------------
    def _with_target(self, ids: torch.Tensor) -> torch.Tensor:
        if len(self._target) == 1:
            return ids
        tail = self._target[:-1].expand(ids.shape[0], -1)
        return torch.cat([ids, tail], dim=1)

    def _logprob_of_ids(self, full: torch.Tensor, length: int) -> torch.Tensor:
        """Like :meth:`_logprob_from_logits` but applies the LM head only where the target is read."""
        hidden = self.model.base_model(input_ids=full).last_hidden_state
        head = self.model.get_output_embeddings()
        return self._logprob_from_logits(head(hidden[:, length - 1 : length - 1 + len(self._target)]), 1)

    def _logprob_from_logits(self, logits: torch.Tensor, length: int) -> torch.Tensor:
        """Sum of the target tokens' log-probabilities, read at the positions that predict them."""
        steps = logits[:, length - 1 : length - 1 + len(self._target)].float().log_softmax(-1)
        picked = steps.gather(-1, self._target.expand(logits.shape[0], -1).unsqueeze(-1)).squeeze(-1)
        return picked.sum(-1)

    def target_logprob(self, input_ids: np.ndarray | torch.Tensor) -> np.ndarray:
        """Teacher-forced log p(target | row) for each row of ``input_ids`` ``[B, L]``."""
        ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
        if ids.ndim != 2 or ids.shape[1] != len(self.prompt):
            raise ValueError(f"input_ids must have shape [B, {len(self.prompt)}], got {tuple(ids.shape)}")
        self._charge(ids.shape[0])
        start, out = time.perf_counter(), []
        with torch.inference_mode():
            for chunk in ids.split(self.batch_rows):
                out.append(self._logprob_of_ids(self._with_target(chunk.to(self.device)), ids.shape[1]).cpu())
        self.cost.seconds += time.perf_counter() - start
        return torch.cat(out).numpy().astype(np.float64) if out else np.zeros(0)

    def target_prob(self, input_ids: np.ndarray | torch.Tensor) -> np.ndarray:
        return np.exp(self.target_logprob(input_ids))

    # -- sampling (generate and match) ---------------------------------------------------------------------
    def generate(
        self, input_ids: np.ndarray, rng: np.random.Generator, new_tokens: int | None = None, temperature: float = 1.0
    ) -> np.ndarray:
        """Ancestral sampling of ``new_tokens`` (default: the target's length) after each row: ``[B, T]``.

        Charged one forward row per row and generated token. Seeded from ``rng``, so it is reproducible.
        """
        ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
        steps = len(self._target) if new_tokens is None else int(new_tokens)
        if ids.ndim != 2 or steps < 1 or not temperature > 0:
            raise ValueError("generate needs [B, L] input_ids, new_tokens >= 1 and temperature > 0")
        self._charge(ids.shape[0] * steps)
        start, out = time.perf_counter(), []
        gen = torch.Generator(device=self.device).manual_seed(int(rng.integers(2**62)))
        head = self.model.get_output_embeddings()
        with torch.inference_mode():
            for chunk in ids.split(self.batch_rows):
                seq = chunk.to(self.device)
                for _ in range(steps):
                    hidden = self.model.base_model(input_ids=seq).last_hidden_state[:, -1]
                    probs = (head(hidden).float() / temperature).softmax(-1)
                    seq = torch.cat([seq, torch.multinomial(probs, 1, generator=gen)], dim=1)
                out.append(seq[:, chunk.shape[1] :].cpu())
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

    # -- gradients and attention ----------------------------------------------------------------------------
    def input_embeddings(self, input_ids: np.ndarray | None = None) -> torch.Tensor:
        """Input-token embeddings ``[B, L, D]`` (free: a table lookup, not a model row)."""
        ids = torch.as_tensor(self.prompt[None] if input_ids is None else np.asarray(input_ids), dtype=torch.long)
        return self.model.get_input_embeddings()(ids.to(self.device)).detach()

    def target_logprob_from_embeddings(self, embeds: torch.Tensor) -> torch.Tensor:
        """Differentiable log p(target) from input embeddings ``[B, L, D]``; charged as forward + backward rows."""
        self._charge(embeds.shape[0], embeds.shape[0])
        start = time.perf_counter()
        length = embeds.shape[1]
        if len(self._target) > 1:
            tail = self.model.get_input_embeddings()(self._target[:-1]).expand(embeds.shape[0], -1, -1)
            embeds = torch.cat([embeds, tail], dim=1)
        logits = self.model(inputs_embeds=embeds).logits
        self.cost.seconds += time.perf_counter() - start
        return self._logprob_from_logits(logits, length)

    def attentions(self, input_ids: np.ndarray | None = None) -> list[torch.Tensor]:
        """Per-layer attention weights ``[B, H, L, L]`` over the prompt (forward rows)."""
        ids = torch.as_tensor(self.prompt[None] if input_ids is None else np.asarray(input_ids), dtype=torch.long)
        self._charge(ids.shape[0])
        start = time.perf_counter()
        with torch.inference_mode(), _eager_attention(self.model):
            out = self.model(input_ids=ids.to(self.device), output_attentions=True)
        self.cost.seconds += time.perf_counter() - start
        return [a.float().cpu() for a in out.attentions]

    # -- perturbations -------------------------------------------------------------------------------------
    def perturb(self, rng: np.random.Generator, n: int, rate: float, kind: str | None = None):
        """``n`` prompts with each editable position replaced with probability ``rate``; returns (ids, kept)."""
        editable = np.zeros(len(self.prompt), dtype=bool)
        editable[list(self.case.editable)] = True
        replace = (rng.random((n, len(self.prompt))) < rate) & editable
        return self.replacements.sample(rng, self.prompt, replace, kind), ~replace
