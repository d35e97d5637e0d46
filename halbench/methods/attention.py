"""Attention baselines: ``attention`` (last layer) and ``attention_rollout`` (Abnar & Zuidema, 2020).

Both read the attention paid from the last prompt position (the one that
predicts the target) to every position; one forward row.
"""

from __future__ import annotations

import numpy as np
import torch

from halbench.case import PublicCase
from halbench.methods.base import Attribution, Method, masked_scores
from halbench.scoring import Scorer


class LastLayerAttention(Method):
    name = "attention"
    description = "Last layer's attention from the final prompt position, averaged over heads."
    kind = "attention"

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        last = scorer.attentions()[-1][0].mean(0)
        return Attribution(masked_scores(last[-1].numpy(), case))


class AttentionRollout(Method):
    name = "attention_rollout"
    paper = "https://arxiv.org/abs/2005.00928"
    description = "Attention rollout: head-averaged attention plus identity, renormalised, multiplied over layers."
    kind = "attention"

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        layers = scorer.attentions()
        length = layers[0].shape[-1]
        rollout = torch.eye(length)
        for att in layers:
            mixed = 0.5 * att[0].mean(0) + 0.5 * torch.eye(length)
            rollout = (mixed / mixed.sum(-1, keepdim=True)) @ rollout
        return Attribution(masked_scores(rollout[-1].numpy(), case))
