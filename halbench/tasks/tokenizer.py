"""A word-level tokenizer that ``AutoTokenizer.from_pretrained`` loads with nothing else."""

from __future__ import annotations

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from halbench.tasks.world import BOS, PAD, UNK


def build_tokenizer(vocab: list[str]) -> PreTrainedTokenizerFast:
    """One id per word, split on whitespace; prompts carry their own ``[BOS]``."""
    if len(set(vocab)) != len(vocab):
        raise ValueError("vocabulary has duplicate tokens")
    core = Tokenizer(models.WordLevel({tok: i for i, tok in enumerate(vocab)}, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token=BOS, pad_token=PAD, unk_token=UNK, eos_token=None, padding_side="right"
    )
