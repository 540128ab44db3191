"""shared: two-turn chat in byte tokens: <bos> 'U: instr\nA: ' ans1 <eos> 'U: instr2\nA: ' ans2 <eos>;
expected_targets = both answers, each with its <eos>."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._common import generation_task, instruction_examples, tiny_gpt  # noqa: F401


def examples():
    base = instruction_examples(160, seed=4)
    out = []
    for i in range(0, 160, 2):
        a, b = base[i], base[i + 1]
        out.append(
            Example(
                index=i // 2,
                group=f"c{i // 2}",
                fields={
                    "turns": [
                        (a.fields["instruction"].strip(), a.fields["answer"]),
                        (b.fields["instruction"].strip(), b.fields["answer"]),
                    ]
                },
            )
        )
    return out


def user(text):
    return tok.encode(f"U: {text}\nA: ")


def answers(e):
    out = []
    for _, ans in e.fields["turns"]:
        out += tok.encode(ans) + [tok.EOS_ID]
    return out


def encode_with(mask_every_user_turn):
    def encode(e):
        ids, labels = [tok.BOS_ID], [IGNORE_INDEX]
        for k, (q, ans) in enumerate(e.fields["turns"]):
            u, a = user(q), tok.encode(ans) + [tok.EOS_ID]
            ids += u + a
            if mask_every_user_turn or k == 0:
                labels += [IGNORE_INDEX] * len(u) + a
            else:
                labels += u + a  # the bug: only the first prompt is masked
        return {"index": e.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}

    return encode


def task(mask_every_user_turn):
    return generation_task(examples(), encode=encode_with(mask_every_user_turn), expected_targets=answers)


def model(task):
    from pilot.models.tiny_gpt import TinyGPT

    return TinyGPT(vocab_size=tok.VOCAB_SIZE, max_len=128, d_model=32, n_layer=1, n_head=2, dropout=0.0)
