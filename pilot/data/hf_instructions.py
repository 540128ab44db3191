"""Instruction generation on a user's own file and tokenizer (``data=hf_instructions``).

The rows come from a local JSONL, CSV or Parquet file read by the ``datasets`` library, the
tokens from a tokenizer saved in a local directory (``AutoTokenizer.from_pretrained``); nothing
is downloaded. Each row becomes ``prompt + answer + <eos>``: the prompt is the tokenizer's chat
template applied to the instruction (a user turn, then the assistant's generation prompt) when it
has one and ``use_chat_template`` is on, else ``prompt_format`` filled with the instruction (after
``<bos>`` when the tokenizer has one). With a chat template the answer is the assistant turn as the
template closes it (``<|im_end|>``, ``<|eot_id|>``...: what generation stops at), ``<eos>`` added
only when the turn does not hold it already. As in the built-in task (``pilot.data.instructions``), the
prompt's labels are -100 when ``mask_instruction``: only the answer and ``<eos>`` are trained,
and the loss predicts token t from the tokens before it. Padding uses the tokenizer's pad id (its
eos id when it has none). Every field name is a setting, so a file's own columns need no renaming.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pilot.config.tokenizer import load_tokenizer
from pilot.config.values import enum_value
from pilot.data import instructions as generation
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}
READERS = {"json": ("json", {}), "csv": ("csv", {}), "tsv": ("csv", {"sep": "\t"}), "parquet": ("parquet", {})}
FORMATS = "json, csv, tsv or parquet"


def read_rows(path: str, file_format: str | None = None) -> list[dict[str, Any]]:
    """The rows of a local file through ``datasets.load_dataset(builder, data_files=path)``."""
    from datasets import load_dataset  # optional extra `pilot[hf]`: imported only by this task
    from datasets.utils import logging as datasets_logging

    datasets_logging.disable_progress_bar()  # a bar per split and its log of a file it cannot read: the
    datasets_logging.set_verbosity_error()  # refusal below says it once

    if file_format is not None and file_format not in READERS:
        raise ValueError(
            f"data.file_format={file_format}: datasets reads {FORMATS} here. Fix: data.file_format={FORMATS}, "
            "or data.file_format=null to take the format from the file's extension."
        )
    builder = file_format or BUILDERS.get(Path(path).suffix.lower())
    if builder not in READERS:
        raise ValueError(
            f"data.path={path}: cannot tell the file's format from its extension. "
            f"Fix: data.file_format={FORMATS} (or name the file *.jsonl, *.csv, *.tsv, *.parquet)."
        )
    reader, options = READERS[builder]  # tab-separated: datasets' csv reader with its separator
    try:
        rows = list(load_dataset(reader, data_files=str(Path(path).expanduser()), split="train", **options))
    except StopIteration:  # datasets' reader on an empty file
        rows = []
    except Exception as error:  # noqa: BLE001 - datasets' own errors (ArrowInvalid, DatasetGenerationError...)
        raise ValueError(
            f"data.path={path}: datasets cannot read it as {builder} ({_first_cause(error)}). Fix: a {builder} "
            f"file with one example per row, or data.file_format={FORMATS} when the extension "
            "does not say the format."
        ) from None
    if not rows:
        raise ValueError(f"data.path={path}: the file holds no rows. Fix: the file with your examples.")
    return rows


def _first_cause(error: BaseException) -> str:
    """The error datasets wrapped (its 'An error occurred while generating the dataset' says nothing):
    the chain of explicit causes to its end, on one line."""
    while error.__cause__ is not None:
        error = error.__cause__
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__


def _field(row: dict[str, Any], key: str, name: str, index: int) -> Any:
    if name not in row and any(str(column).lstrip().startswith("{") for column in row):  # JSON read as CSV
        raise ValueError(
            f"data.path: row {index} has a column named like a JSON object ({str(next(iter(row)))[:60]}...): the "
            "file holds JSON Lines, read as another format. Fix: data.file_format=json (or null: the "
            "file's extension tells)"
        )
    if name not in row and any("\t" in str(column) for column in row):  # a tab-separated file read as csv
        raise ValueError(
            f"data.path: row {index}'s columns are separated by tabs ({str(next(iter(row)))[:60]!r}), read as "
            "comma-separated. Fix: data.file_format=tsv (or name the file *.tsv)"
        )
    if name not in row:
        raise ValueError(
            f"data.{key}={name}: row {index} has no field '{name}' (its fields: {', '.join(map(str, row))}). "
            f"Fix: data.{key}=<the column that holds it>."
        )
    return row[name]


def load_examples(rows: list[dict[str, Any]], fields: dict[str, str | None]) -> list[Example]:
    """Rows -> Examples. ``fields`` maps instruction/answer/group/time to the file's column names;
    group None makes each row its own group, time None gives no time."""
    examples = []
    for index, row in enumerate(rows):
        group = _field(row, "group_field", fields["group"], index) if fields["group"] else index
        time = _field(row, "time_field", fields["time"], index) if fields["time"] else None
        text = {name: _field(row, f"{name}_field", fields[name], index) for name in ("instruction", "answer")}
        if any(value is None for value in text.values()):
            raise ValueError(f"row {index} of data.path has an empty instruction or answer. Fix: fill or drop it.")
        examples.append(Example(index=index, group=str(group), fields={k: str(v) for k, v in text.items()}, time=time))
    return examples


class PromptTokens:
    """Token ids of one example's prompt and answer, from the tokenizer and the prompt format."""

    def __init__(self, tokenizer, prompt_format: str, use_chat_template: bool):
        if tokenizer.eos_token_id is None:
            raise ValueError(
                "data.tokenizer has no eos token: the answer could never end. "
                "Fix: save the tokenizer with an eos_token (scripts/make_tokenizer.py sets one)."
            )
        if "{instruction}" not in prompt_format:
            raise ValueError(
                f"data.prompt_format={prompt_format!r} has no {{instruction}}. "
                'Fix: e.g. data.prompt_format="### Instruction:\\n{instruction}\\n### Answer:\\n".'
            )
        self.tokenizer = tokenizer
        self.prompt_format = prompt_format
        self.chat = bool(use_chat_template and getattr(tokenizer, "chat_template", None))

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _chat_prompt(self, instruction: str) -> str:
        messages = [{"role": "user", "content": instruction}]
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def prompt(self, instruction: str) -> list[int]:
        if self.chat:
            return self._ids(self._chat_prompt(instruction))
        bos = self.tokenizer.bos_token_id
        return ([bos] if bos is not None else []) + self._ids(self.prompt_format.format(instruction=instruction))

    def answer(self, answer: str, instruction: str = "") -> list[int]:
        """The trained tokens: with a chat template, the assistant turn as the template closes it (its
        end-of-turn marker is what generation stops at), then eos unless the turn already holds it."""
        if not self.chat:
            return self._ids(answer) + [self.tokenizer.eos_token_id]
        prompt = self._chat_prompt(instruction)
        messages = [{"role": "user", "content": instruction}, {"role": "assistant", "content": answer}]
        whole = self.tokenizer.apply_chat_template(messages, tokenize=False)
        if not whole.startswith(prompt):
            raise ValueError(
                "data.use_chat_template=true but the tokenizer's chat template does not render the prompt "
                "as the start of the conversation (the answer cannot be cut out). "
                "Fix: data.use_chat_template=false (data.prompt_format is used)."
            )
        ids = self._ids(whole[len(prompt) :])
        return ids if self.tokenizer.eos_token_id in ids else ids + [self.tokenizer.eos_token_id]

    def strings(self, ids) -> list[str]:
        """One printable string per token for ``inspect``'s view, in the legend of the byte
        tokenizer: eos -> '»', bos -> '«', pad -> '_', newline -> '⏎', other control characters -> '·'."""
        tokenizer = self.tokenizer
        marks = {tokenizer.pad_token_id: "_", tokenizer.bos_token_id: "«", tokenizer.eos_token_id: "»"}
        shown = []
        for token in map(int, ids):
            text = marks.get(token) or tokenizer.decode([token], skip_special_tokens=False)
            shown.append("".join("⏎" if c == "\n" else "·" if not c.isprintable() else c for c in text))
        return shown


def pad_id_of(tokenizer) -> int:
    """The tokenizer's pad id, or its eos id when it has none (padding is never in the loss)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _check_sizes(loaded, tokenizer: str, vocab_size: int, special_ids: dict[str, Any]) -> None:
    """The vocabulary and the special ids the config gives the model are the tokenizer's own."""
    if vocab_size < len(loaded):
        raise ValueError(
            f"data.vocab_size={vocab_size} but the tokenizer in {tokenizer} has {len(loaded)} ids. "
            "Fix: leave data.vocab_size at ${pilot.tokenizer_size:${data.tokenizer}}."
        )
    actual = {which: getattr(loaded, f"{which}_token_id") for which in special_ids}
    keep = "${{pilot.tokenizer_id:${{data.tokenizer}},{which}}} (here {actual})"
    generation.check_special_ids(special_ids, actual, f"the tokenizer in {tokenizer} says its", keep)


def make_task(
    path: str,
    tokenizer: str,
    vocab_size: int,
    file_format: str | None = None,
    instruction_field: str = "instruction",
    answer_field: str = "answer",
    group_field: str | None = "group",
    time_field: str | None = None,
    prompt_format: str = "### Instruction:\n{instruction}\n### Answer:\n",
    use_chat_template: bool = True,
    max_len: int = 128,
    padding_side: str = "right",
    truncation_side: str = "left",
    mask_instruction: bool = True,
    split=None,
    *,
    pad_token_id: int | None,
    bos_token_id: int | None,
    eos_token_id: int | None,
) -> TaskData:
    """The task; ``pad_token_id``, ``bos_token_id``, ``eos_token_id``: the ids the config gives the
    model (its padding row, the export's end of text), each checked against the tokenizer's own."""
    loaded = load_tokenizer(str(tokenizer))
    _check_sizes(loaded, tokenizer, vocab_size, {"pad": pad_token_id, "bos": bos_token_id, "eos": eos_token_id})
    tokens = PromptTokens(loaded, prompt_format, use_chat_template)
    fields = {"instruction": instruction_field, "answer": answer_field, "group": group_field, "time": time_field}
    examples = load_examples(read_rows(path, file_format), fields)
    padding_side, truncation_side = enum_value(padding_side), enum_value(truncation_side)
    pad_id = pad_id_of(loaded)

    def encode(example: Example) -> dict[str, Any]:
        instruction = example.fields["instruction"]
        prompt, answer = tokens.prompt(instruction), tokens.answer(example.fields["answer"], instruction)
        return generation.pack_example(example.index, prompt, answer, max_len, truncation_side, mask_instruction)

    return TaskData(
        kind="generation",
        splits=make_splits(examples, split),
        encode=encode,
        collate=generation.make_collate(padding_side, pad_id),
        loss_sum=generation.loss_sum,
        target_count=generation.target_count,
        predict=generation.predict,
        forward=generation.forward_for(padding_side),
        expected_targets=lambda example: tokens.answer(example.fields["answer"], example.fields["instruction"]),
        decode_tokens=tokens.strings,
        synthetic_batch=lambda micro_batch, seq_len: generation.synthetic_batch(micro_batch, seq_len, len(loaded)),
        target_position="next_token",
        info={
            "vocab_size": len(loaded),
            "pad_id": pad_id,
            "max_len": max_len,
            "padding_side": padding_side,
            "truncation_side": truncation_side,
            "mask_instruction": mask_instruction,
            "prompt": "chat template" if tokens.chat else "prompt_format",
            "target_unit": "token",
        },
    )
