"""Batched next-token logits at the end of each prompt: the one model call mining needs.

Prompts of different lengths are right-padded; with causal attention the
padding after a prompt's last position cannot change its logits (the mask
only states that explicitly), so results do not depend on batch composition
beyond float rounding. Works for any ``transformers`` causal LM (GPT-2, Llama, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def last_logits(model: torch.nn.Module, rows: Sequence[Sequence[int]], batch_rows: int = 512) -> torch.Tensor:
    """Return ``[len(rows), vocab]`` float32 logits of the token after each row."""
    out = []
    device = next(model.parameters()).device
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))  # similar lengths together: less padding
    with torch.inference_mode():
        for start in range(0, len(rows), batch_rows):
            chunk = [rows[i] for i in order[start : start + batch_rows]]
            ids, last = pad_right(chunk, pad_id=0)
            out.append(logits_at(model, ids.to(device), last.to(device)).float().cpu())
    if not out:
        return torch.empty(0, 0)
    logits = torch.cat(out)
    result = torch.empty_like(logits)
    result[torch.tensor(order)] = logits
    return result


def pad_right(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad ``rows`` into one tensor; also return each row's last index."""
    lengths = torch.tensor([len(r) for r in rows])
    ids = torch.full((len(rows), int(lengths.max())), pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
    return ids, lengths - 1


def logits_at(model: torch.nn.Module, ids: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """Logits at positions ``last`` only (skips the LM head everywhere else)."""
    if bool((last == ids.shape[1] - 1).all()):
        hidden = model.base_model(input_ids=ids).last_hidden_state
    else:
        mask = torch.arange(ids.shape[1], device=ids.device)[None, :] <= last[:, None]
        hidden = model.base_model(input_ids=ids, attention_mask=mask.long()).last_hidden_state
    picked = hidden[torch.arange(ids.shape[0], device=ids.device), last]
    return model.get_output_embeddings()(picked)
