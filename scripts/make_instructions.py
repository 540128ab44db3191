"""Regenerate pilot/data/instructions.jsonl, the embedded instruction data set.

    python scripts/make_instructions.py

Each "source document" is one word with a short note; every instruction built
from it shares the document's group id, so a leak-free split keeps them
together. About a tenth of the examples carry a long note that exceeds the
default max_len: truncation is real, and the default left truncation cuts the
note, never the answer.
"""

import argparse
import json
import random
from pathlib import Path

WORDS = """apple river stone cloud garden window pencil rocket silver basket candle
forest bridge castle dragon engine falcon guitar hammer island jacket kettle ladder
magnet needle orange planet quartz rabbit saddle tomato umbrella violin walnut yellow
zebra anchor bottle carpet desert eagle feather glacier harbor igloo jungle kitten
lemon marble nickel oyster parrot quiver raven sunset tunnel valley wizard yogurt
acorn breeze cactus dolphin ember fossil goblet hazel ivory jigsaw kayak lantern
meadow nectar orchid pepper quill ribbon shadow thistle urchin velvet willow xylem
yarrow zephyr amber beacon cobalt dune echo fable granite horizon indigo jasmine
koala lagoon mosaic nutmeg opal pebble quasar riddle sierra timber utopia vortex
wander crystal blossom compass harvest journey kingdom lighthouse mountain notebook
paradise question rainbow sapphire telescope universe waterfall butterfly chocolate
dandelion elephant firework grasshopper hurricane""".split()

NOTES = [
    "this note was copied from an old field notebook kept by a careful observer",
    "the archivist added this remark while sorting boxes of letters in winter",
    "a student wrote this line in the margin during a very long lecture",
]


def instructions_for(word: str, rng: random.Random):
    yield f"Reverse the word: {word}", word[::-1]
    yield f"Uppercase: {word}", word.upper()
    yield f"First and last letter of {word}", f"{word[0]} {word[-1]}"
    yield f"Repeat twice: {word}", f"{word} {word}"
    yield f"Count the letters in {word}", str(len(word))
    if rng.random() < 0.6:
        note = rng.choice(NOTES)
        yield f"Context: {note}. Reverse the word: {word}", word[::-1]


def main() -> None:
    rng = random.Random(20261130)
    rows = []
    for doc, word in enumerate(WORDS):
        for instruction, answer in instructions_for(word, rng):
            rows.append({"instruction": instruction, "answer": answer, "group": f"doc-{doc:03d}", "time": doc})
    out = Path(__file__).resolve().parents[1] / "pilot" / "data" / "instructions.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} examples from {len(WORDS)} documents to {out}")


if __name__ == "__main__":
    # no options: --help (or any argument) says what it does instead of rewriting the shipped file
    argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="Takes no arguments.").parse_args()
    main()
