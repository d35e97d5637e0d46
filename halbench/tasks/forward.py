"""Batched next-token logits at the end of each prompt: the one model call mining needs.

Prompts of different lengths are right-padded; with causal attention the
padding after a prompt's last position cannot change its logits (the mask
only states that explicitly), so results do not depend on batch composition.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def last_logits(model: torch.nn.Module, rows: Sequence[Sequence[int]], batch_rows: int = 1024) -> torch.Tensor:
    """Return ``[len(rows), vocab]`` float32 logits of the token after each row."""
    out = []
    with torch.inference_mode():
        for start in range(0, len(rows), batch_rows):
            chunk = rows[start : start + batch_rows]
            ids, last = pad_right(chunk, pad_id=0)
            out.append(logits_at(model, ids.to(_device(model)), last.to(_device(model))).float().cpu())
    return torch.cat(out) if out else torch.empty(0, 0)


def pad_right(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad ``rows`` into one tensor; also return each row's last index."""
    lengths = torch.tensor([len(r) for r in rows])
    ids = torch.full((len(rows), int(lengths.max())), pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
    return ids, lengths - 1


def logits_at(model: torch.nn.Module, ids: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """Logits at positions ``last`` only (skips the LM head everywhere else)."""
    mask = torch.arange(ids.shape[1], device=ids.device)[None, :] <= last[:, None]
    hidden = model.transformer(input_ids=ids, attention_mask=mask.long()).last_hidden_state
    picked = hidden[torch.arange(ids.shape[0], device=ids.device), last]
    return model.lm_head(picked)


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device
