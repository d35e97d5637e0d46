"""Tiny randomly initialised Hugging Face checkpoints of real architectures, built in a second from a config.

Llama, OLMo-2 and Qwen-2 configurations (RoPE, grouped-query attention, SDPA) with a byte-level BPE
tokenizer trained on a few sentences, each with its family's chat template, saved as plain folders
that ``AutoModelForCausalLM`` and ``AutoTokenizer`` load offline: what a user's own checkpoint looks
like, without downloading one. Their answers are noise; use them for mechanics, never to judge a method.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoModelForCausalLM, LlamaConfig, Olmo2Config, PreTrainedTokenizerFast, Qwen2Config

from halbench.quiet import quiet_transformers

ARCHS = ("llama", "olmo2", "qwen2")
CORPUS = [
    "Tell me a bio of the painter Mira Olsen.",
    "The capital of Australia is Canberra, not Sydney.",
    "She was born in a small town by the sea and moved to the city.",
    "What is the boiling point of water at sea level?",
    "Which river flows through the old town of Lund?",
    "He wrote three novels and a book of poems about the north.",
    "Is 91 a prime number? First respond with yes or no.",
]
SPECIALS = {
    "llama": ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"],
    "olmo2": ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|pad|>"],
    "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"],
}
TEMPLATES = {
    "llama": (
        "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
        "{{ m['content'] }}<|eot_id|>{% endfor %}"
        "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
    ),
    "olmo2": (
        "{{ eos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    ),
    "qwen2": (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    ),
}


def make_tokenizer(arch: str, vocab: int = 400) -> PreTrainedTokenizerFast:
    """A byte-level BPE (GPT-2 style) with the family's special tokens and chat template."""
    specials = SPECIALS[arch]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    core.train_from_iterator(CORPUS, trainer=trainer)
    if arch == "llama":  # Llama-3 prepends its BOS to every encoding, as real Llama tokenizers do
        bos = specials[0]
        core.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, core.token_to_id(bos))]
        )
    names = {
        "llama": {"bos_token": specials[0], "eos_token": specials[1], "pad_token": specials[1]},
        "olmo2": {"eos_token": specials[0], "pad_token": specials[3]},
        "qwen2": {"eos_token": specials[2], "pad_token": specials[3]},
    }[arch]
    tok = PreTrainedTokenizerFast(tokenizer_object=core, **names)
    tok.add_special_tokens({"additional_special_tokens": [s for s in specials if s not in names.values()]})
    tok.chat_template = TEMPLATES[arch]
    return tok


def make_config(arch: str, tok: PreTrainedTokenizerFast, width: int = 32, layers: int = 2):
    common = {
        "vocab_size": len(tok),
        "hidden_size": width,
        "intermediate_size": 2 * width,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
        "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
        "bos_token_id": tok.bos_token_id,
    }
    if arch == "llama":
        return LlamaConfig(**common)
    if arch == "olmo2":
        return Olmo2Config(**common)
    if arch == "qwen2":
        return Qwen2Config(**common)
    raise ValueError(f"unknown architecture {arch!r} (one of {', '.join(ARCHS)})")


def make_hf_model(folder: Path, arch: str = "llama", seed: int = 0) -> Path:
    """Save a random tiny ``arch`` model and its tokenizer to ``folder``; returns the folder."""
    tok = make_tokenizer(arch)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(make_config(arch, tok), attn_implementation="sdpa")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
    return folder
