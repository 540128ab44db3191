"""correct: control for bug_peft_lora_head_frozen: LoRA on a config-built Llama sequence classifier with
task_type="SEQ_CLS" (peft keeps the new head "score" trainable, modules_to_save); only the attention adapters
and the head train."""

import peft
import torch
import transformers

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = None
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
    lora = peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0, task_type="SEQ_CLS"
    )
    return peft.get_peft_model(base, lora)


def make_task():
    return seqcls_task(forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits)
