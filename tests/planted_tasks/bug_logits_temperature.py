"""classifier head divides its logits by a temperature of 100 (a distillation recipe's T left in the
student): the softmax is nearly flat, initial loss looks ideal (ln 3) but every gradient is 100x too small."""

from tests.planted_tasks._common import EVERY_CHECK, MLP, classification_task

EXPECTED = {"step": "tiny_subset", "verdict": "warn", "said": "the logits barely differ between classes"}
SETTINGS = EVERY_CHECK


class TemperatureMLP(MLP):
    temperature = 100.0

    def forward(self, inputs):
        return self.net(inputs) / self.temperature  # the bug: T meant for distillation, left in the model


def make_task():
    return classification_task()


def build_model(task):
    return TemperatureMLP()
