"""a one-block transformers GPT-2 sequence classifier over byte tokens (absolute learned
positions), and a left-padding collate for the sentence task."""

import torch
import transformers

from pilot.data import byte_tokenizer as tok


def gpt2_classifier(classes=2):
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=tok.VOCAB_SIZE,
        n_positions=64,
        n_embd=32,
        n_layer=1,
        n_head=2,
        num_labels=classes,
        pad_token_id=tok.PAD_ID,
        bos_token_id=tok.BOS_ID,
        eos_token_id=tok.EOS_ID,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    return transformers.GPT2ForSequenceClassification(config)


def left_pad_collate(items):
    width = max(len(i["input_ids"]) for i in items)
    ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for r, i in enumerate(items):
        n = len(i["input_ids"])
        ids[r, width - n :], mask[r, width - n :] = i["input_ids"], 1
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": torch.tensor([i["label"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }
