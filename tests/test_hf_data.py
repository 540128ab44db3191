"""data=hf_instructions: a user's JSONL/CSV/Parquet file and local tokenizer, run as a user would.

A small byte-level BPE (scripts/make_tokenizer.py, trained on the shipped instructions in a second)
and data files with the user's own column names are made once per session; nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

make_tokenizer = pytest.importorskip("scripts.make_tokenizer").make_tokenizer  # needs pilot[hf]
pytest.importorskip("datasets")
AutoTokenizer = pytest.importorskip("transformers").AutoTokenizer

from pilot.checks.alignment import alignment_check  # noqa: E402
from pilot.checks.inspect_examples import inspect_task  # noqa: E402
from pilot.config.tokenizer import load_tokenizer  # noqa: E402
from pilot.data import hf_instructions  # noqa: E402
from pilot.data.task import IGNORE_INDEX  # noqa: E402
from pilot.models.tiny_gpt import TinyGPT  # noqa: E402
from pilot.validation import ConfigError, validate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPLIT = {"by": "group", "val_fraction": 0.2, "test_fraction": 0.1, "salt": "pilot"}
# the user's own column names: every field name is a setting
FIELDS = {"instruction_field": "prompt", "answer_field": "response", "group_field": "doc"}
FIELD_OVERRIDES = [f"data.{key}={value}" for key, value in FIELDS.items()]


@pytest.fixture(scope="session")
def hf_files(tmp_path_factory) -> dict[str, Path]:
    """Two tokenizers (plain, with a chat template) and one data set as JSONL, CSV and Parquet."""
    root = tmp_path_factory.mktemp("hf")
    shipped = [json.loads(line) for line in (ROOT / "pilot" / "data" / "instructions.jsonl").open()][:160]
    rows = [{"prompt": r["instruction"], "response": r["answer"], "doc": r["group"]} for r in shipped]
    files = {"tokenizer": make_tokenizer(root / "tok"), "chat": make_tokenizer(root / "chat", chat_template=True)}
    files["jsonl"] = root / "data.jsonl"
    files["jsonl"].write_text("".join(json.dumps(row) + "\n" for row in rows))
    frame = __import__("pandas").DataFrame(rows)
    files["csv"] = root / "data.csv"
    frame.to_csv(files["csv"], index=False)
    files["tsv"] = root / "data.tsv"
    frame.to_csv(files["tsv"], index=False, sep="\t")
    try:
        files["parquet"] = root / "data.parquet"
        frame.to_parquet(files["parquet"])
    except ImportError:  # no pyarrow: the Parquet cases skip
        del files["parquet"]
    return files


def make(hf_files, data: str = "jsonl", tokenizer: str = "tokenizer", **settings):
    loaded = load_tokenizer(str(hf_files[tokenizer]))
    special = {f"{which}_token_id": getattr(loaded, f"{which}_token_id") for which in ("pad", "bos", "eos")}
    arguments = {"vocab_size": 512, "split": SPLIT, **FIELDS, **special, **settings}
    path = arguments.pop("path", str(hf_files[data]))
    return hf_instructions.make_task(path=path, tokenizer=str(hf_files[tokenizer]), **arguments)


def overrides(hf_files, data: str = "jsonl", tokenizer: str = "tokenizer") -> list[str]:
    return [
        "data=hf_instructions",
        f"data.path={hf_files[data]}",
        f"data.tokenizer={hf_files[tokenizer]}",
        *FIELD_OVERRIDES,
    ]


def _run_pilot(hf_files, run_dir: Path, data: str, tokenizer: str) -> dict:
    """The user's command in a new process (model=tiny_gpt is the default model)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    command = [sys.executable, "-m", "pilot", *overrides(hf_files, data, tokenizer), f"hydra.run.dir={run_dir}"]
    result = subprocess.run([*command, "run.threads=1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads((run_dir / "run.json").read_text())


# ------------------------------------------------------------------------- as a user runs it
def test_the_user_command_passes_every_verdict(hf_files, tmp_path):
    record = _run_pilot(hf_files, tmp_path / "run", "jsonl", "tokenizer")
    assert record["verdicts"] and set(record["verdicts"].values()) == {"pass"}, record["verdicts"]
    shown = (tmp_path / "run" / "examples.txt").read_text()
    assert "### Instruction:⏎" in shown and "«" in shown and "»" in shown  # the tokenizer's tokens, decoded
    reproduce = (tmp_path / "run" / "REPRODUCE.md").read_text()  # a pilot of a plug-in run says how to rerun it
    assert "python -m pilot" in reproduce and "report.md" in reproduce
    named = re.search(r"config[^`]* is `([^`]+)`", reproduce).group(1)  # the config file it names exists
    assert (tmp_path / "run" / named).is_file(), named
    assert f"`{Path(hf_files['jsonl']).resolve()}` sha256" in reproduce and "package `datasets`" in reproduce


@pytest.mark.slow
@pytest.mark.parametrize("data, tokenizer", [("csv", "chat"), ("parquet", "tokenizer")])
def test_csv_parquet_and_chat_template_pass_every_verdict(hf_files, tmp_path, data, tokenizer):
    if data not in hf_files:
        pytest.skip("pyarrow is not installed")
    record = _run_pilot(hf_files, tmp_path / "run", data, tokenizer)
    assert set(record["verdicts"].values()) == {"pass"}, record["verdicts"]


def test_vocab_size_reaches_the_model_at_compose_time(hf_files, make_cfg):
    cfg = make_cfg(*overrides(hf_files))
    assert cfg.data.vocab_size == cfg.model.vocab_size == len(load_tokenizer(str(hf_files["tokenizer"]))) == 512
    validate(cfg)


@pytest.mark.parametrize("model", ["hf_causal_lm", "hf_gpt2"])
def test_a_transformers_model_takes_the_tokenizers_special_ids(hf_files, make_cfg, model):
    """The model YAMLs said pad 256, bos 257, eos 258 (the byte tokenizer's) whatever the data: with a
    BPE tokenizer id 256 is a word, whose embedding row never trained (padding_idx), and the export's
    end of text was a word. The ids now come from the data's tokenizer; a task naming none gives null."""
    from pilot.engine.build import build_model

    tokenizer = load_tokenizer(str(hf_files["tokenizer"]))
    cfg = make_cfg(*overrides(hf_files), f"model={model}")
    said = {which: cfg.model.config[f"{which}_token_id"] for which in ("pad", "bos", "eos")}
    assert (
        said
        == {which: getattr(tokenizer, f"{which}_token_id") for which in said}
        != {
            "pad": 256,
            "bos": 257,
            "eos": 258,
        }
    )
    validate(cfg)
    built = build_model(cfg)
    padding_row = built.get_input_embeddings().padding_idx  # Llama's embedding has one, GPT-2's none
    assert padding_row == (tokenizer.pad_token_id if model == "hf_causal_lm" else None)
    assert built.config.eos_token_id == tokenizer.eos_token_id
    assert make_cfg(f"model={model}").model.config.pad_token_id == 256  # the byte tokenizer's, data=instructions


def test_a_saved_models_pad_id_that_the_data_writes_as_bos_is_refused(hf_files, make_cfg, tmp_path):
    """An outside examination: a saved config.json with pad_token_id=<the tokenizer's bos> trained in mode=train
    without a word, the bos row kept as padding (zeros, no gradient) while every example starts with it."""
    transformers = pytest.importorskip("transformers")
    tokenizer = load_tokenizer(str(hf_files["tokenizer"]))
    for pad, refused in ((tokenizer.bos_token_id, True), (tokenizer.pad_token_id, False)):
        config = transformers.LlamaConfig(
            vocab_size=512, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            pad_token_id=pad, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        )  # fmt: skip
        saved = tmp_path / f"pad{pad}"
        transformers.LlamaForCausalLM(config).save_pretrained(saved)
        cfg = make_cfg(*overrides(hf_files), "model=hf_causal_lm", f"model.path={saved}")
        if not refused:
            validate(cfg)
            continue
        with pytest.raises(ConfigError, match=rf"pad_token_id={pad}, which the data's tokenizer writes as <bos>"):
            validate(cfg)


def test_a_special_id_other_than_the_tokenizers_is_refused_naming_key_and_fix(hf_files, make_cfg):
    with pytest.raises(ConfigError) as error:
        validate(make_cfg(*overrides(hf_files), "model=hf_causal_lm", "data.pad_token_id=5"))
    assert "data.pad_token_id=5 but the tokenizer" in str(error.value)
    assert "Fix: leave data.pad_token_id at ${pilot.tokenizer_id:${data.tokenizer},pad}" in str(error.value)
    with pytest.raises(ConfigError, match="data.eos_token_id=3 but the byte tokenizer's eos id is 258"):
        validate(make_cfg("data.eos_token_id=3"))


# ------------------------------------------------------------------------- what reaches the loss
@pytest.mark.parametrize("data", ["csv", "tsv", "parquet"])
def test_every_file_format_gives_the_same_examples(hf_files, data):
    if data not in hf_files:
        pytest.skip("pyarrow is not installed")
    expected, found = make(hf_files, "jsonl"), make(hf_files, data)
    assert {k: [e.group for e in v] for k, v in found.splits.items()} == {
        k: [e.group for e in v] for k, v in expected.splits.items()
    }
    for mine, theirs in zip(found.encoded("train"), expected.encoded("train")):
        torch.testing.assert_close(mine["labels"], theirs["labels"], rtol=0, atol=0)


def test_prompt_masked_answer_and_eos_trained(hf_files):
    task = make(hf_files)
    tokenizer = load_tokenizer(str(hf_files["tokenizer"]))
    example = task.splits["train"][0]
    item = task.encode(example)
    counted = item["labels"][item["labels"] != IGNORE_INDEX].tolist()
    assert counted == task.expected_targets(example)
    assert counted[-1] == tokenizer.eos_token_id and item["input_ids"][0] == tokenizer.bos_token_id
    assert tokenizer.decode(counted[:-1]) == example.fields["answer"]
    assert task.info["prompt"] == "prompt_format" and task.target_position == "next_token"
    result, _ = inspect_task(task, n_show=1, micro_batch=4)
    assert result.verdict == "pass", result.reason
    torch.manual_seed(0)
    model = TinyGPT(vocab_size=512, max_len=128, d_model=32, n_layer=1, n_head=2, dropout=0.0)
    assert alignment_check(task, model, micro_batch=4).verdict == "pass"


def test_chat_template_is_used_when_the_tokenizer_has_one(hf_files):
    task = make(hf_files, tokenizer="chat")
    example = task.splits["train"][0]
    shown = "".join(task.decode_tokens(task.encode(example)["input_ids"].tolist()))
    assert task.info["prompt"] == "chat template"
    # the answer is the assistant turn as the template closes it (its newline), then eos
    assert shown.startswith("«<|user|>⏎") and f"<|assistant|>⏎{example.fields['answer']}⏎»" in shown
    assert inspect_task(task, n_show=1, micro_batch=4)[0].verdict == "pass"
    assert make(hf_files, tokenizer="chat", use_chat_template=False).info["prompt"] == "prompt_format"


CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_the_chat_templates_end_of_turn_is_trained_and_eos_not_doubled(hf_files, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(str(hf_files["tokenizer"]))  # a copy of its own: it is edited
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.chat_template = CHATML
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for eos in (tokenizer.eos_token, "<|im_end|>"):  # a base tokenizer's eos, and an instruct one's
        tokenizer.eos_token = eos
        directory = tmp_path / f"chatml-{eos.strip('<|>')}"
        tokenizer.save_pretrained(str(directory))
        task = make({**hf_files, "chatml": directory}, tokenizer="chatml", vocab_size=len(tokenizer))
        item = task.encode(task.splits["train"][0])
        trained = item["input_ids"][item["labels"] != -100].tolist()
        assert trained.count(end_of_turn) == 1  # generation stops at <|im_end|>: the model learns to emit it
        assert trained.count(tokenizer.eos_token_id) == 1  # eos added where the turn lacks it, never twice
        if eos != "<|im_end|>":
            assert trained[-1] == tokenizer.eos_token_id


def test_padding_is_the_pad_id_or_eos_and_the_estimate_batch_fits_the_vocabulary(hf_files):
    task = make(hf_files)
    items = task.encoded("train")[:4]
    batch = task.collate(items)
    padded = ~batch["attention_mask"]
    assert padded.any() and (batch["input_ids"][padded] == task.info["pad_id"]).all()
    assert task.info["pad_id"] == load_tokenizer(str(hf_files["tokenizer"])).pad_token_id
    assert hf_instructions.pad_id_of(SimpleNamespace(pad_token_id=None, eos_token_id=7)) == 7
    synthetic = task.synthetic_batch(2, 200)
    assert synthetic["input_ids"].shape == (2, 200) and int(synthetic["input_ids"].max()) < 512


# ------------------------------------------------------------------------- the checks see mistakes
def test_an_unmasked_prompt_fails_inspect(hf_files):
    task = make(hf_files)
    encode = task.encode

    def unmasked(example):  # the mistake: labels copied from the token ids, prompt included
        item = encode(example)
        return {**item, "labels": item["input_ids"].clone()}

    task.encode = unmasked
    result, _ = inspect_task(task, n_show=1, micro_batch=4)
    assert result.verdict == "fail"
    assert any("instruction tokens counted" in finding.problem for finding in result.findings)


def test_an_answer_cut_by_truncation_fails_inspect(hf_files):
    task = make(hf_files, max_len=12, truncation_side="right")
    result, _ = inspect_task(task, n_show=1, micro_batch=4)
    assert result.verdict == "fail"


@pytest.mark.parametrize(
    "override, key, words",
    [
        ("data.answer_field=answer", "data.answer_field", ["data.answer_field=answer", "response", "Fix"]),
        ("data.tokenizer=no_such_tokenizer", "data.tokenizer", ["no such directory", "make_tokenizer.py"]),
        ("data.path=no_such.jsonl", "data.path", ["no such file", "Fix"]),
        ("data.tokenizer=???", "data.tokenizer", ["no value", "Fix: data.tokenizer="]),
    ],
)
def test_a_wrong_setting_is_a_config_error_naming_key_and_fix(hf_files, make_cfg, override, key, words):
    with pytest.raises(ConfigError) as error:
        validate(make_cfg(*overrides(hf_files), override))
    problems = [p for p in error.value.problems if p.key == key]
    assert problems, str(error.value)
    assert all(word in str(problems[0]) for word in words), str(problems[0])


def test_a_missing_tokenizer_is_reported_once(hf_files, make_cfg):
    with pytest.raises(ConfigError) as error:
        validate(make_cfg(*overrides(hf_files), "data.tokenizer=no_such_tokenizer"))
    assert [p.key for p in error.value.problems] == ["data.tokenizer"], str(error.value)  # not model.vocab_size too


@pytest.mark.parametrize(
    "name, content, said",
    [
        ("empty.jsonl", "", "the file holds no rows"),
        ("cut.jsonl", '{"prompt": "a", "response": "b"}\n{"prompt": "c", \n', "JSON parse error"),
        ("broken.parquet", "\x00garbage", "Parquet magic bytes"),
    ],
)
def test_a_file_datasets_cannot_read_is_named_with_its_cause(hf_files, tmp_path, name, content, said):
    """An empty file was a bare StopIteration; a corrupt one datasets' 'An error occurred while
    generating the dataset', which names neither the file nor the line."""
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ValueError, match=f"data.path={path}: .*{said}") as refused:
        make(hf_files, path=str(path), instruction_field="instruction", answer_field="answer", group_field="group")
    assert "An error occurred" not in str(refused.value)


def test_a_model_end_of_text_other_than_the_tokenizers_is_refused(hf_files, make_cfg, tmp_path):
    """model.config.eos_token_id=7 (or a saved model whose config says another eos) ran and exported an
    end of text that is a word, without a word said."""
    tokenizer = load_tokenizer(str(hf_files["tokenizer"]))
    with pytest.raises(ConfigError) as error:
        validate(make_cfg(*overrides(hf_files), "model=hf_causal_lm", "model.config.eos_token_id=7"))
    assert [p.key for p in error.value.problems] == ["model.config.eos_token_id"]
    assert f"the data's tokenizer says eos_token_id={tokenizer.eos_token_id}" in str(error.value)
    import transformers

    settings = dict(vocab_size=512, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2)
    config = transformers.LlamaConfig(**settings, bos_token_id=tokenizer.bos_token_id, eos_token_id=5)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "saved")
    with pytest.raises(ConfigError, match="says eos_token_id=5 where the data's tokenizer says 1: it was made with "
                       "another tokenizer. Fix: data.tokenizer=") as error:  # fmt: skip
        validate(make_cfg(*overrides(hf_files), "model=hf_causal_lm", f"model.path={tmp_path / 'saved'}"))
    assert [p.key for p in error.value.problems] == ["data.tokenizer"]
    with pytest.raises(ConfigError) as error:  # the built-in byte tokenizer (data=instructions): no data.tokenizer
        validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'saved'}"))
    problem = next(p for p in error.value.problems if "another tokenizer" in p.fix)
    assert problem.key == "data" and "Fix: data=hf_instructions data.tokenizer=" in problem.fix, problem.fix
    config.eos_token_id = tokenizer.eos_token_id  # the model's own tokenizer: accepted
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "same")
    validate(make_cfg(*overrides(hf_files), "model=hf_causal_lm", f"model.path={tmp_path / 'same'}"))
    config.bos_token_id = 9  # Qwen2/3: config.json names a bos, their tokenizer has none and never writes it
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "qwen_like")
    saved, without_bos = f"model.path={tmp_path / 'qwen_like'}", tmp_path / "tok_without_bos"
    shutil.copytree(hf_files["tokenizer"], without_bos)
    settings = json.loads((without_bos / "tokenizer_config.json").read_text())
    (without_bos / "tokenizer_config.json").write_text(json.dumps({**settings, "bos_token": None}))
    assert load_tokenizer(str(without_bos)).bos_token_id is None
    validate(make_cfg(*overrides(hf_files), "model=hf_causal_lm", saved, f"data.tokenizer={without_bos}"))
    with pytest.raises(ConfigError, match="says bos_token_id=9 where the data's tokenizer says"):
        validate(make_cfg(*overrides(hf_files), "model=hf_causal_lm", saved))


def test_a_json_lines_file_read_as_csv_names_the_format_not_a_field():
    """data.file_format=csv on a JSONL file: the message blamed data.group_field=group ("row 0 has no field
    'group'", its one field named like a JSON object); it now names the format."""
    from pilot.data.hf_instructions import _field

    row = {'{"instruction": "say 0"': ' "answer": "0"}'}  # a JSONL line as the CSV reader splits it
    with pytest.raises(ValueError, match=r"holds JSON Lines, read as another format. Fix: data.file_format=json"):
        _field(row, "group_field", "group", 0)
    with pytest.raises(ValueError, match=r"data.group_field=group: row 0 has no field 'group'"):
        _field({"instruction": "say 0"}, "group_field", "group", 0)


def test_a_tab_separated_file_read_as_csv_names_the_tabs(hf_files):
    """A .tsv file: pilot said it could not tell the format and offered csv, which read one column named
    'prompt\tresponse\tdoc' and blamed data.instruction_field; now read by its extension, or its tabs named."""
    with pytest.raises(ValueError, match=r"separated by tabs .* Fix: data.file_format=tsv"):
        make(hf_files, "tsv", file_format="csv")
    assert len(make(hf_files, "tsv").splits["train"]) == len(make(hf_files, "csv").splits["train"])


def test_a_tokenizer_other_than_the_one_saved_with_the_model_is_refused(hf_files, make_cfg, tmp_path):
    """An outside examination: a model folder holding its own tokenizer, and data.tokenizer a BPE of the same size
    and special ids trained on other text: every check passed and the embeddings trained on other tokens' ids.
    Refused naming an id both hold as two tokens; the same tokenizer elsewhere (a copy) is accepted."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    mk = pytest.importorskip("scripts.make_tokenizer")
    transformers = pytest.importorskip("transformers")
    tokenizer = load_tokenizer(str(hf_files["tokenizer"]))
    config = transformers.LlamaConfig(
        vocab_size=512, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        max_position_embeddings=256, pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    saved = tmp_path / "saved"
    transformers.LlamaForCausalLM(config).save_pretrained(saved)
    tokenizer.save_pretrained(saved)
    validate(make_cfg(*overrides(hf_files), "model=hf_causal_lm", f"model.path={saved}"))  # a copy of it: accepted
    other = ByteLevelBPETokenizer()
    other.train_from_iterator(
        [text[::-1].upper() for text in mk.training_texts()], vocab_size=512, min_frequency=2, show_progress=False,
        special_tokens=list(mk.SPECIALS.values()),
    )  # fmt: skip
    PreTrainedTokenizerFast(tokenizer_object=other._tokenizer, **mk.SPECIALS).save_pretrained(tmp_path / "other")
    with pytest.raises(ConfigError, match=r"not the tokenizer saved with the model.*Fix: data.tokenizer=") as error:
        validate(make_cfg(*overrides(hf_files), "model=hf_causal_lm", f"model.path={saved}",
                          f"data.tokenizer={tmp_path / 'other'}"))  # fmt: skip
    assert [p.key for p in error.value.problems] == ["data.tokenizer"]


def test_a_file_format_datasets_does_not_read_names_that_key_not_the_path(tmp_path):
    """data.file_format=xml was said as "data.path=...: cannot tell the file's format from its extension"
    (outside examination): the key typed wrong is named, with its values."""
    from pilot.data.hf_instructions import read_rows

    data = tmp_path / "rows.jsonl"
    data.write_text('{"instruction": "a", "answer": "b"}\n')
    with pytest.raises(ValueError, match=r"^data.file_format=xml: datasets reads json, csv, tsv or parquet"):
        read_rows(str(data), "xml")
    assert read_rows(str(data), None) == [{"instruction": "a", "answer": "b"}]
