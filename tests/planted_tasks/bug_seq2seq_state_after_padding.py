"""an encoder-decoder GRU whose decoder starts from the encoder's final state h_n, taken after the source's
right padding too (no packing): an example's translation depends on how long the longest source of its
micro-batch is. Its twin ok_seq2seq takes the state at the last real token. (An outside examination's
version of it, 2026-12-07, passed every check: the padding probe's comparison missed it there, and only the
loss-alone comparison, which now judges batches with an attention mask too, names it.)"""

from tests.planted_tasks import ok_seq2seq as base

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "the model reads the padding"}


def collate(items):
    batch = base.collate(items)
    return {**batch, "decoder_attention_mask": batch["decoder_input_ids"] != base.tok.PAD_ID}  # transformers' keys


def make_task():
    task = base.make_task()
    task.collate = collate
    return task


class Model(base.Model):
    def forward(self, source, mask, decoder_ids):
        _, final = self.encoder(self.embed(source))  # after the padded steps too
        out, _ = self.decoder(self.embed(decoder_ids), final)
        return self.head(out)


def build_model(task):
    return Model()
