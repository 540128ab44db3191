"""collate takes the labels (and the index), then shuffles the list of items in place ('for better mixing') before stacking the
inputs: every input meets another row's label. The list's shuffle moved the labels between two calls too, which
read as a collate that draws its labels (masked language modelling), and nothing was said."""

import random

from tests.planted_tasks._small_tasks import MLP, blobs, cls_task, vec_collate

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "collate pairs a row with another example's input"}


def collate(items):
    first = vec_collate(items)
    random.shuffle(items)  # the bug: after the labels and the index were taken
    return {**vec_collate(items), "labels": first["labels"], "index": first["index"]}


def make_task():
    return cls_task(blobs(), ("low", "mid", "high"), collate=collate)


def build_model(task):
    return MLP()
