"""A small byte-level BPE tokenizer for planted tasks (a merge across the prompt and answer): trained
locally (no download) on the instruction words, cached per process."""

from __future__ import annotations

import functools

from tests.planted_tasks._common import instruction_examples

SPECIALS = {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"}


@functools.cache
def bpe_tokenizer(vocab_size: int = 400):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    texts = []
    for e in instruction_examples(200, seed=0):
        texts += [e.fields["instruction"] + "### Answer: " + e.fields["answer"]] * 3
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        texts, vocab_size=vocab_size, min_frequency=2, show_progress=False, special_tokens=list(SPECIALS.values())
    )
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, **SPECIALS)
