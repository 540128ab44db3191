"""LoRA fine-tuning of a (config-built) Llama sequence classifier with peft, LoraConfig without
task_type='SEQ_CLS' (and no modules_to_save): peft freezes every base weight, including the classification
head 'score' that was just randomly initialised; only the attention adapters train, towards a random head."""

import peft
import torch
import transformers

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = {"step": "tiny_subset", "verdict": "warn", "said": "output layer `base_model.model.score"}
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def build_model(task):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=tok.VOCAB_SIZE,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=tok.PAD_ID,
        num_labels=2,
    )
    base = transformers.LlamaForSequenceClassification(config)  # "pretrained" body, fresh head
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    return peft.get_peft_model(base, lora)


def make_task():
    return seqcls_task(forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits)
