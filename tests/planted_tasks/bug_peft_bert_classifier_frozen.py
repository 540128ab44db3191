"""LoRA on a (config-built) BERT sequence classifier, LoraConfig without task_type: peft freezes its fresh head,
named `classifier` in BERT (an outside examination, 2026-12-07: the fix named `score`, Llama's head, and
following it was refused: "score matches no module of BertForSequenceClassification")."""

import peft
import torch
import transformers

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = {"step": "tiny_subset", "verdict": "warn", "said": "Fix: train it: adapter.modules_to_save=[classifier]"}
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def build_model(task):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=tok.VOCAB_SIZE,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=128,
        pad_token_id=tok.PAD_ID,
        num_labels=2,
    )
    base = transformers.BertForSequenceClassification(config)  # "pretrained" body, fresh head
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"], lora_dropout=0.0)
    return peft.get_peft_model(base, lora)


def make_task():
    return seqcls_task(forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits)
