"""shared (from an outside examination's tasks, plain user code): topic sentences and a deterministic
WordPiece tokenizer built locally, for ok_prepadded_cnn_all_splits and ok_kv_extraction_spans."""

from __future__ import annotations

NAMES = "alice bob carol dave erin frank grace heidi ivan judy mallory oscar peggy trent victor walter".split()
CITIES = "paris london berlin rome madrid vienna prague oslo dublin lisbon athens warsaw".split()


TOPICS = {
    "sports": "match goal team coach league season striker referee stadium score".split(),
    "food": "recipe soup bread cheese oven spicy dinner salad flavour bakery".split(),
    "tech": "laptop software update battery screen chip network server app code".split(),
}
FILLER = "the a this that really quite very and but so then today yesterday was is looks felt".split()


def topic_sentence(rng, topic):
    words = [FILLER[rng.integers(len(FILLER))] for _ in range(rng.integers(3, 7))]
    for _ in range(rng.integers(2, 4)):
        words.insert(int(rng.integers(len(words) + 1)), TOPICS[topic][rng.integers(10)])
    name = NAMES[rng.integers(len(NAMES))].capitalize()
    city = CITIES[rng.integers(len(CITIES))].capitalize()
    words.insert(int(rng.integers(len(words) + 1)), name)
    if rng.random() < 0.5:
        words += ["in", city]
    s = " ".join(words)
    return s[0].upper() + s[1:] + "."


def wordpiece_tokenizer(texts, lowercase=True):
    """A deterministic WordPiece tokenizer (vocab: specials, sorted words, sorted ##chars) built with the
    tokenizers library -- the trainer itself is not deterministic across processes."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    norm = normalizers.BertNormalizer(lowercase=lowercase)
    pre = pre_tokenizers.BertPreTokenizer()
    words = set()
    for t in texts:
        for w, _ in pre.pre_tokenize_str(norm.normalize_str(t)):
            words.add(w)
    chars = sorted({c for w in words for c in w})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words) + chars + ["##" + c for c in chars]
    tk = Tokenizer(models.WordPiece({w: i for i, w in enumerate(dict.fromkeys(vocab))}, unk_token="[UNK]"))
    tk.normalizer = norm
    tk.pre_tokenizer = pre
    return tk
