"""a GRU classifier run over the padded batch without packing, classifying from its last hidden state: with
right padding that state comes after the padded steps, so an example's class depends on its batch's longest
row. The fix named must be the recurrent layer's (pack, or the output at the last real position), not the
position ids a transformer would need (an outside examination, 2026-12-07)."""

from tests.planted_tasks._packed_gru import SortedGRU, make_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "The model holds a recurrent layer"}
__all__ = ["make_task", "build_model"]


class UnpackedGRU(SortedGRU):
    def forward(self, input_ids, attention_mask):
        _, hidden = self.gru(self.embed(input_ids))  # every column, the padded ones too
        return self.head(hidden[-1])


def build_model(task):
    return UnpackedGRU(restore=True)
