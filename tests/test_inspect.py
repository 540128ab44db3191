"""The pilot flags, with fail and the example, every planted problem of what the loss sees."""

import json

import pytest
import torch

from pilot.checks.contract import check_contract
from pilot.checks.inspect_examples import inspect_task
from pilot.data import digits, instructions
from pilot.data.task import ContractError
from pilot.models.mlp_classifier import MLPClassifier

SPLIT = {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}


def jsonl(tmp_path, rows):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps({"group": f"g{i}", **r}) + "\n" for i, r in enumerate(rows)))
    return str(path)


def generation(tmp_path, rows, **kwargs):
    return instructions.make_task(path=jsonl(tmp_path, rows), split=SPLIT, **kwargs)


ROWS = [
    {"instruction": f"Say {w}", "answer": w}
    for w in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")
]


def test_clean_generation_data_passes(tmp_path):
    result, shown = inspect_task(generation(tmp_path, ROWS), n_show=2, micro_batch=2)
    assert result.verdict == "pass", result.reason
    assert len(shown) == 2 and "^" in shown[0]["loss"]


def test_embedded_default_task_passes():
    task = instructions.make_task(split={"by": "group"})
    result, _ = inspect_task(task, n_show=3, micro_batch=2)
    assert result.verdict == "pass", result.reason
    assert result.details["per_split"]["train"]["share_truncated"] > 0  # truncation is real


def test_truncated_answer_fails_with_the_example(tmp_path):
    rows = ROWS + [{"instruction": "Spell it", "answer": "a very long answer " * 4}]
    task = generation(tmp_path, rows, max_len=40, truncation_side="right")
    result, _ = inspect_task(task, n_show=1, micro_batch=2)
    assert result.verdict == "fail"
    cut = [f for f in result.findings if f.problem.startswith("target truncated")]
    assert [f.example for f in cut] == [len(ROWS)]


def test_an_answer_cut_at_its_start_by_left_truncation_names_encodes_cut_not_guesses(tmp_path):
    """Left truncation of a row longer than max_len whose answer alone is longer: encode reports its cut and
    side, so the finding names them (it listed guesses: 'a prompt mask one token too long? ...')."""
    rows = ROWS + [{"instruction": "Spell it", "answer": "a very long answer " * 4}]
    task = generation(tmp_path, rows, max_len=40, truncation_side="left")
    result, _ = inspect_task(task, n_show=1, micro_batch=2)
    assert result.verdict == "fail"
    cut = [f.problem for f in result.findings if f.example == len(ROWS)]
    assert cut and cut[0].startswith("target truncated at its start"), result.findings
    assert "encode's truncation cut" in cut[0] and "from the left" in cut[0] and "?" not in cut[0], cut[0]


def test_answer_truncated_away_entirely_fails(tmp_path):
    rows = ROWS + [{"instruction": "x" * 60, "answer": "gone"}]
    task = generation(tmp_path, rows, max_len=40, truncation_side="right")
    result, _ = inspect_task(task, n_show=1, micro_batch=2)
    assert result.verdict == "fail"
    # the cause named, not only the symptom (it said "no target token in the loss" alone)
    said = "no target token in the loss: encode's truncation cut all"
    assert any(f.problem.startswith(said) and f.example == len(ROWS) for f in result.findings), result.findings
    stats = result.details["per_split"]
    assert sum(s["share_target_cut_entirely"] * s["examples"] for s in stats.values()) == 1


def test_a_prompt_trained_by_a_task_without_expected_targets_that_declares_it_masked_fails(tmp_path):
    """labels = input_ids in a task declaring info['mask_instruction']=True and no expected_targets passed every
    check; the same task masking its prompt passes, and one declaring the prompt trained on purpose too."""
    task = generation(tmp_path, ROWS)
    task.expected_targets = None
    encode = task.encode
    result, _ = inspect_task(task, n_show=1, micro_batch=2)
    assert result.verdict == "pass", result.reason

    task.encode = lambda example: {**(item := encode(example)), "labels": item["input_ids"].clone()}
    result, _ = inspect_task(task, n_show=1, micro_batch=2)
    assert result.verdict == "fail"
    assert any("the prompt is trained" in f.problem for f in result.findings), result.findings
    task.info["mask_instruction"] = False
    result, _ = inspect_task(task, n_show=1, micro_batch=2)
    assert not any("the prompt is trained" in f.problem for f in result.findings), result.findings


def test_instruction_counted_in_the_loss_fails(tmp_path):
    task = generation(tmp_path, ROWS)
    encode = task.encode

    def unmasked(example):  # the bug: labels copied from the inputs, instruction included
        item = encode(example)
        return {**item, "labels": item["input_ids"].clone()}

    task.encode = unmasked
    result, _ = inspect_task(task, n_show=1, micro_batch=2)
    assert result.verdict == "fail"
    assert all("instruction tokens counted" in f.problem for f in result.findings)
    assert len(result.findings) == len(ROWS)


def test_instruction_in_the_loss_on_purpose_passes(tmp_path):
    task = generation(tmp_path, ROWS, mask_instruction=False)
    result, _ = inspect_task(task, n_show=1, micro_batch=2)
    assert result.verdict == "pass", result.reason
    # what the loss sees is said as it is: the prompt too, not "exactly the answer tokens"
    assert "the prompt's tokens and the answer's" in result.reason and "exactly the answer" not in result.reason
    result, _ = inspect_task(generation(tmp_path, ROWS), n_show=1, micro_batch=2)
    assert "loss sees exactly the answer tokens" in result.reason, result.reason


# ------------------------------------------------------------------ classification
@pytest.fixture
def digits_task():
    return digits.make_task(split={"by": "group", "val_fraction": 0.2, "test_fraction": 0.2})


def model(num_classes=10):
    return MLPClassifier(in_features=64, num_classes=num_classes)


def test_clean_digits_pass(digits_task):
    result, shown = inspect_task(digits_task, n_show=3, micro_batch=2, model=model())
    assert result.verdict == "pass", result.reason
    assert shown[0]["class_name"] == digits.CLASS_NAMES[shown[0]["label"]]
    assert result.details["mapping"][3] == "three"
    assert set(result.details["label_histogram"]) == {"train", "val", "test"}


def test_label_out_of_range_fails(digits_task):
    bad = digits_task.splits["val"][5]
    bad.fields["label"] = 10
    result, _ = inspect_task(digits_task, n_show=1, micro_batch=2, model=model())
    assert result.verdict == "fail"
    assert any(f.example == bad.index and "outside [0, 10)" in f.problem for f in result.findings)


def test_head_size_different_from_classes_fails(digits_task):
    result, _ = inspect_task(digits_task, n_show=1, micro_batch=2, model=model(num_classes=12))
    assert result.verdict == "fail"
    wider = [f for f in result.findings if "head has 12 outputs but the data has 10 classes" in f.problem]
    assert wider and "outputs 10-11 are trained towards no class" in wider[0].detail
    # narrower: the loss cannot score the labels past the head, so the contract refuses it before any step
    assert check_contract(digits_task, model()).verdict == "pass"
    with pytest.raises(
        ContractError, match=r"head has 9 outputs but the task has 10 classes.*with 10 outputs.*model.num_classes=10"
    ):
        check_contract(digits_task, model(num_classes=9))


def test_a_model_with_nothing_to_train_is_refused_by_the_contract(digits_task):
    frozen = model().requires_grad_(False)
    with pytest.raises(ContractError, match=r"no trainable parameter.*requires_grad=False.*adapter=lora"):
        check_contract(digits_task, frozen)


def test_a_collate_that_crashes_is_refused_by_the_contract_naming_its_error(digits_task):
    def collate(items):
        raise ValueError("expected sequence of length 3 at dim 1 (got 5)")  # ragged labels in a stack

    digits_task.collate = collate
    with pytest.raises(
        ContractError, match=r"collate crashed on 2 encoded training example\(s\): ValueError: expected"
    ):
        check_contract(digits_task, model())


def test_split_encodings_that_disagree_fail(digits_task):
    for example in digits_task.splits["test"]:  # test encoded three as 4
        if example.fields["label_name"] == "three":
            example.fields["label"] = 4
    result, _ = inspect_task(digits_task, n_show=1, micro_batch=2, model=model())
    assert result.verdict == "fail"
    assert any("class 'three' has different ids" in f.problem for f in result.findings)


def test_missing_class_that_shifts_ids_fails(digits_task):
    # val encoded on its own: no "two" in it, so every later class moves down by one
    val = [e for e in digits_task.splits["val"] if e.fields["label_name"] != "two"]
    present = sorted({e.fields["label"] for e in val})
    for example in val:
        example.fields["label"] = present.index(example.fields["label"])
    digits_task.splits["val"] = val
    result, _ = inspect_task(digits_task, n_show=1, micro_batch=2, model=model())
    assert result.verdict == "fail"
    problems = " ".join(f.problem for f in result.findings)
    assert "class 'three' has different ids" in problems and "['two'] missing" in problems


def test_missing_class_without_shift_warns(digits_task):
    digits_task.splits["val"] = [e for e in digits_task.splits["val"] if e.fields["label_name"] != "nine"]
    result, _ = inspect_task(digits_task, n_show=1, micro_batch=2, model=model())
    assert result.verdict == "warn"
    assert "['nine'] missing" in result.reason


def test_missing_class_in_train_fails(digits_task):
    digits_task.splits["train"] = [e for e in digits_task.splits["train"] if e.fields["label"] != 0]
    result, _ = inspect_task(digits_task, n_show=1, micro_batch=2, model=model())
    assert result.verdict == "fail"


def test_a_model_without_attention_that_reads_no_context_is_told_apart_from_a_hidden_mask(make_cfg):
    """model.config.num_hidden_layers=0 read no earlier token, and the warning blamed the attention mask:
    with no attention-like module (*attention*, *attn*) it now says the model has nothing that reads
    the context. A module named *Attn* counts as attention (the mask is then blamed, a fail)."""
    from hydra.utils import instantiate

    from pilot.checks.causality import attention_modules, context_findings

    cfg = make_cfg("model=hf_causal_lm", "model.config.num_hidden_layers=0")
    task, model = instantiate(cfg.data, _convert_="all"), instantiate(cfg.model, _convert_="all")
    findings, details = context_findings(task, model, task.encoded("train"))
    assert details["judged"] and details["attention_modules"] == 0 and findings
    assert "num_hidden_layers=0" in str(findings[0]) and "has nothing that reads the context" in str(findings[0])

    class CausalSelfAttn(torch.nn.Module):
        pass

    assert attention_modules(torch.nn.Sequential(CausalSelfAttn())) == ["CausalSelfAttn"]


def test_rows_collate_truncates_are_counted_as_truncated_not_only_those_encode_cut():
    """A collate that cuts rows to a fixed length (keeping the start) recorded share_truncated 0.0
    next to 27% of targets cut entirely: the share is now measured, encode's tokens vs the row's."""
    from tests.planted_tasks import bug_truncate_keeps_prompt, runner

    result = runner.run_task(bug_truncate_keeps_prompt)["inspect"]
    train = result.details["per_split"]["train"]
    assert result.verdict == "fail" and "collate truncated the row" in result.reason
    assert train["share_truncated"] >= train["share_target_cut_entirely"] > 0


def test_the_spread_of_outputs_counts_only_examples_whose_inputs_differ():
    """Outputs equal for every example warn that the model reads nothing of its input; a duplicated example
    (the same inputs twice, any dtype) gives equal outputs too and must not count as such a pair."""
    import torch

    from pilot.checks.padding import model_inputs, spread_of

    ids = {
        "input_ids": torch.tensor([[5, 6, 7]]),
        "pixels": torch.ones(1, 2, dtype=torch.bfloat16),
        "index": torch.tensor([0]),
    }
    again = {**ids, "index": torch.tensor([9])}  # the same example under another index
    other = {**ids, "input_ids": torch.tensor([[5, 6, 8]])}
    same = torch.tensor([0.5, -0.5])
    assert spread_of([(same, model_inputs(ids)), (same, model_inputs(again))]) is None
    assert spread_of([(same, model_inputs(ids)), (same, model_inputs(other))]) == 0.0
    assert spread_of([(same, model_inputs(ids)), (same * 2, model_inputs(other))]) == 0.5


@pytest.mark.parametrize("pad, frozen", [(256, False), (32, True), (258, False)])
def test_real_tokens_on_the_embeddings_padding_row_are_named(make_cfg, pad, frozen):
    """A model whose padding_idx (config pad_token_id) is a real token of the data — a tokenizer of another
    model — trains those tokens on a row whose gradient is always zero: inspect warns, naming the table, the id
    and an example. Not flagged: the data's own pad id (256, the byte tokenizer's), and the eos (258) ending each
    row (its input predicts nothing after it)."""
    from hydra.utils import instantiate

    from pilot.checks.padding_row import padding_row_findings

    cfg = make_cfg("model=hf_causal_lm", f"model.config.pad_token_id={pad}")
    task, model = instantiate(cfg.data, _convert_="all"), instantiate(cfg.model, _convert_="all")
    findings, details = padding_row_findings(task, model, task.encoded("train"), 4)
    assert pad == 256 or (details["real_tokens_read"] > 0 and list(details["tables"].values()) == [pad]), details
    assert bool(findings) == frozen, findings
    if frozen:
        said = str(findings[0])
        assert f"id {pad}" in said and "embed_tokens" in said and "the data pads with id 256" in said, said
        result, _ = inspect_task(task, n_show=1, micro_batch=4, model=model)
        assert result.verdict == "warn" and "padding row" in result.reason, result.reason


def test_an_answers_first_token_masked_with_the_prompt_is_named_without_expected_targets():
    """A prompt mask one token too long trains every answer from its second token. With no expected_targets to
    compare with, the template shows it: its last token sits one position before the first counted target."""
    import dataclasses

    from pilot.checks.answer_start import answer_start_findings

    task = dataclasses.replace(instructions.make_task(split={"by": "group"}), expected_targets=None)
    train = task.encoded("train")
    assert answer_start_findings(task, train)[0] == []
    planted = []
    for item in train:
        labels = item["labels"].clone()
        labels[int((labels != -100).nonzero()[0])] = -100  # the answer's first token masked too
        planted.append({**item, "labels": labels})
    findings, details = answer_start_findings(task, planted)  # the examples' answer field tells
    assert findings and "answer's first token is masked" in str(findings[0]), details
    assert details["rows_with_text_fields"] == min(details["rows"], 256)  # one-token answers (only <eos>) aside:
    assert details["rows_counting_a_field_but_its_first_token"] >= 0.8 * details["rows_with_text_fields"], details
    unread = dataclasses.replace(task, decode_tokens=None)  # no text to compare: the template's position tells
    findings, details = answer_start_findings(unread, planted)
    assert findings and "answer's first token looks masked" in str(findings[0]), details
    assert details["rows_sharing_the_token_one_earlier"] == details["rows"]
    assert answer_start_findings(unread, train)[0] == []
    shifted = [{**item, "labels": torch.cat([item["labels"][1:], torch.tensor([-100])])} for item in planted]
    assert answer_start_findings(task, shifted)[0], "labels already shifted (labels[t] = ids[t + 1]) are read too"
    assert answer_start_findings(unread, shifted)[0]


def test_a_data_reader_that_cannot_read_a_task_is_not_judged_not_a_crash(monkeypatch):
    """The tag-offset reader met tokens without a label beside labelled ones (KeyError) and crashed inspect on
    six correct token-classification tasks: a warning read from the data alone never fails inspect."""
    import pilot.checks.inspect_examples as inspect_module

    def unreadable(*args):
        raise KeyError(1)

    monkeypatch.setattr(inspect_module, "answer_in_prompt_findings", unreadable)
    monkeypatch.setattr(inspect_module, "hidden_token_findings", unreadable)
    result, _ = inspect_task(instructions.make_task(split={"by": "group"}), n_show=1, micro_batch=4)
    assert result.verdict == "pass", result.reason
    assert result.details["hidden_tokens"] == {"judged": False, "error": "KeyError: 1"}


def test_a_start_or_end_marker_added_twice_is_warned_and_a_repeated_text_token_is_not():
    """<bos><bos> (a template holding bos, encoded with the tokenizer's own) and <eos><eos> at every row's
    edge: warned from the data alone. A character repeated at the start that recurs later in the row
    ('###' ... '### Response') is text, not a marker: not judged so; nor are rows padded in encode."""
    import dataclasses

    from pilot.checks.doubled_marker import doubled_marker_findings
    from pilot.data import byte_tokenizer as tok

    task = instructions.make_task(split={"by": "group"})
    train = task.encoded("train")
    assert doubled_marker_findings(task, train)[0] == []
    bos = [{**item, "input_ids": torch.cat([torch.tensor([tok.BOS_ID]), item["input_ids"]])} for item in train]
    findings, details = doubled_marker_findings(task, bos)
    assert findings and "start on" in str(findings[0]) and "twice" in str(findings[0]), details
    eos = [{**item, "input_ids": torch.cat([item["input_ids"], torch.tensor([tok.EOS_ID])])} for item in train]
    assert "end on" in str(doubled_marker_findings(task, eos)[0][0])
    hashes = [{**item, "input_ids": torch.tensor([35, 35, 35, *item["input_ids"].tolist(), 35, 35])} for item in train]
    assert doubled_marker_findings(task, hashes)[0] == [], "'#' recurs inside the row: text"
    width = max(len(item["input_ids"]) for item in bos)  # padded in encode with an undeclared pad: not judged
    padded = [
        {"input_ids": torch.cat([item["input_ids"], torch.full((width - len(item["input_ids"]),), 7)])} for item in bos
    ]
    untold = dataclasses.replace(task, info={k: v for k, v in task.info.items() if k != "pad_id"})
    assert doubled_marker_findings(untold, padded)[0] == []


def test_a_collate_that_draws_at_random_is_not_read_as_a_model_mixing_examples():
    """Augmentation drawn per call (noise, crops) gives an example collated alone other inputs than in its
    micro-batch: the batch-mixing probe read the difference as "the batch mixes examples" and failed a
    correct task. A random collate is not judged there (said in the details)."""
    import dataclasses

    from tests.planted_tasks import ok_classification

    task = ok_classification.make_task()
    generator = torch.Generator().manual_seed(0)

    def noisy(items):
        batch = task.collate(items)
        return {**batch, "inputs": batch["inputs"] + 0.5 * torch.randn(batch["inputs"].shape, generator=generator)}

    augmented = dataclasses.replace(task, collate=noisy)
    result, _ = inspect_task(augmented, n_show=1, micro_batch=4, model=ok_classification.build_model(augmented))
    assert result.verdict == "pass", result.reason
    assert result.details["batch_mixing"]["why"] == "collate is random (two calls differ)"


def test_truncation_an_encode_does_not_report_is_not_shown_as_none(tmp_path):
    """An encode without truncated_tokens: the Data table said share_truncated 0.0% beside 100% of targets
    partly cut (an outside examination): a number nothing measured."""
    from pilot.checks.collated import check_collated, split_statistics
    from tests.planted_tasks import runner

    task = runner.load("bug_collate_pad_counted").make_task()
    encoded = {
        split: [{k: v for k, v in item.items() if k != "truncated_tokens"} for item in task.encoded(split)]
        for split in task.splits
    }
    findings, views, _ = check_collated(task, encoded, 4)
    assert split_statistics(task, views, findings)["train"]["share_truncated"] is None
    findings, views, _ = check_collated(task, {s: task.encoded(s) for s in task.splits}, 4)
    reported = any("truncated_tokens" in item for item in task.encoded("train"))
    assert (split_statistics(task, views, findings)["train"]["share_truncated"] is None) is not reported


# planted tasks of an outside examination (2026-12-05): what reached the loss passed every check
CAUGHT = {
    "bug_mc_answer_index_before_shuffle": ("fail", "every one of its 184 examples has the one class 'A'"),
    "bug_listwise_padded_candidates_in_softmax": ("fail", "an example's loss depends on its micro-batch"),
    "bug_multilabel_tag_columns_per_split": ("fail", "label column 0 is tag 'health' in val but 'travel' in train"),
    "bug_chat_second_user_turn_trained_undeclared": ("warn", "a later turn's prompt is trained"),
}
TWINS = [
    "ok_listwise_padded_candidates_masked",
    "ok_multilabel_tag_columns_fixed",
    "ok_chat_two_turns_undeclared",
    "ok_qa_truncated_no_answer",  # transformers' QA heads score padded positions too: not the loss-alone probe's
]


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_what_an_examination_planted_is_caught_naming_its_cause(name):
    """A multiple-choice label taken before its options were shuffled (by-name checks ran for classification
    kinds only), padded candidates scored in the softmax (a mask of the task's own), a tag vocabulary built per
    split, and a second user turn trained (it was blamed on the stop token)."""
    from tests.planted_tasks import runner

    module = runner.load(name)
    task = module.make_task()
    model = module.build_model(task) if hasattr(module, "build_model") else module.Model()
    result, _ = inspect_task(task, n_show=1, micro_batch=4, model=model)
    verdict, said = CAUGHT[name]
    assert result.verdict == verdict and said in result.reason, result.reason


@pytest.mark.parametrize("name", TWINS)
def test_their_correct_twins_pass_inspect(name):
    from tests.planted_tasks import runner

    module = runner.load(name)
    task = module.make_task()
    model = module.build_model(task) if hasattr(module, "build_model") else module.Model()
    result, _ = inspect_task(task, n_show=1, micro_batch=4, model=model)
    assert result.verdict == "pass", result.reason


def test_tag_columns_judge_a_renumbered_vocabulary_only():
    """A review: tags spelt otherwise in validation's source ('Sports', lowered into one fixed vocabulary) and
    a keyword field that is no tag list failed as a vocabulary fitted per split. Only a name training gives
    to another column is a renumbering."""
    from pilot.checks.tag_columns import tag_column_findings
    from tests.planted_tasks import _multilabel as ml

    def findings(transform):
        task = ml.task(ml.fixed)
        for split, part in task.splits.items():
            for example in part:
                example.fields.update(transform(split, example))
        fixed = {name: k for k, name in enumerate(ml.TAGS)}

        def encode(e):
            y = torch.zeros(len(ml.TAGS))
            for tag in e.fields["tags"]:
                y[fixed[tag.lower()]] = 1
            return {"index": e.index, "inputs": torch.from_numpy(e.fields["x"]), "y": y}

        task.encode = encode
        return tag_column_findings(task, {s: task.encoded(s) for s in task.splits})[0]

    assert not findings(
        lambda s, e: {"tags": [t.capitalize() for t in e.fields["tags"]] if s == "val" else e.fields["tags"]}
    )

    def keywords(split, example):  # a field of keywords, one of which goes with a rare tag, otherwise per split
        travel = "travel" in example.fields["tags"]
        return {"keywords": [f"w{example.index}"] + (["trip" if split == "train" else "journey"] if travel else [])}

    assert not findings(keywords)
    task = ml.task(ml.first_seen)  # numbered per split: found
    assert tag_column_findings(task, {s: task.encoded(s) for s in task.splits})[0]


def test_an_output_that_changes_with_the_padding_its_batch_adds_is_said_to_read_the_padding():
    """Spectrograms of different lengths zero-padded by collate, mean-pooled over every frame: inspect failed
    naming "candidates flattened choice-major" (an outside examination); the example is padded in its
    micro-batch, and that is what its output reads."""
    import torch.nn.functional as F

    from pilot.checks.batch_mixing import batch_mixing_findings
    from tests.planted_tasks._common import classification_task

    def encode(e):
        frames = 3 + e.index % 5  # 3 to 7 frames
        return {
            "index": e.index,
            "x": torch.randn(frames, 8, generator=torch.Generator().manual_seed(e.index)),
            "label": 0,
        }

    def collate(items):
        longest = max(len(i["x"]) for i in items)
        return {
            "x": torch.stack([F.pad(i["x"], (0, 0, 0, longest - len(i["x"]))) for i in items]),
            "labels": torch.tensor([i["label"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    class MeanPool(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(8, 3)

        def forward(self, x):
            return self.head(x.mean(dim=1))  # the padded frames counted in the mean

    task = classification_task(encode=encode, collate=collate, forward=lambda m, b: m(b["x"]))
    encoded = [task.encode(e) for e in task.splits["train"][:4]]
    torch.manual_seed(0)
    findings, _ = batch_mixing_findings(task, MeanPool(), encoded, micro_batch=4)
    assert findings and "depends on the padding its micro-batch adds ('x'" in findings[0].problem, findings
    assert "choice-major" not in findings[0].problem


def test_padding_an_example_brings_alone_is_judged_in_every_split():
    """A validation set tokenised once, left-padded to max_length, fed to GPT-2 without position_ids: the
    padding check on training batches sees nothing (training's examples are padded by collate), the
    example alone already holds its padding. Inspect fails naming the split; the same cache right-padded
    (GPT-2 is causal and reads the last real token) passes, and so does the bug's training split."""
    from pilot.checks.own_padding import own_padding_findings
    from tests.planted_tasks import runner

    for name, failed in (("bug_val_pretokenised_left_padded", True), ("ok_val_pretokenised_right_padded", False)):
        module = runner.load(name)
        task = module.make_task()
        result, _ = inspect_task(task, 2, 4, module.build_model(task))
        assert (result.verdict == "fail") is failed, result.reason
        encoded = {split: task.encoded(split) for split in task.splits}
        findings, details = own_padding_findings(task, module.build_model(task), encoded)
        assert details["examples_compared"] == {"val": 3}, details  # training's examples hold no padding alone
        if failed:
            assert "val examples arrive padded even alone" in result.reason and "on the left" in result.reason
            assert findings[0].split == "val" and "position_ids" in str(findings[0])
        else:
            assert not findings


def test_answer_spans_that_point_beside_their_answers_fail_naming_the_move():
    """Start/end positions computed without the template's "context: " prefix point 9 tokens left of every
    answer: inspect fails naming the move; counted with it, the spans read the answer field and pass. Spans
    whose examples hold no answer text (positions of a word index) are not judged."""
    from pilot.checks.span_labels import span_label_findings
    from tests.planted_tasks import runner

    bug = runner.load("bug_qa_span_without_template_prefix")
    task = bug.make_task()
    result, _ = inspect_task(task, 2, 4, bug.build_model(task))
    assert result.verdict == "fail" and "spans point 9 token(s) left of the answers" in result.reason, result.reason
    ok = runner.load("ok_qa_span_after_template_prefix").make_task()
    findings, details = span_label_findings(ok, ok.encoded("train"))
    assert not findings and details["spans_reading_a_field"] == details["spans_read"] == 64
    untold = runner.load("ok_qa_truncated_no_answer").make_task()
    assert span_label_findings(untold, untold.encoded("train")) == ([], {})  # no decode_tokens: not judged


def test_a_triplet_models_output_of_three_embeddings_is_left_unjudged_not_crashed_on():
    """A two-tower model's [B, 3, D] output (query, positive, negative) with one label per row: inspect's
    label positions and alignment's shifted references assumed labels as wide as the output's positions and
    crashed (an outside examination). Now alignment says why it does not judge, and inspect passes."""
    from pilot.checks.alignment import alignment_check
    from tests.planted_tasks import runner

    module = runner.load("ok_triplet_margin_two_tower")
    task = module.make_task()
    result, _ = inspect_task(task, 2, 4, module.build_model(task))
    assert result.verdict == "pass", result.reason
    aligned = alignment_check(task, module.build_model(task), 4)
    assert aligned.verdict == "pass" and "not judged" in aligned.reason and "[4, 3, 32]" in aligned.reason, (
        aligned.reason
    )


def test_class_names_alike_but_for_whitespace_warn():
    """str.get_dummies(sep=",") on "sports, politics" keeps the leading space: " politics" beside
    "politics" warns naming the pairs; sep=", " gives one column per tag and nothing is said."""
    from pilot.checks.class_names import alike_name_findings
    from tests.planted_tasks import runner

    findings, details = alike_name_findings(runner.load("bug_tags_get_dummies_unstripped").make_task())
    assert findings and "' politics'" in findings[0].problem and [" politics", "politics"] in details["alike_names"]
    assert alike_name_findings(runner.load("ok_tags_get_dummies_separator_with_space").make_task()) == ([], {})
    from types import SimpleNamespace

    assert alike_name_findings(SimpleNamespace(class_names=["a", "b", "A", "B"])) == ([], {})  # EMNIST: case apart


def test_images_reshaped_instead_of_transposed_warn():
    """.view(3, H, W) of HWC bar images: each channel equals the raw array reshaped (up to the normalisation),
    not transposed: warned. .permute(2, 0, 1): the transposed array fits and nothing is said. Without the raw
    array (a texture of period three cannot be told from a reshape by the input alone) nothing is judged."""
    from pilot.checks.image_layout import image_layout_findings
    from tests.planted_tasks import runner

    task = runner.load("bug_images_view_not_permute").make_task()
    findings, details = image_layout_findings(task, task.encoded("train"))
    assert findings and "reshaped, not transposed" in findings[0].problem, details
    task = runner.load("ok_images_permuted_to_chw").make_task()
    findings, details = image_layout_findings(task, task.encoded("train"))
    assert not findings and details["inputs"]["transposed_fit"] > 0.99
    task = runner.load("bug_images_view_not_permute").make_task()
    encoded = task.encoded("train")
    for example in task.splits["train"]:
        example.fields = {k: v for k, v in example.fields.items() if k != "hwc"}
    assert image_layout_findings(task, encoded) == ([], {})


def test_the_sources_mask_given_as_the_decoders_fails_where_it_hides_targets():
    """BART given decoder_attention_mask=batch["attention_mask"] on a batch of one common width, targets twice
    the source's length: real target positions lie under the source's padding, a fail naming the argument;
    no decoder mask passed, nothing is said."""
    from pilot.checks.argument_keys import argument_findings
    from tests.planted_tasks import runner

    for name, said in (("bug_bart_decoder_mask_is_source_mask", True), ("ok_bart_common_width_no_decoder_mask", False)):
        module = runner.load(name)
        task = module.make_task()
        findings, _ = argument_findings(task, module.build_model(task), task.encoded("train"))
        assert bool(findings) is said, findings
        assert not said or "as its decoder_attention_mask" in findings[0].problem


def test_a_regression_whose_collate_cuts_its_float_targets_to_integers_fails_and_float_labels_pass():
    """encode gives 3.7 stars, collate builds labels with dtype=torch.long: named as cut to integers (fail); the
    same collate with float32: nothing."""
    from pilot.checks.truncated_labels import truncated_label_findings
    from tests.planted_tasks import runner

    task = runner.load("bug_ratings_collated_as_long").make_task()
    findings, details = truncated_label_findings(task, task.encoded("train"))
    assert findings and "cut to integers" in findings[0].problem and details["key"] == "y"
    twin = runner.load("ok_ratings_collated_as_float").make_task()
    assert truncated_label_findings(twin, twin.encoded("train"))[0] == []


def test_examples_without_a_class_are_said_trained_where_training_holds_them_and_scored_where_it_does_not():
    """A missing label filled with class 0 in validation only is scored against, not trained towards."""
    from pilot.checks.class_names import _used_as

    assert _used_as({"train", "val"}) == "trained towards"
    assert _used_as({"val"}) == "scored against (val only)"


def test_an_encode_that_raises_on_one_example_is_said_naming_that_example(digits_task):
    """It was "the task or model could not be built: KeyError: ..." (the task was built; its encode raised)."""
    from pilot.errors import built_with_error, in_one_line

    encode, bad = digits_task.encode, digits_task.splits["train"][7]

    def crashes(example):
        if example is bad:
            raise KeyError("answer_text")
        return encode(example)

    digits_task.encode = crashes
    with pytest.raises(KeyError) as raised:
        digits_task.encoded("train")
    said = f"the task's encode raised on train example 7 of its split (index {bad.index}): KeyError: 'answer_text'"
    assert built_with_error(raised.value).startswith(said) and in_one_line(raised.value).startswith(said)


def test_ids_past_the_models_vocabulary_are_named_with_the_embedding(tmp_path):
    """A model built with fewer token rows than the data's ids (a factory given another vocab_size): the contract
    said "IndexError: index out of range in self. Fix: the model's settings, or what the task's forward passes it"."""
    from pilot.models.tiny_gpt import TinyGPT

    task = generation(tmp_path, ROWS)
    highest = max(max(item["input_ids"].tolist()) for item in task.encoded("train"))
    model = TinyGPT(vocab_size=highest - 9, max_len=task.info.get("max_len", 96), d_model=16, n_head=2, n_layer=1)
    with pytest.raises(
        ContractError, match=rf"holds id {highest}, but the model's embedding \S+ has {highest - 9} rows"
    ):
        check_contract(task, model)


def test_a_model_whose_id2label_orders_the_classes_otherwise_fails(digits_task):
    """A fine-tuned checkpoint whose config.id2label gives the task's classes other ids (the MNLI trap): inspect
    said "every class name in its declared id"; transformers' LABEL_<n> defaults and other classes (a head
    retrained for a new task) are no finding."""
    from types import SimpleNamespace

    names = list(digits.CLASS_NAMES)
    net = model()
    for id2label, fails in (
        ({i: n for i, n in enumerate([names[1], names[0], *names[2:]])}, True),
        ({i: f"LABEL_{i}" for i in range(10)}, False),
        ({i: f"topic {i}" for i in range(10)}, False),
        ({i: n.upper() for i, n in enumerate(names)}, False),
    ):
        net.config = SimpleNamespace(id2label=id2label)
        result, _ = inspect_task(digits_task, n_show=1, micro_batch=2, model=net)
        said = [f.problem for f in result.findings if "config.id2label" in f.problem]
        assert bool(said) == fails and (result.verdict == "fail") == fails, (id2label, result.reason)
        assert not fails or "id 0: 'one' to the model, 'zero' to the task" in said[0], said


def test_a_collate_whose_draw_changes_nothing_once_is_still_found_random():
    """An outside examination: a mixup over a micro-batch of 2 leaves the batch as it was whenever randperm(2) is
    the identity; one collation compared with one other judged it not random half the time, and every mixed row
    then failed as differing from its example collated alone. Several collations of several examples find it."""
    import dataclasses

    from pilot.checks.collated import collate_is_random

    task = digits.make_task()
    items = task.encoded("train")[:2]
    calls = []

    def draws_on_the_third_call(chosen):
        calls.append(1)
        batch = task.collate(chosen)
        return {**batch, "inputs": batch["inputs"] * (2.0 if len(calls) == 3 else 1.0)}

    assert collate_is_random(dataclasses.replace(task, collate=draws_on_the_third_call), items)
    assert not collate_is_random(task, items)  # a collate that draws nothing
