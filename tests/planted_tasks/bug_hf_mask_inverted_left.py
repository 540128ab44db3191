"""transformers Llama, left padding: forward passes attention_mask as 1 - mask ("HF wants 1 = masked",
confused with PyTorch's key_padding_mask): real tokens are masked, the padding is attended."""

from tests.planted_tasks._common import generation_task, shifted_target_count
from tests.planted_tasks._hf import tiny_llama
from tests.planted_tasks.ok_hf_model_output import loss_sum, predict

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "The model has attention (LlamaAttention"}


def forward(model, batch):
    return model(input_ids=batch["input_ids"], attention_mask=1 - batch["attention_mask"].long())  # the bug


def make_task():
    return generation_task(
        padding_side="left", forward=forward, loss_sum=loss_sum, target_count=shifted_target_count, predict=predict
    )


def build_model(task):
    return tiny_llama(task)
