"""A small byte-level BPE tokenizer trained on the shipped instruction data, saved as a
``PreTrainedTokenizerFast`` directory (tokenizer.json + tokenizer_config.json): seconds, no download.

    python scripts/make_tokenizer.py my_tokenizer/                   # prompt_format is used
    python scripts/make_tokenizer.py my_tokenizer/ --chat-template   # with a chat template

Then ``python -m pilot data=hf_instructions data.tokenizer=my_tokenizer/ data.path=...``.
Tests call ``make_tokenizer(directory)``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tokenizers import ByteLevelBPETokenizer
from transformers import PreTrainedTokenizerFast

DATA = Path(__file__).resolve().parents[1] / "pilot" / "data" / "instructions.jsonl"
SPECIALS = {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"}
# a user turn, then the assistant's generation prompt: what data=hf_instructions puts before the answer
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def training_texts(path: Path = DATA) -> list[str]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [text for row in rows for text in (row["instruction"], row["answer"])]


def make_tokenizer(directory: str | Path, vocab_size: int = 512, chat_template: bool = False) -> Path:
    """Train a byte-level BPE of ``vocab_size`` ids (256 bytes, specials, merges) and save it."""
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        training_texts(), vocab_size=vocab_size, min_frequency=2, show_progress=False,
        special_tokens=list(SPECIALS.values()),
    )  # fmt: skip
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, **SPECIALS)
    if chat_template:
        tokenizer.chat_template = CHAT_TEMPLATE
    directory = Path(directory)
    tokenizer.save_pretrained(str(directory))
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="where to save the tokenizer")
    parser.add_argument("--vocab-size", type=int, default=512, help="ids in total (bytes, specials, merges)")
    parser.add_argument("--chat-template", action="store_true", help="also save a small chat template")
    args = parser.parse_args()
    path = make_tokenizer(args.directory, args.vocab_size, args.chat_template)
    print(f"saved a {args.vocab_size}-id byte-level BPE tokenizer to {path}")


if __name__ == "__main__":
    main()
