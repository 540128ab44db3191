"""Part of ``inspect``, for next-token tasks: is the model causal? Its output at position t is trained
to predict token t+1, so it must not depend on any token after t. A bidirectional encoder used as a
language model (BERT built without ``is_decoder=True``), a causal mask left out or inverted: the loss
then reads the answer, every loss check and the tiny subset pass (the answer is in the input), and
the model learns nothing it can generate with.

On a fresh model in evaluation mode, without gradient: the first training example with at least three
real tokens, collated alone, and the same example with its last real token replaced; the outputs at
every earlier real position must agree. A causal model gives them bit for bit (same shapes, same
kernels; a masked key's weight is exactly 0), a fresh BERT run as a language model moves them by ~6e-4
of their scale (its small initialisation): the limit is 1e-5 of the scale, ten times what a model may
differ from itself and still count as repeating its output. Not judged (and said) where the batch has no token ids the labels
line up with (features), or where the model does not repeat its own output.

Any other task whose batch holds an integer input that is its labels shifted right by one (a seq2seq
decoder's teacher-forced input, ``decoder_input_ids``: its token t+1 is the label of position t) is judged
the same way on that input: the decoder's output at t must not depend on its tokens after t
(``nn.TransformerDecoder`` called without ``tgt_mask`` reads them, and with them its labels).
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.loss_probe import input_ids_key, input_ids_of, padding_mask
from pilot.checks.padding import REPEAT_RTOL, output_difference, row_scores
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, TaskData, logits_of

LIMIT = 10 * REPEAT_RTOL  # of the outputs' scale: a causal model changes them by exactly 0


def _example(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[dict[str, Any], int] | None:
    """The first example (collated alone) whose ids line up with its labels and hold >= 3 real tokens,
    and the column of its last real token."""
    for item in encoded[:20]:
        batch = task.collate([item])
        ids, labels = input_ids_of(batch), batch.get("labels")
        if ids is None or not torch.is_tensor(labels) or labels.shape != ids.shape:
            return None  # not a token sequence the labels line up with: nothing to judge
        real = padding_mask(task, batch)
        columns = torch.nonzero(real[0] if real is not None else torch.ones_like(ids[0], dtype=torch.bool))
        if len(columns) >= 3:
            return batch, int(columns[-1])
    return None


def teacher_forced_key(batch: dict[str, Any]) -> str | None:
    """The key of an integer input (not ``labels``) shaped like the labels whose token t+1 is the label
    of position t at every labelled position: a decoder's teacher-forced input."""
    labels = batch.get("labels")
    if not torch.is_tensor(labels) or labels.dim() != 2 or labels.shape[1] < 3 or labels.is_floating_point():
        return None
    kept = labels[:, :-1] != IGNORE_INDEX
    if int(kept.sum()) < 2:
        return None
    shifted = labels[:, :-1][kept]
    if int(kept.sum()) < 3 or shifted.unique().numel() < 2:
        return None  # too few or too alike labels to tell a shifted copy from a mask or a segment id
    for key, value in batch.items():
        if key == "labels" or not torch.is_tensor(value) or value.shape != labels.shape:
            continue
        if value.is_floating_point() or value.dtype == torch.bool or any(w in key for w in ("mask", "type")):
            continue
        if torch.equal(value[:, 1:][kept], shifted):
            return key
    return None


def _decoder_example(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[dict[str, Any], str, int] | None:
    """The first example (collated alone) with a teacher-forced input and >= 3 labelled positions: the
    batch, that input's key and the column of its last labelled position."""
    for item in encoded[:20]:
        batch = task.collate([item])
        if (key := teacher_forced_key(batch)) is None:
            return None
        columns = torch.nonzero(batch["labels"][0] != IGNORE_INDEX)
        if len(columns) >= 3:
            return batch, key, int(columns[-1])
    return None


def with_token_replaced(task: TaskData, batch: dict[str, Any], column: int, key: str | None = None) -> dict[str, Any]:
    """The batch with the first row's token at ``column`` (of ``key``; default its input ids) replaced by
    the next id of the vocabulary."""
    ids = input_ids_of(batch) if key is None else batch[key]
    changed = dict(batch)
    changed[key or input_ids_key(batch)] = replaced = ids.clone()
    vocab = int(task.info.get("vocab_size", int(ids.max()) + 2))
    replaced[0, column] = (int(ids[0, column]) + 1) % max(vocab, 2)
    return changed


def output_moved(
    task: TaskData, model: torch.nn.Module, batch: dict[str, Any], changed: dict[str, Any], pick
) -> float | None:
    """How far the outputs ``pick`` selects (from a forward's output; None: they do not line up) move
    when ``batch`` becomes ``changed``, over their scale, on the model in evaluation mode without
    gradient; None when not judged: outputs that do not line up, or a model that does not repeat itself
    (eval_determinism's business)."""
    with untouched(model), torch.no_grad():
        model.eval()
        picked = [pick(task.forward(model, b)) for b in (batch, batch, changed)]
    if any(p is None for p in picked):
        return None
    if (repeat := output_difference(picked[1], picked[0])) is None or repeat > REPEAT_RTOL:
        return None
    return output_difference(picked[2], picked[0])


def real_scores(task: TaskData, batch: dict[str, Any], keep: slice):
    """``pick`` for ``output_moved``: the first row's outputs at its real positions, ``keep`` of them."""

    def pick(output: Any) -> torch.Tensor | None:
        scores = row_scores(task, output, batch, 0)
        return None if scores is None or scores.dim() < 2 else scores[keep]

    return pick


def causality_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    """A finding when the outputs before the last real token change with that token; what was compared."""
    if task.convention != NEXT_TOKEN:
        return decoder_findings(task, model, encoded)
    found = _example(task, encoded)
    if found is None:
        return [], {"judged": False}
    batch, last = found
    changed = with_token_replaced(task, batch, last)
    difference = output_moved(task, model, batch, changed, real_scores(task, batch, slice(None, -1)))  # before it
    if difference is None:
        return [], {"judged": False}
    details = {"judged": True, "largest_relative_difference": difference}
    if difference <= LIMIT:
        return [], details
    return [
        Finding(
            f"the model is not causal: changing the last token of this example changes the outputs at "
            f"earlier positions ({difference:.3g} of their scale; a causal model leaves them as they were), and those outputs are trained to predict "
            "the tokens after them, which they can read: the loss sees the answer. Fix: a causal (decoder) "
            "model, or its causal mask (transformers: a decoder model type, or is_decoder=True for a "
            "BERT-like model; nn.TransformerEncoder: mask=causal mask)",
            "train",
            int(batch["index"][0]) if "index" in batch else None,
        )
    ], details


def decoder_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    """The same judgement on a teacher-forced input: the outputs before its last labelled position must
    not change with its token there (which is the label of the position before)."""
    found = _decoder_example(task, encoded)
    if found is None:
        return [], {"judged": False}
    batch, key, last = found
    changed = with_token_replaced(task, batch, last, key)

    def earlier(output: Any) -> torch.Tensor | None:  # None: outputs that do not line up with the decoder's
        scores = logits_of(output).detach().float()
        if scores.dim() < 2 or scores.shape[0] != 1 or scores.shape[1] != batch[key].shape[1]:
            return None
        return scores[0, :last]

    difference = output_moved(task, model, batch, changed, earlier)
    if difference is None:
        return [], {"judged": False}
    details = {"judged": True, "input": key, "largest_relative_difference": difference}
    if difference <= LIMIT:
        return [], details
    return [
        Finding(
            f"the decoder is not causal: changing '{key}' (the labels shifted right: its token t+1 is the label "
            f"of position t) at its last labelled position changes the outputs at earlier positions "
            f"({difference:.3g} of their scale), so each output reads the token it is trained to predict: the "
            "loss sees the answer. Fix: a causal mask on the decoder's self-attention (nn.TransformerDecoder: "
            "tgt_mask=nn.Transformer.generate_square_subsequent_mask(length), tgt_is_causal=True; transformers: "
            "an encoder-decoder model type, which masks its decoder)",
            "train",
            int(batch["index"][0]) if "index" in batch else None,
        )
    ], details


def attention_modules(model: torch.nn.Module) -> list[str]:
    """The model's attention layers, by class name (``nn.MultiheadAttention``, transformers'
    ``LlamaAttention``, a user's ``SelfAttention`` or ``CausalSelfAttn``): a model that has them is built to
    read context."""
    return [
        type(m).__name__ for m in model.modules() if any(w in type(m).__name__.lower() for w in ("attention", "attn"))
    ]


def context_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    """The other side, a warning: next-token outputs that do not change when the first real token does.
    The model then reads only the token at each position: a bigram model, or one whose attention mask
    hides every other token (``1 - attention_mask``, a float mask with 0 and 1 swapped), which the
    padding check cannot see (the example collated alone gets the same wrong mask)."""
    found = _example(task, encoded) if task.convention == NEXT_TOKEN else None
    if found is None:
        return [], {"judged": False}
    batch, _ = found
    real = padding_mask(task, batch)
    changed = with_token_replaced(task, batch, int(torch.nonzero(real[0])[0]) if real is not None else 0)
    difference = output_moved(task, model, batch, changed, real_scores(task, batch, slice(1, None)))  # after it
    if difference is None:
        return [], {"judged": False}
    attention = attention_modules(model)
    details = {"judged": True, "largest_relative_difference": difference, "attention_modules": len(attention)}
    if difference > LIMIT:
        return [], details
    unless = (
        f"The model has attention ({attention[0]}, {len(attention)} in all), which exists to read the context, "
        "so its mask hides it"
        if attention
        else "No module of the model is named like an attention layer (*attention*, *attn*): a model without one "
        "(a bigram model; num_hidden_layers=0) has nothing that reads the context. If it mixes positions under "
        "another name, its mask hides the context"
    )
    return [
        Finding(
            "the model does not read earlier tokens: changing the first token of this example leaves the "
            f"outputs at every later position as they were ({difference:.3g} of their scale), so each predicts "
            f"the next token from its own token alone. {unless}: pass attention_mask with 1 for real tokens "
            "and 0 for padding (not 1 - attention_mask), and a float mask adds 0 where attention is allowed",
            "train",
            int(batch["index"][0]) if "index" in batch else None,
        )
    ], details
