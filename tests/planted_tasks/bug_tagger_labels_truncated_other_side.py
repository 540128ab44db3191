"""tagger: the tokenizer truncates from the left (truncation_side='left', copied from a chat model's
setup), so long rows keep their LAST 12 tokens, while the tags are cut by hand with tags[:12], their
FIRST 12: in every truncated row each tag sits on another character, by another number of positions in
each row. Short rows are fine, so no single offset over the split shows it."""

from tests.planted_tasks._truncated_tags import MAX, build_model, truncated_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "cut on different sides"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return truncated_task(lambda tags: tags[:MAX])
