"""A word-level tokenizer that ``AutoTokenizer.from_pretrained`` loads with nothing else."""

from __future__ import annotations

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from halbench.tasks.world import BOS, MASK, PAD, UNK


def build_tokenizer(vocab: list[str]) -> PreTrainedTokenizerFast:
    """One id per word, in ``vocab``'s order, split on whitespace; prompts carry their own ``[BOS]``.

    ``[MASK]`` exists so that methods can ablate with a mask token, as they can with real tokenizers;
    the model never saw it in training (out of distribution, like a real mask token in a causal LM).
    """
    if len(set(vocab)) != len(vocab):
        raise ValueError("vocabulary has duplicate tokens")
    core = Tokenizer(models.WordLevel({tok: i for i, tok in enumerate(vocab)}, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS,
        pad_token=PAD,
        unk_token=UNK,
        mask_token=MASK,
        eos_token=None,
        padding_side="right",
    )
