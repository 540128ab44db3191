"""What the built-in tasks hand the loss: masking, truncation, padding, splits."""

import pytest
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.instructions import encode_example, make_collate, target_count
from pilot.data.split import make_splits
from pilot.data.task import Example

LONG = Example(index=0, group="g", fields={"instruction": "x" * 50, "answer": "abcdef"})


def decode_targets(item):
    return tok.decode(t for t in item["labels"].tolist() if t != -100)


def test_instruction_is_masked_and_answer_with_eos_is_trained():
    item = encode_example(LONG, max_len=96, truncation_side="right", mask_instruction=True)
    assert decode_targets(item) == "abcdef<eos>"
    unmasked = encode_example(LONG, max_len=96, truncation_side="right", mask_instruction=False)
    assert decode_targets(unmasked).startswith("xxx")


def test_left_truncation_keeps_the_answer():
    item = encode_example(LONG, max_len=20, truncation_side="left", mask_instruction=True)
    assert len(item["input_ids"]) == 20
    assert item["truncated_tokens"] == 1 + 50 + len("\n=> ") + 7 - 20
    assert item["truncated_target_tokens"] == 0
    assert decode_targets(item) == "abcdef<eos>"


def test_right_truncation_cuts_the_answer_and_says_how_much():
    short = Example(index=0, group="g", fields={"instruction": "xx", "answer": "abcdef"})
    item = encode_example(short, max_len=10, truncation_side="right", mask_instruction=True)
    # <bos> x x \n = > space a b c | d e f <eos> are cut
    assert item["truncated_target_tokens"] == 4
    assert decode_targets(item) == "abc"


@pytest.mark.parametrize("side", ["left", "right"])
def test_collate_pads_on_the_requested_side(side):
    items = [
        encode_example(Example(i, "g", {"instruction": "a" * n, "answer": "b"}), 96, "left", True)
        for i, n in enumerate((1, 5))
    ]
    batch = make_collate(side)(items)
    mask = batch["attention_mask"]
    assert mask.shape == (2, 12)  # <bos> + "aaaaa\n=> " + "b" + <eos>
    assert mask[0].sum() == 8 and mask[1].all()
    pads = (batch["input_ids"][0] == tok.PAD_ID).nonzero().flatten().tolist()
    assert pads == ([0, 1, 2, 3] if side == "left" else [8, 9, 10, 11])
    assert target_count(batch) == 4  # "b<eos>" twice


def examples(n=200):
    return [Example(index=i, group=f"doc-{i // 4}", fields={}, time=float(i // 10)) for i in range(n)]


def test_group_split_keeps_each_group_in_one_split():
    splits = make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.2})
    seen = {}
    for name, part in splits.items():
        for example in part:
            assert seen.setdefault(example.group, name) == name
    assert all(splits[name] for name in ("train", "val", "test"))


def test_time_split_orders_train_before_val_before_test():
    splits = make_splits(examples(), {"by": "time", "val_fraction": 0.2, "test_fraction": 0.2})
    assert max(e.time for e in splits["train"]) < min(e.time for e in splits["val"])
    assert max(e.time for e in splits["val"]) < min(e.time for e in splits["test"])


def test_unknown_split_method_is_refused():
    with pytest.raises(ValueError, match="data.split.by='groups'"):
        make_splits(examples(), {"by": "groups"})


def test_digits_task_has_class_names_and_content_groups():
    from pilot.data.digits import make_task

    task = make_task(split={"by": "group"})
    assert task.info["class_names"][3] == "three"
    total = sum(len(part) for part in task.splits.values())
    assert total == 1797
    batch = task.collate(task.encoded("val")[:5])
    assert batch["inputs"].shape == (5, 64) and batch["labels"].dtype == torch.long


@pytest.mark.parametrize(
    "text, said",
    [
        ("", "no example in it"),
        ('{"instruction": "a", "answer": "b"}\n{"instruction": "a"}\n', "line 2 has no 'answer' field"),
        ('{"instruction": "a", "answer": "b"}\n{bad\n', "line 2 is not JSON"),
        # an examination: a number or null passed the loader and failed the run in the tokenizer (exit 1)
        ('{"instruction": "a", "answer": 3}\n', "line 1: 'answer' is 3 (a number), not a string"),
        (
            '{"instruction": "a", "answer": "b"}\n{"instruction": null, "answer": "b"}\n',
            "line 2: 'instruction' is null, not a string",
        ),
    ],
)
def test_a_data_file_that_is_not_instruction_lines_is_refused_naming_file_and_line(tmp_path, text, said):
    """An outside examination: an empty file blamed data.split.val_fraction, a missing field was a bare
    KeyError, a bad line said 'line 1 column 1' with no file."""
    from pilot.data.instructions import load_examples
    from pilot.errors import PilotError

    path = tmp_path / "data.jsonl"
    path.write_text(text)
    with pytest.raises(PilotError, match="data.path=") as refused:
        load_examples(str(path))
    assert said in str(refused.value) and "Fix:" in str(refused.value)


def test_a_training_run_says_when_truncation_cuts_its_targets(make_cfg, caplog):
    """data.max_len=5 trained to ok with 38% of the targets cut and no word at its start (the record had
    the share, the console nothing)."""
    from hydra.utils import instantiate

    from pilot.run_summary import task_summary

    cfg = make_cfg("data.max_len=5")
    task = instantiate(cfg.data, _convert_="all")
    items = [task.encode(e) for e in task.splits["train"]]
    with caplog.at_level("WARNING", logger="pilot"):
        summary = task_summary(cfg, task, items)
    assert summary["targets_truncated_share"] > 0.05
    said = [r.getMessage() for r in caplog.records if "cuts" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("data.max_len=5 cuts ") and "Fix: data.max_len >= " in said[0]
    caplog.clear()
    task_summary(make_cfg(), instantiate(make_cfg().data, _convert_="all"), [])  # nothing cut: nothing said
    assert not [r for r in caplog.records if "cuts" in r.getMessage()]
