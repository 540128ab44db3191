"""A BERT-style fast tokenizer built locally (WordPiece vocab from the data), wrapped for transformers."""

import transformers
from tokenizers import processors

from tests.planted_tasks._exam94_ex import wordpiece_tokenizer


def bert_fast(texts, lowercase=True):
    tk = wordpiece_tokenizer(texts, lowercase=lowercase)
    cls, sep = tk.token_to_id("[CLS]"), tk.token_to_id("[SEP]")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def tiny_bert(vocab, **kw):
    import torch

    torch.manual_seed(0)
    return transformers.BertConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=0,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        **kw,
    )
