"""GPT-2 sequence classifier, LEFT padding, position ids computed in forward from the mask, but the mask itself
never passed to the model: the real tokens attend to the padding (an outside examination, 2026-12-07, with Llama:
the finding said "the batch holds no position_ids" and its fix, followed, changed nothing). Its twin:
ok_gpt2_left_pad_position_ids, which passes the mask too."""

from tests.planted_tasks import ok_gpt2_left_pad_position_ids as twin

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "forward calls the model with no attention mask"}
build_model = twin.build_model


def forward(model, batch):
    positions = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    return model(input_ids=batch["input_ids"], position_ids=positions).logits  # no attention_mask


def make_task():
    task = twin.make_task()
    task.forward = forward
    return task
