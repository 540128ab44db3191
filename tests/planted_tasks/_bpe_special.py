"""the local byte-level BPE with a post-processor that adds <bos> ... <eos> on every call
with add_special_tokens=True (as Llama-style tokenizers add <bos>, some add both)."""

import functools

from tests.planted_tasks._bpe_tokenizer import bpe_tokenizer

PROMPT = "{instruction}### Answer:\n"


@functools.cache
def special_tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    base = bpe_tokenizer()
    tk = Tokenizer.from_str(base.backend_tokenizer.to_str())
    tk.post_processor = TemplateProcessing(
        single="<bos> $A <eos>", special_tokens=[("<bos>", base.bos_token_id), ("<eos>", base.eos_token_id)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
