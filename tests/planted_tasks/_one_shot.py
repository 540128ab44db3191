"""shared: prompt/completion records with a one-shot demonstration before the prompt, ``"Example: <prompt>
<completion>\n<prompt>"``, the completion trained; the demonstration is the record ``shift`` rows back."""

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import generation_task
from tests.planted_tasks._prompt_completion import encode_with, records

RECORDS = records()


def one_shot_task(shift: int):
    by_index = {e.index: e for e in RECORDS}
    order = [e.index for e in RECORDS]

    def demonstration(prompt: str) -> list[int]:
        row = next(e for e in RECORDS if e.fields["prompt"] == prompt)
        demo = by_index[order[(order.index(row.index) - shift) % len(order)]]
        text = f"Example: {demo.fields['prompt']}{demo.fields['completion']}\n{prompt}"
        return tok.encode(text)

    return generation_task(
        RECORDS,
        encode=encode_with(demonstration),
        expected_targets=lambda e: tok.encode(e.fields["completion"]) + [tok.EOS_ID],
    )
