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
line up with (a seq2seq task, features), or where the model does not repeat its own output.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.loss_probe import input_ids_of, padding_mask
from pilot.checks.padding import REPEAT_RTOL, output_difference, row_scores
from pilot.checks.result import Finding
from pilot.data.task import NEXT_TOKEN, TaskData

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


def with_token_replaced(task: TaskData, batch: dict[str, Any], column: int) -> dict[str, Any]:
    """The batch with the first row's token at ``column`` replaced by the next id of the vocabulary."""
    ids = input_ids_of(batch)
    changed = dict(batch)
    changed["input_ids" if "input_ids" in batch else "inputs"] = replaced = ids.clone()
    vocab = int(task.info.get("vocab_size", int(ids.max()) + 2))
    replaced[0, column] = (int(ids[0, column]) + 1) % max(vocab, 2)
    return changed


def causality_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    """A finding when the outputs before the last real token change with that token; what was compared."""
    found = _example(task, encoded) if task.convention == NEXT_TOKEN else None
    if found is None:
        return [], {"judged": False}
    batch, last = found
    changed = with_token_replaced(task, batch, last)
    with untouched(model), torch.no_grad():
        model.eval()
        first, again, other = (task.forward(model, b) for b in (batch, batch, changed))
    before = [row_scores(task, output, batch, 0) for output in (first, again, other)]
    if any(scores is None or scores.dim() < 2 for scores in before):
        return [], {"judged": False}
    earlier = [scores[:-1] for scores in before]  # every real position before the last one
    if (repeat := output_difference(earlier[1], earlier[0])) is None or repeat > REPEAT_RTOL:
        return [], {"judged": False}  # not repeatable: eval_determinism's business
    difference = output_difference(earlier[2], earlier[0])
    details = {"judged": True, "largest_relative_difference": difference}
    if difference is None or difference <= LIMIT:
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
    with untouched(model), torch.no_grad():
        model.eval()
        outputs = [row_scores(task, task.forward(model, b), batch, 0) for b in (batch, batch, changed)]
    if any(scores is None or scores.dim() < 2 for scores in outputs):
        return [], {"judged": False}
    later = [scores[1:] for scores in outputs]  # every real position after the first one
    if (repeat := output_difference(later[1], later[0])) is None or repeat > REPEAT_RTOL:
        return [], {"judged": False}
    difference = output_difference(later[2], later[0])
    attention = attention_modules(model)
    details = {"judged": True, "largest_relative_difference": difference, "attention_modules": len(attention)}
    if difference is None or difference > LIMIT:
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
