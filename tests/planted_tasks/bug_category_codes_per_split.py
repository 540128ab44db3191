"""A categorical column coded with ``pd.factorize`` on each split's own rows: the same plan has another code in
validation (first-seen order of that split), so every validation row reads another plan's embedding. Missed
twice by outside examinations before the category-code check."""

from tests.planted_tasks import _plan_codes

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "codes the field 'plan' per split"}


def make_task():
    return _plan_codes.make_task(per_split=True)


def build_model(task):
    return _plan_codes.PlanNet()
