"""correct: prompt/completion records with OpenAI's recommended separator "\n\n###\n\n" at the prompt's end;
encode strips the prompt's trailing whitespace (so the answer starts right after "###")."""

from pilot.data import byte_tokenizer as tok
from pilot.data.task import Example
from tests.planted_tasks import _prompt_completion as pc
from tests.planted_tasks._common import generation_task, instruction_examples, tiny_gpt

EXPECTED = None


def records():
    return [
        Example(
            index=e.index,
            group=e.group,
            fields={"prompt": e.fields["instruction"].strip() + "\n\n###\n\n", "completion": " " + e.fields["answer"]},
        )
        for e in instruction_examples()
    ]


def make_task():
    return generation_task(
        records(),
        encode=pc.encode_with(lambda text: tok.encode(text.rstrip())),
        expected_targets=lambda e: tok.encode(e.fields["completion"]) + [tok.EOS_ID],
    )


def build_model(task):
    return tiny_gpt(task)
