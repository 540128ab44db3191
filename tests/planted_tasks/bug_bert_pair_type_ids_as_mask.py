"""pair classification with BertForSequenceClassification: forward passes attention_mask=b['token_type_ids'] and
token_type_ids=b['attention_mask'] (keywords swapped): the model attends only to the hypothesis segment, never to the
premise (nor [CLS]), and segment ids mark real-vs-pad."""

from tests.planted_tasks import _ner_and_pairs as c

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "as its argument 'attention_mask'"}


def make_task():
    return c.pair_task(
        forward=lambda m, b: m(
            input_ids=b["input_ids"], attention_mask=b["token_type_ids"], token_type_ids=b["attention_mask"]
        )
    )


def build_model(task):
    return c.hf_model("Bert", "SequenceClassification", 2, type_vocab_size=2)
