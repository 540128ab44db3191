"""A collated row against the same example collated alone and against what ``encode`` gave.

``row_differences`` compares each row's real positions (the batch's padding mask; a seq2seq batch's
decoder keys with the decoder's) with the example collated on its own and with the encoded item, so
a collate whose rows depend on what else shares the micro-batch, or that changes what encode gave,
is named with the key and the positions (``pilot.checks.collated`` step 3).
"""

from __future__ import annotations

import torch

from pilot.checks.loss_probe import SEQ2SEQ, batch_size, decoder_mask, decoder_side, padding_mask, spans
from pilot.checks.padding import pad_collision
from pilot.data.task import Batch, TaskData


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    if a.is_floating_point() or b.is_floating_point():
        return bool(torch.allclose(a.double(), b.double(), rtol=1e-6, atol=1e-6))
    return bool(torch.equal(a, b))


def _part(value: torch.Tensor, row: int, mask: torch.Tensor | None) -> torch.Tensor:
    """A row of a per-example tensor; only its real positions when ``mask`` covers it."""
    if mask is not None and value.dim() >= 2 and value.shape[:2] == mask.shape:
        return value[row][mask[row]]
    return value[row]


def _same_row(mine: torch.Tensor, alone: torch.Tensor, trim: bool) -> bool:
    """Equal; with ``trim`` (padding not declared), equal to the row's first or last positions,
    along its first axis (positions, then features) or its last (a row of several sequences, such as
    a multiple-choice example's candidates: sequences, then positions)."""
    if same(mine, alone):
        return True
    if not trim or mine.dim() == 0 or mine.dim() != alone.dim():
        return False
    for axis in sorted({0, mine.dim() - 1}):
        n, width = alone.shape[axis], mine.shape[axis]
        if n >= width or any(mine.shape[d] != alone.shape[d] for d in range(mine.dim()) if d != axis):
            continue
        if same(mine.narrow(axis, 0, n), alone) or same(mine.narrow(axis, width - n, n), alone):
            return True
    return False


def _row_positions(value: torch.Tensor, singles: list[Batch], items: list[dict], key: str, size: int) -> bool:
    """An integer key that holds each row's own position in the micro-batch (0 for an example alone), and
    that no encoded example holds a value of its own for (``key``, or ``label`` for ``labels``): in-batch
    targets (a contrastive loss's positives) that depend on the row by design — not a collate that
    replaced each example's label by its row index. Also k * size + position (positives after k blocks of
    the batch's columns: hard negatives first), k for an example alone."""
    if value.is_floating_point() or value.dim() != 1 or size < 2:
        return False
    if any(item.get(key) is not None or (key == "labels" and item.get("label") is not None) for item in items):
        return False
    # row i's target at column i, or at column k * size + i of a score matrix whose width follows the batch
    # ([queries' negatives | positives]: labels size + i; an example alone, k)
    blocks, rest = divmod(int(value[0]), size)
    return (
        rest == 0
        and torch.equal(value, (blocks * size + torch.arange(size, device=value.device)).to(value.dtype))
        and all(
            torch.is_tensor(one.get(key)) and one[key].numel() == 1 and int(one[key].item()) == blocks
            for one in singles
        )
    )


def _offset_segments(batch: Batch, singles: list[Batch], key: str, size: int) -> dict[int, str] | None:
    """Row -> how its segment differs, where ``key`` holds each row's start in a flat key of the batch (the
    rows' values one after another: ``nn.EmbeddingBag``'s input and offsets), 0 for an example alone: the
    segment from its start to the next row's is compared with the flat key of the example alone. None
    when ``key`` is no such offsets (each row's own value, compared as any other key)."""
    value = batch[key]
    if (
        value.is_floating_point()
        or value.dim() != 1
        or size < 2
        or int(value[0]) != 0
        or bool((value.diff() <= 0).any())  # strictly increasing: labels [0, 0] are no offsets
    ):
        return None
    if not all(torch.is_tensor(one.get(key)) and one[key].tolist() == [0] for one in singles):
        return None
    flat = [
        name
        for name, other in batch.items()
        if torch.is_tensor(other) and other.dim() >= 1 and other.shape[0] >= int(value[-1]) and other.shape[0] != size
        and all(torch.is_tensor(one.get(name)) and one[name].dim() == other.dim() for one in singles)
    ]  # fmt: skip
    if not flat:
        return None
    ends = [*value[1:].tolist(), None]
    differing = {}
    for name in flat:
        for row, (start, end) in enumerate(zip(value.tolist(), ends)):
            mine = batch[name][start:end]
            if not same(mine, singles[row][name]) and row not in differing:
                differing[row] = (
                    f"'{name}' from its '{key}' ({start}) to the next row's differs from the example collated alone "
                    f"({len(singles[row][name])} values on its own, {len(mine)} there)"
                )
    return differing


def _differing_positions(mine: torch.Tensor, other: torch.Tensor, row: int, mask: torch.Tensor | None) -> str:
    """' at positions ...' (batch columns) where two equally long rows differ, else ''."""
    if mine.dim() == 0 or other.dim() == 0:
        return f" ({other.item()} on its own, {mine.item()} collated)" if mine.numel() == other.numel() == 1 else ""
    if mine.shape != other.shape or mine.dim() != 1:
        return f" ({len(other)} values on its own, {len(mine)} real positions collated)"
    columns = mask[row].nonzero().flatten().tolist() if mask is not None else list(range(len(mine)))
    wrong = [columns[i] for i in (mine != other.to(mine.dtype)).nonzero().flatten().tolist()]
    return f" at position(s) {spans(wrong)}"


def _width_of(value: object) -> tuple | None:
    return tuple(value.shape[:2]) if torch.is_tensor(value) and value.dim() >= 2 else None


def row_differences(task: TaskData, batch: Batch, items: list[dict], singles: list[Batch]) -> dict[int, list[str]]:
    """Row -> what differs from the example collated alone and from the encoded item.

    Real positions only (``padding_mask``); when the batch does not say where its padding is, a
    row matches when its first or last positions equal the example alone. One comparison per key
    and micro-batch when every row agrees; row by row only when one does not.
    """
    size = batch_size(batch)
    masks = {  # a seq2seq batch: the decoder's keys have their own positions
        "encoder": (padding_mask(task, batch), [padding_mask(task, one) for one in singles]),
        "decoder": (decoder_mask(batch, batch["labels"]), [decoder_mask(one, one["labels"]) for one in singles]),
    }
    differing: dict[int, list[str]] = {}
    for key, value in batch.items():
        if not torch.is_tensor(value) or value.dim() == 0 or value.shape[0] != size:
            continue
        if _row_positions(value, singles, items, key, size):
            continue
        if (segments := _offset_segments(batch, singles, key, size)) is not None:  # EmbeddingBag's offsets
            for row, said in segments.items():
                differing.setdefault(row, []).append(said)
            continue
        mask, alone_masks = masks[_side(task, batch, key)]
        per_position = mask is not None and value.dim() >= 2 and value.shape[:2] == mask.shape
        per_position = per_position and all(  # the mask's positions are the key's in every example alone too
            alone_mask is None or _width_of(single.get(key)) == alone_mask.shape
            for single, alone_mask in zip(singles, alone_masks)
        )  # (a seq2seq decoder's ids may be as wide as the encoder's in one batch by chance)
        # and the key grows with the batch's padding: a vector as wide in every example alone (multi-hot
        # tags beside ids as wide by chance) has no positions
        per_position = per_position and any((_width_of(one.get(key)) or (1, 0))[1] < value.shape[1] for one in singles)
        trim = not per_position and value.dim() >= 2  # no mask of its width (seq2seq labels): first or last positions
        mine = [_part(value, row, mask if per_position else None) for row in range(size)]
        alone = []
        for single, alone_mask in zip(singles, alone_masks):
            other = single.get(key)
            if not torch.is_tensor(other) or other.dim() == 0 or other.shape[0] != 1:
                alone = None
                break
            alone.append(_part(other, 0, alone_mask if per_position else None))
        if alone is not None and not _all_same(mine, alone):
            for row, (m, a) in enumerate(zip(mine, alone)):
                if not _same_row(m, a, trim):
                    where = _differing_positions(m, a, row, mask if per_position else None)
                    where += _padding_called_real(task, batch, row, mask) if per_position else ""
                    differing.setdefault(row, []).append(f"'{key}' differs from the example collated alone{where}")
        if not per_position or (key == "labels" and task.labels_shifted):  # shifted by declaration
            continue
        encoded = [_own_real_positions(item, key) for item in items]
        if not all(torch.is_tensor(e) and e.dim() == 1 for e in encoded) or _all_same(mine, encoded):
            continue
        for row, (m, e) in enumerate(zip(mine, encoded)):
            if not same(m, e.to(m.dtype)) and row not in differing:
                differing.setdefault(row, []).append(
                    f"'{key}' differs from what encode gave{_differing_positions(m, e, row, mask)}"
                    + (pad_collision(task, e) or _real_called_padding(task, batch, row, mask))
                )
    return differing


def _own_real_positions(item: dict, key: str) -> object:
    """What encode gave for ``key``, at the item's own real positions where it gave an attention mask of
    that length too (an example padded before collate: a split tokenised once with padding="max_length")."""
    value, mask = item.get(key), item.get("attention_mask")
    if torch.is_tensor(value) and value.dim() == 1 and torch.is_tensor(mask) and mask.shape == value.shape:
        return value[mask.bool()]
    return value


def _real_called_padding(task: TaskData, batch: Batch, row: int, mask: torch.Tensor) -> str:
    """Why the row has fewer real positions than encode gave: its attention mask is 0 on tokens that are not
    the pad id (``info["pad_id"]``): a mask built from a stale length."""
    pad, ids = task.info.get("pad_id"), batch.get("input_ids")
    if not isinstance(pad, int) or not torch.is_tensor(ids) or ids.shape != mask.shape:
        return ""
    hidden = torch.nonzero(~mask[row].bool() & (ids[row] != pad)).flatten().tolist()
    if not hidden:
        return ""
    return (
        f": the attention mask hides real tokens (position(s) {spans(hidden)}, not the pad id {pad}), a mask built "
        "from a stale length (the text's, before special tokens were added or before truncation). Fix: build "
        "attention_mask from the ids collate returns (ids != pad id)"
    )


def _padding_called_real(task: TaskData, batch: Batch, row: int, mask: torch.Tensor) -> str:
    """Why the row has more real positions than the example alone: its padding mask counts pad tokens
    (``info["pad_id"]``) as real (a mask built as ``ids != 0`` where the pad id is another)."""
    pad, ids = task.info.get("pad_id"), batch.get("input_ids")
    if not isinstance(pad, int) or not torch.is_tensor(ids) or ids.shape != mask.shape:
        return ""
    called_real = int(((ids[row] == pad) & mask[row]).sum())
    if not called_real or bool((ids[row][~mask[row]] == pad).all()) is False:
        return ""
    return (
        f": the padding mask counts {called_real} pad token(s) (pad id {pad}, info['pad_id']) as real positions, "
        "so padding depends on the micro-batch and the model reads it. Fix: build the mask from the pad id the "
        "collate pads with (ids != pad_id), or from each example's length"
    )


def _side(task: TaskData, batch: Batch, key: str) -> str:
    """Which positions a key of the batch has: the decoder's (its labels and ``decoder_*`` keys) or
    the encoder's (every key of a batch without a decoder)."""
    decoder = decoder_side(batch) or task.kind == SEQ2SEQ
    return "decoder" if decoder and (key == "labels" or key.startswith("decoder_")) else "encoder"


def _all_same(mine: list[torch.Tensor], others: list[torch.Tensor]) -> bool:
    """One comparison for a whole micro-batch (rows of any lengths)."""
    if [m.shape for m in mine] != [o.shape for o in others]:
        return False
    return same(torch.cat([m.flatten() for m in mine]), torch.cat([o.flatten() for o in others]).to(mine[0].dtype))
