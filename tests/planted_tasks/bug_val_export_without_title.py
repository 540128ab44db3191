"""text classification on title + body: the validation CSV was exported without its title column, and
pd.concat(...).fillna({"title": ""}) made every validation title empty. The title carries the class:
validation measures body-only inputs the model never trained on."""

from tests.planted_tasks._titled_posts import build_model, posts_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "raw field 'title' is empty"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return posts_task(lambda title: "")
