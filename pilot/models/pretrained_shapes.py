"""``from_pretrained`` inside a model factory, where only the model's shapes are wanted.

A factory of the user's own (``model._target_: my_models.build``) that loads its weights with
``AutoModelForSequenceClassification.from_pretrained(path)``, built for the fake-tensor estimate,
reads every real weight (a 7B model's 28 GB in an estimate that allocates nothing) and leaves tied
embeddings untied (their gradients and optimizer state counted twice); built on the meta device (the
attention calls, the checkpointing judgement) it is refused by transformers ("an anti-pattern").
While ``ShapesOnlyPretrained`` is entered, transformers' ``PreTrainedModel.from_pretrained`` builds the
model from its saved config instead, as ``from_pretrained`` would build it before reading weights: the
same class, config (with the keyword settings given, ``num_labels=3``), dtype (``"auto"`` or none: the
saved one) and attention kernel, in eval mode; no weight is read. A load it cannot stand for (quantized,
``output_loading_info``) runs as it is. Only where transformers is already imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

MODEL_KEYS = ("attn_implementation", "experts_implementation")  # passed on to the model's build
NOT_STOOD_FOR = ("quantization_config", "output_loading_info", "load_in_8bit", "load_in_4bit", "gguf_file")


class ShapesOnlyPretrained:
    """While entered, ``PreTrainedModel.from_pretrained`` builds from the saved config (no weight read)."""

    def __init__(self, model_target: Any = None) -> None:
        """``model_target``: the model's ``_target_``; a factory outside pilot may import transformers only
        when it is built, inside this context, so transformers is imported first (when installed); pilot's
        own builder (``pilot.models.hf_causal_lm``) builds a saved model from its config itself."""
        transformers = sys.modules.get("transformers")
        if transformers is None and not str(model_target or "pilot.").startswith("pilot."):
            transformers = importlib.import_module("transformers") if importlib.util.find_spec("transformers") else None
        self.base = getattr(transformers, "PreTrainedModel", None) if transformers is not None else None
        self.original = None

    def __enter__(self) -> ShapesOnlyPretrained:
        if self.base is not None:
            self.original = self.base.__dict__["from_pretrained"]
            original = self.original.__func__

            def from_config_instead(cls, path: Any, *args: Any, **kwargs: Any) -> Any:
                if args or any(kwargs.get(key) for key in NOT_STOOD_FOR):
                    return original(cls, path, *args, **kwargs)
                return _built_from_config(cls, path, kwargs)

            self.base.from_pretrained = classmethod(from_config_instead)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.original is not None:
            self.base.from_pretrained = self.original


def _built_from_config(cls: Any, path: Any, kwargs: dict[str, Any]) -> Any:
    """``cls`` built as ``from_pretrained(path, **kwargs)`` builds it, its weights left as initialized."""
    config = kwargs.pop("config", None)
    dtype = kwargs.pop("dtype", None) or kwargs.pop("torch_dtype", None)
    model_kwargs = {key: kwargs.pop(key) for key in MODEL_KEYS if key in kwargs}
    if config is None or isinstance(config, str):
        config, kwargs = cls.config_class.from_pretrained(config or path, return_unused_kwargs=True, **kwargs)
    for key, value in kwargs.items():  # settings of the config given beside it (num_labels=3)
        if hasattr(config, key):
            setattr(config, key, value)
    if dtype is not None and dtype != "auto":
        model_kwargs["dtype"] = dtype
    model = cls._from_config(config, **model_kwargs)
    model.eval()  # as from_pretrained returns it
    return model
