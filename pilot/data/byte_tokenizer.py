"""Byte-level tokenizer: every UTF-8 byte is a token, plus pad, bos and eos.

Self-contained (no vocabulary file, no download) and lossless, so the pilot can
decode exactly the tensors that reach the loss.
"""

from __future__ import annotations

from collections.abc import Iterable

PAD_ID = 256
BOS_ID = 257
EOS_ID = 258
VOCAB_SIZE = 259
_SPECIAL = {PAD_ID: "<pad>", BOS_ID: "<bos>", EOS_ID: "<eos>"}


def encode(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def decode(ids: Iterable[int]) -> str:
    """Decode ids; special tokens are written as <pad>, <bos>, <eos>."""
    out: list[str] = []
    buffer = bytearray()
    for token in ids:
        token = int(token)
        if token in _SPECIAL:
            out.append(buffer.decode("utf-8", errors="replace"))
            buffer.clear()
            out.append(_SPECIAL[token])
        else:
            buffer.append(token)
    out.append(buffer.decode("utf-8", errors="replace"))
    return "".join(out)


def token_strings(ids: Iterable[int]) -> list[str]:
    """One printable string per token, for showing tokens one under another.

    Specials: <pad> -> '_', <bos> -> '«', <eos> -> '»'; newline -> '⏎';
    other non-printable bytes -> '·'.
    """
    shown = []
    for token in ids:
        token = int(token)
        if token == PAD_ID:
            shown.append("_")
        elif token == BOS_ID:
            shown.append("«")
        elif token == EOS_ID:
            shown.append("»")
        elif token == 10:
            shown.append("⏎")
        elif 32 <= token < 127:
            shown.append(chr(token))
        else:
            shown.append("·")
    return shown
