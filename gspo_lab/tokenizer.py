"""A character-level tokenizer for the lab's tasks, built with ``tokenizers`` (nothing is fetched from a hub).

One token per character of :data:`ALPHABET`, plus four special tokens. It is a real
:class:`transformers.PreTrainedTokenizerFast`, saved beside every checkpoint, so a checkpoint folder loads with
``AutoTokenizer.from_pretrained(folder)`` offline.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

__all__ = ["SPECIAL_TOKENS", "ALPHABET", "build_tokenizer", "load_tokenizer"]

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
#: digits, the task markers (S: sort, A: add), operators and the scratchpad separators
ALPHABET = "0123456789SA:>+=;|"


def build_tokenizer() -> PreTrainedTokenizerFast:
    """The lab's tokenizer: ids 0-3 are <pad>, <bos>, <eos>, <unk>; then one id per character of ALPHABET."""
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    vocab.update({ch: len(SPECIAL_TOKENS) + i for i, ch in enumerate(ALPHABET)})
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")  # every character is a token
    core.decoder = decoders.Fuse()  # decode without spaces between characters
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",  # prompts are left-padded so that every response starts at the same column
    )


def load_tokenizer(folder: str | Path) -> PreTrainedTokenizerFast:
    """Load a tokenizer saved with ``save_pretrained`` (offline, no hub)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
