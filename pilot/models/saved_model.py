"""What a saved model directory (``model.path``) holds, against the causal LM ``model=hf_causal_lm`` builds
from it: refused before anything runs where its config says it is no such model (``saved_model_problem``),
and when built where its weights lack a tensor of the model (``refuse_weights_not_loaded``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from pilot.errors import PilotError

log = logging.getLogger(__name__)


def refuse_weights_not_loaded(path: str, model: torch.nn.Module, loading: dict[str, Any]) -> None:
    """Parameters of the built model that the directory did not hold start at random while the run would
    say it fine-tunes the saved model (a classifier's or a base model's checkpoint loaded as a causal LM: its
    head new): refused, named. Saved weights the model has no place for are only said."""
    missing = sorted(loading.get("missing_keys") or [])
    unexpected = sorted(loading.get("unexpected_keys") or [])
    if missing:
        raise PilotError(
            f"model.path={path}: loaded as {type(model).__name__}, {len(missing)} of its tensors are not in the "
            f"saved weights and would start at random ({', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''})"
            + (
                f", and {len(unexpected)} saved tensors have no place in it ({', '.join(unexpected[:3])}"
                f"{', ...' if len(unexpected) > 3 else ''})"
                if unexpected
                else ""
            )
            + ": the run would not start from the saved model. Fix: the directory of a causal language model "
            f"saved with save_pretrained ({type(model).__name__}), or model.path=null to build from model.config."
        )
    if unexpected:
        log.warning(
            "model.path=%s: %d saved tensors have no place in %s and are not loaded (%s)",
            path, len(unexpected), type(model).__name__, ", ".join(unexpected[:4]),
        )  # fmt: skip


def _head_outside_the_body(transformers, config) -> str:
    """The causal LM's parameters outside its base model (``base_model_prefix``), one tied tensor once, built
    on the meta device from the config (nothing allocated, no weight read): what weights saved without a
    language-model head (a classifier's, a bare base model's) cannot give. Tied output embeddings are the
    body's own (Qwen2's classifier loads whole); BERT's LM head adds a transform layer and a bias, a bare
    Llama an untied lm_head: said with their names."""
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    body = str(getattr(model, "base_model_prefix", "") or "")
    names = [name for name, _ in model.named_parameters() if not (body and name.startswith(body + "."))]
    return f"{len(names)} tensor(s) ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})" if names else ""


HEADS_WITHOUT_AN_LM_HEAD = (  # transformers' mappings of heads whose checkpoints hold no language-model head
    "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
    "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES",
    "MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES",
)


def _mapped(mapping: Any) -> set[str]:
    return {name for value in mapping.values() for name in ([value] if isinstance(value, str) else value)}


def reads_ahead(transformers: Any, config: Any) -> bool:
    """An encoder whose causal-LM class is causal only when its config says ``is_decoder`` (BERT, RoBERTa,
    ELECTRA: transformers maps them to a ``*LMHeadModel`` that, with ``is_decoder=False``, attends both ways
    and only logs a line). Decoder-only types carry no such switch (GPT-NeoX's ``is_decoder=False`` is
    unread), so the rule is the types transformers also gives a masked-LM head."""
    auto = transformers.models.auto.modeling_auto
    model_type = str(getattr(config, "model_type", ""))
    return (
        model_type in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
        and model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        and not getattr(config, "is_encoder_decoder", False)
        and getattr(config, "is_decoder", None) is False
    )


def saved_model_problem(path: str) -> str | None:
    """Why the saved model in ``path`` (its config.json) cannot be loaded as the causal LM it was saved as: a
    model type transformers has no causal LM for (T5), an encoder-decoder's weights (``architectures``: BART's
    ``ForConditionalGeneration``, whose encoder the causal LM would drop), or a classifier's, QA head's or bare base model's with
    a causal LM head of tensors outside the body (an untied output head, BERT's transform layer: they would
    start at random; said in every mode, the estimate's included, which builds from the config and reads no
    weight), or an encoder whose causal class would attend both ways (``reads_ahead``: BERT's masked LM). None
    otherwise: a class of the user's own, an old name, a head whose LM head is the tied
    embeddings; building then refuses any tensor the weights lack."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(str(Path(path).expanduser()), local_files_only=True)
    auto = transformers.models.auto.modeling_auto
    causal = auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    saved = [str(name) for name in (getattr(config, "architectures", None) or [])]
    model_type = str(getattr(config, "model_type", ""))
    if model_type not in causal:
        return (
            f"it holds a {model_type} model{f' ({saved[0]})' if saved else ''}, for which transformers has no causal "
            "language model (an encoder-decoder or an encoder): model=hf_causal_lm trains decoder-only models. Fix: "
            "the directory of a causal language model saved with save_pretrained, or model.path=null to build from "
            "model.config; another architecture needs a model and task of your own (plug-in tasks)."
        )
    loaded_as = sorted(_mapped({model_type: causal[model_type]}))[0]
    ahead = None
    if reads_ahead(transformers, config):  # said unless a part of it is lost too (below)
        ahead = (
            f"it holds a {model_type} model{f' ({saved[0]})' if saved else ''} whose config says is_decoder=false: "
            f"loaded as {loaded_as} it attends to every position, the tokens it is to predict included (an encoder, "
            "not a causal language model; the loss would see each answer). Fix: the directory of a decoder-only "
            "model, or this one saved again with config.is_decoder=True (its causal mode)."
        )
    if not saved or set(saved) & _mapped(causal):
        return ahead
    if saved[0] in _mapped(auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES):
        lost = "its encoder would be dropped and the decoder's embeddings and output head start at random"
    elif getattr(config, "is_encoder_decoder", False):  # Whisper: its encoder was dropped with a log line, run ok
        lost = "its encoder would be dropped, the decoder's cross-attention left reading nothing"
    elif saved[0] in _mapped(auto.MODEL_MAPPING_NAMES) | set().union(
        *(_mapped(getattr(auto, name, {})) for name in HEADS_WITHOUT_AN_LM_HEAD)
    ) and (new := _head_outside_the_body(transformers, config)):
        lost = f"its own head (if any) dropped, and the language-model head's {new} start at random"
    else:
        return ahead
    return (
        f"it holds {saved[0]} weights, not a causal language model's: loaded as {loaded_as}, {lost}, while the run "
        f"says it fine-tunes the saved model. Fix: the directory of a {loaded_as} saved with save_pretrained, or "
        "model.path=null to build from model.config."
    )
