"""What reaches the loss (issue 12, items 1-6 and 11), and the planted-bug suite of tests/planted_tasks.

The suite runs once per session (``suite``); each item's test then reads the outcome of the
planted tasks that exercise it, so every claim is checked on a task written the way a user
would write it, and fails without the check that makes it.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf, open_dict

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tests.planted_tasks is imported by its package path
    sys.path.insert(0, str(ROOT))

from pilot.checks.alignment import alignment_check  # noqa: E402
from pilot.checks.inspect_examples import inspect_task  # noqa: E402
from pilot.checks.subset_scorer import SubsetScorer  # noqa: E402
from pilot.data import instructions  # noqa: E402
from pilot.data.task import ContractError  # noqa: E402
from pilot.phases.gates import PhaseRunner  # noqa: E402
from tests.planted_tasks import runner  # noqa: E402

CPU = torch.device("cpu")
pytestmark = pytest.mark.xdist_group("planted_suite")  # the suite (about a minute) computed once, on one worker


@pytest.fixture(scope="module")
def suite():
    """step -> CheckResult for every planted task (one run for the whole module, one thread)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models on a shared CPU: one thread is much faster
    try:
        # a planted bug: the check it names alone (what is asserted of it); a correct task: every check
        return {name: runner.run_task(runner.load(name), named_only=True) for name in runner.task_names()}
    finally:
        torch.set_num_threads(threads)


def reason(suite, task: str, step: str) -> str:
    return suite[task][step].reason


def problems(suite, task: str, step: str) -> str:
    return " | ".join(str(f) for f in suite[task][step].findings)


# ----------------------------------------------------------------------------- the suite itself
def test_every_planted_bug_is_flagged_by_the_check_that_names_it(suite):
    missed = []
    for name, results in suite.items():
        expected = runner.load(name).EXPECTED
        if expected is None:
            continue
        got, reason = results[expected["step"]].verdict, results[expected["step"]].reason
        if not (got == expected["verdict"] or (expected["verdict"] == "warn" and got == "fail")):
            missed.append(f"{name}: {expected} but {got} ({reason})")
        elif expected.get("said", "") not in reason:  # the cause named, not only the verdict
            missed.append(f"{name}: {expected['step']} {got} without naming the cause {expected['said']!r} ({reason})")
    assert not missed, missed
    planted = [n for n in suite if runner.load(n).EXPECTED is not None]
    assert len(planted) >= 12


def test_every_correct_task_passes_every_check(suite):
    alarms = {
        name: {step: r.reason for step, r in results.items() if r.verdict in runner.ALARMS}
        for name, results in suite.items()
        if runner.load(name).EXPECTED is None
    }
    assert not any(alarms.values()), alarms
    kinds = {
        "ok_classification",
        "ok_instruction_generation",
        "ok_plain_lm",
        "ok_tabular_groups",
        "ok_frozen_backbone",
        "ok_preshifted_labels",
    }
    assert kinds <= set(alarms)


# ----------------------------------------------------------------------------- 1. collated batches
def test_counted_padding_fails_naming_split_example_and_positions(suite):
    found = [f for f in suite["bug_collate_pad_counted"]["inspect"].findings if "predict a padding token" in f.problem]
    assert found and all(f.split in ("train", "val", "test") and f.example is not None for f in found)
    assert "counted position(s) " in found[0].problem


def test_labels_kept_at_padding_that_the_loss_itself_leaves_out_warn_and_are_not_judged(suite):
    """Labels cloned from the padded ids, padding left out by loss_sum through the attention mask: inspect
    failed "counted position(s) predict a padding token" and the tiny subset scored the padding labels
    (38% recovered on an examiner's GPT-NeoX task whose loss fell 373x). The loss's gradient says what it trains."""
    result = suite["bug_labels_at_padding_masked_in_the_loss"]["inspect"]
    assert result.verdict == "warn", result.reason
    assert not any("predict a padding token" in f.problem for f in result.findings)
    task = runner.load("bug_labels_at_padding_masked_in_the_loss").make_task()
    items = [task.encode(e) for e in task.splits["train"][:8]]
    model = runner.load("bug_labels_at_padding_masked_in_the_loss").build_model(task)
    judged, labelled = SubsetScorer(task, items, 4, model), SubsetScorer(task, items, 4)
    assert judged.untrained > 0 and judged.targets == labelled.targets - judged.untrained
    assert "the loss does not train are not judged" in judged.rule
    twin = runner.load("bug_collate_pad_counted").make_task()  # the loss counts the padding: judged as labelled
    twin_items = [twin.encode(e) for e in twin.splits["train"][:8]]
    assert SubsetScorer(twin, twin_items, 4, runner.load("bug_collate_pad_counted").build_model(twin)).untrained == 0


def test_the_gradient_of_another_head_is_not_read_as_the_labels_loss():
    """A tagger with an auxiliary LM head (dict output; the LM head the larger one): the probe read the LM
    head's gradient at the tag ids, found no tag trained, and the tiny subset judged none (0% recovered)."""
    import torch.nn.functional as F
    from torch import nn

    from pilot.checks.untrained_labels import loss_trained
    from pilot.data import byte_tokenizer as tok
    from tests.planted_tasks._text_tasks import Tagger, tagging_task

    class TwoHeads(Tagger):
        def __init__(self):
            super().__init__()
            self.lm = nn.Linear(32, tok.VOCAB_SIZE)

        def forward(self, input_ids, attention_mask):
            h = self.encoder(
                self.embed(input_ids) + self.position(torch.arange(input_ids.shape[1])),
                src_key_padding_mask=attention_mask == 0,
            )
            return {"logits": self.head(h), "lm_logits": self.lm(h)}

    def loss_sum(out, batch):
        tags = F.cross_entropy(
            out["logits"].transpose(1, 2).float(), batch["labels"], ignore_index=-100, reduction="sum"
        )
        chars = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
        lm = F.cross_entropy(out["lm_logits"].transpose(1, 2).float(), chars, ignore_index=-100, reduction="sum")
        return tags + 0.1 * lm

    task = tagging_task(loss_sum=loss_sum, predict=lambda out, batch: out["logits"].argmax(-1))
    items = [task.encode(e) for e in task.splits["train"][:8]]
    assert loss_trained(task, TwoHeads(), task.collate(items[:4])) is None  # not these labels' head: not told
    assert SubsetScorer(task, items, 4, TwoHeads()).untrained == 0
    assert inspect_task(task, 2, 4, TwoHeads())[0].verdict == "pass"


def test_declared_target_not_counted_fails(suite):
    assert "declared target token(s) not counted in the loss: 1 of" in reason(
        suite, "bug_collate_eos_dropped", "inspect"
    )


def test_target_counted_by_another_rows_prompt_length_fails(suite):
    text = problems(suite, "bug_collate_batch_prompt_length", "inspect")
    assert "not counted in the loss" in text and "instruction tokens counted" in text


def test_row_that_differs_from_its_example_alone_fails(suite):
    text = problems(suite, "bug_collate_sorted_rows", "inspect")
    assert "'labels' differs from the example collated alone" in text  # rows paired by index: the labels moved


def test_labels_padded_on_the_other_side_fail(suite):
    assert "are not the input token they predict" in reason(suite, "bug_collate_label_padding_side", "inspect")


def test_examples_txt_is_drawn_from_the_collated_rows():
    """The ^ row marks the tokens the target line spells, and the header counts both (pre-shifted labels)."""
    module = runner.load("ok_preshifted_labels")
    result, shown = inspect_task(module.make_task(), n_show=4, micro_batch=4)
    assert result.verdict == "pass", result.reason
    for block in shown:  # byte tokens: one character per token in these lines
        marked = "".join(t for t, m in zip(block["tokens"], block["loss"]) if m == "^")
        assert marked == block["target"] and block["loss"].count("^") == block["loss_tokens"]
        assert block["mask"].count("0") == len(block["tokens"]) - block["length"]


def test_default_task_rows_collated_in_micro_batches_pass():
    task = instructions.make_task(split={"by": "group"}, padding_side="left")
    result, shown = inspect_task(task, n_show=2, micro_batch=4)
    assert result.verdict == "pass", result.reason
    assert result.details["per_split"]["train"]["share_padding"] > 0  # padding really happened
    assert any("on the left" in block["padding"] for block in shown)


# ----------------------------------------------------------------------------- 2. alignment
def test_labels_shifted_twice_are_trained_towards_t_plus_2(suite):
    assert reason(suite, "bug_align_double_shift", "alignment").startswith("trained towards token t+2 at ")


def test_labels_not_shifted_are_trained_towards_t(suite):
    text = reason(suite, "bug_align_no_shift", "alignment")
    assert text.startswith("trained towards token t at ") and "copy" in text


def test_wrong_class_mapping_in_the_loss_names_the_classes(suite):
    assert "'cat' (0) -> 'dog' (1)" in reason(suite, "bug_align_class_remap", "alignment")
    assert "class id target + 3" in reason(suite, "bug_align_token_offset", "alignment")


def test_alignment_passes_on_the_embedded_task():
    from pilot.models.tiny_gpt import TinyGPT

    task = instructions.make_task(split={"by": "group"})
    result = alignment_check(task, TinyGPT(vocab_size=259, max_len=128, d_model=32, n_layer=1, n_head=2), 2)
    assert result.verdict == "pass", result.reason
    assert result.details["matching_declared"] == result.details["trained_positions"] > 0


# ----------------------------------------------------------------------------- 3. the objective
def test_mean_instead_of_sum_fails_with_the_ratio(suite):
    text = reason(suite, "bug_objective_mean", "objective")
    assert "loss_sum of 4 examples = 0.25 x the sum of their single losses" in text and "mean" in text
    assert "mean over targets" in reason(suite, "bug_objective_token_mean", "objective")


def test_target_count_of_padding_fails(suite):
    assert "target_count says" in reason(suite, "bug_objective_count_padding", "objective")


def test_initial_loss_far_from_ln_classes_warns_with_numbers(suite):
    result = suite["bug_objective_divided_by_batch"]["objective"]
    assert result.verdict == "warn" and "ln(3) = 1.099" in result.reason
    torch.testing.assert_close(
        result.details["initial_loss_per_target"] * 32,
        suite["ok_classification"]["objective"].details["initial_loss_per_target"],
        rtol=0.25,
        atol=0.0,
    )


def test_a_fresh_model_leaning_to_one_class_is_not_said_to_be_class_weights():
    """A plain cross-entropy on a model whose fresh logits favour one class (large inputs, a bias): its
    per-class losses differed, and objective named 'class weights in another order' as the cause."""
    from pilot.checks.objective import objective_check
    from tests.planted_tasks._common import classification_task, mlp

    task = classification_task()
    model = mlp(task)
    with torch.no_grad():
        model.net[-1].bias.copy_(torch.tensor([4.0, 0.0, 0.0]))  # leans to class 0 before any training
    result = objective_check(task, model, micro_batch=4)
    assert "weights the classes" not in result.reason and result.verdict == "pass", result.reason
    assert result.details["even_logits_loss_per_target"] == pytest.approx(1.0986, rel=1e-3)


def test_a_distillation_loss_scaled_by_t_squared_is_not_said_to_weight_the_classes():
    """0.5 CE + 0.5 T² KL(teacher || student): with every logit 0 each example's loss carries its own
    teacher's term, so a class whose teacher is surer starts higher. It was said to be "loss_sum weights the
    classes" (the cause of a class-weighting mistake); class weights give every example of a class the same
    loss there, a teacher's term does not."""
    import torch.nn.functional as F

    from pilot.checks.objective import objective_check
    from tests.planted_tasks._common import classification_task, mlp, stack_collate

    def collate(items):
        batch = stack_collate(items)
        sure = torch.tensor([20.0, 12.0, 1.0])[batch["labels"]] * (1 + 0.3 * torch.sin(batch["index"].double()).float())
        batch["teacher_logits"] = F.one_hot(batch["labels"], 3).float() * sure[:, None]
        return batch

    def loss_sum(logits, batch, t=2.0):
        soft = F.kl_div(F.log_softmax(logits / t, -1), F.softmax(batch["teacher_logits"] / t, -1), reduction="sum")
        return 0.5 * F.cross_entropy(logits, batch["labels"], reduction="sum") + 0.5 * t * t * soft

    task = classification_task(collate=collate, loss_sum=loss_sum)
    result = objective_check(task, mlp(task), micro_batch=8)
    assert "weights the classes" not in result.reason, result.reason
    assert "teacher's soft targets beside the labels" in result.reason, result.reason


# ----------------------------------------------------------------------------- 4, 5. batch edges
def test_batchnorm_with_one_example_fails_naming_the_partial_window(suite):
    text = reason(suite, "bug_smallest_batchnorm", "smallest_micro_batch")
    assert "micro-batch of 1" in text and "partial last window" in text
    assert "non-finite loss nan at a micro-batch of 1" in reason(
        suite, "bug_smallest_batch_standardise", "smallest_micro_batch"
    )


def test_random_layer_in_eval_mode_fails_naming_it(suite):
    for name in ("bug_eval_mc_dropout", "bug_eval_noise_layer"):
        assert "dropout or another random layer active in eval mode" in reason(suite, name, "eval_determinism")


def _phase_runner(make_cfg, tmp_path, model_target: str):
    cfg = make_cfg("+experiment=classification")
    with open_dict(cfg):
        cfg.model = OmegaConf.create({"_target_": model_target})
        cfg.data.split.val_fraction = 0.15
    from hydra.utils import instantiate

    task = instantiate(cfg.data, _convert_="all")
    task.splits["train"] = task.splits["train"][: 16 * 20 + 1]  # 20 updates of 16, then one example
    phases = PhaseRunner(cfg, task, CPU, tmp_path)
    phases.run_phase("build_model", {}, phases.build_model)
    return phases


class _DigitsBatchNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 10)
        )

    def forward(self, inputs):
        return self.net(inputs)


class _DigitsNoisy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(64, 10)

    def forward(self, inputs):
        return self.net(torch.nn.functional.dropout(inputs, 0.3, training=True))


def test_pilot_phase_row_fails_on_the_partial_window(make_cfg, tmp_path):
    phases = _phase_runner(make_cfg, tmp_path, f"{__name__}._DigitsBatchNorm")
    plan = phases.trainer.plan
    assert plan.remainder_per_epoch == 1  # the partial last window holds one example
    phases._measure_smallest()
    row = phases.rows[-1]
    assert row["phase"] == "smallest_micro_batch" and row["verdict"] == "fail", row
    assert row["micro_batch"] == 1 and "partial last window" in row["detail"]


def test_pilot_phase_row_fails_on_random_evaluation(make_cfg, tmp_path):
    phases = _phase_runner(make_cfg, tmp_path, f"{__name__}._DigitsNoisy")
    items = phases.task.encoded("val")[:16]
    phases.run_phase("eval_determinism", {}, lambda: phases.eval_determinism(items))
    assert phases.rows[-1]["verdict"] == "fail"
    assert "random layer active in eval mode" in phases.rows[-1]["detail"]


# ----------------------------------------------------------------------------- 6. classes by name
def test_per_split_encoder_found_from_the_declared_names(suite):
    text = problems(suite, "bug_labels_per_split_encoder", "inspect")
    assert "class 'dog' has different ids" in text and "['cat'] missing" in text
    assert "id 1 stands for two or more classes: 'cat' (train) and 'dog' (val)" in text


def test_permuted_and_shifted_ids_name_the_class(suite):
    assert "has different ids across or within splits" in reason(suite, "bug_labels_first_seen_order", "inspect")
    assert "class 'cat' is encoded as id 1, which the mapping names 'dog'" in reason(
        suite, "bug_labels_one_based", "inspect"
    )


def test_without_a_declared_raw_label_the_by_name_checks_say_they_were_skipped():
    module = runner.load("ok_classification")
    task = module.make_task()
    task.raw_label = None  # and its examples carry no "label_name" field
    result, _ = inspect_task(task, n_show=1, micro_batch=4)
    assert result.verdict == "pass" and "by-name checks skipped" in result.reason


# ----------------------------------------------------------------------------- 11. tiny subset for generation
def test_plain_language_model_scores_only_determined_positions(suite):
    result = suite["ok_plain_lm"]["tiny_subset"]
    assert result.verdict == "pass", result.reason
    assert result.details["recovery_rule"].startswith("determined positions")
    assert result.details["loss_floor"] > 0 and "its distance to the floor" in result.reason


def test_ambiguous_contexts_and_the_loss_floor():
    task = runner.load("ok_plain_lm").make_task()
    items = [task.encode(e) for e in task.splits["train"][:8]]
    scorer = SubsetScorer(task, items, 4)
    assert 0 < scorer.ambiguous_targets < scorer.targets
    # "the cat sat" / "the cat ran" ... the first token after <bos> is one of few words: ambiguous
    assert scorer.loss_floor > 0
    instruction = runner.load("ok_instruction_generation").make_task()
    scorer = SubsetScorer(instruction, [instruction.encode(e) for e in instruction.splits["train"][:8]], 4)
    assert scorer.ambiguous_targets == 0 and scorer.loss_floor == 0 and scorer.rule.startswith("every target")


def test_the_tasks_own_correct_count_is_used():
    task = runner.load("ok_plain_lm").make_task()
    task.correct_count = lambda output, batch: task.target_count(batch)  # "everything is correct"
    items = [task.encode(e) for e in task.splits["train"][:8]]
    scorer = SubsetScorer(task, items, 4)

    class Fresh:  # what SubsetScorer reads of a trainer
        raw_model, device = runner.load("ok_plain_lm").build_model(task), CPU

        @staticmethod
        def autocast():
            return torch.autocast("cpu", enabled=False)

    loss, recovery = scorer.score(Fresh)
    assert "correct_count" in scorer.rule and recovery == 1.0 and loss > 1.0


def test_a_correct_count_above_the_targets_fails_naming_it(suite):
    """A correct_count that counts ignored positions (-100 == -100) said "111% recovered" and passed."""
    text = reason(suite, "bug_correct_count_counts_ignored", "tiny_subset")
    assert text.startswith("task.correct_count counts ") and "labels != -100" in text


def test_a_predict_that_reads_other_positions_than_the_loss_is_named_not_the_loop(suite):
    """The loss learnt, predict (not shifted) recovered 0%: "cannot learn the subset" blamed the loop."""
    text = reason(suite, "bug_predict_not_shifted", "tiny_subset")
    assert text.startswith("the loss learnt the subset but task.predict does not recover it") and "shifted" in text


def test_a_mask_that_hides_every_real_token_fails_inspect_as_non_finite(suite):
    """NaN outputs compared as "no difference" (NaN > limit is false): inspect passed an inverted mask."""
    text = reason(suite, "bug_pad_mask_inverted", "inspect")
    assert "is not finite" in text and "attention_mask == 0" in text


def test_one_logit_for_two_classes_is_the_binary_head_not_a_narrow_one():
    """BCE-with-logits on one output was refused: "head has 1 outputs ... cannot score a label >= 1"."""
    from pilot.checks.contract import check_contract

    module = runner.load("ok_binary_one_logit")
    task = module.make_task()
    assert check_contract(task, module.Model()).verdict == "pass"
    result, _ = inspect_task(task, n_show=1, micro_batch=4, model=module.Model())
    assert result.verdict == "pass" and "a head of 1 output (one logit for 2 classes)" in result.reason


def test_a_model_that_reads_the_token_it_predicts_fails_inspect_as_not_causal(suite):
    """A bidirectional encoder trained as a language model passed every check: the answer is in its input."""
    text = reason(suite, "bug_model_not_causal", "inspect")
    assert "the model is not causal" in text and "causal mask" in text


# ----------------------------------------------------------------------------- the generation template
TEMPLATE = ROOT / "examples" / "my_generation_task"


def test_generation_template_passes_every_direct_check(monkeypatch):
    """examples/my_generation_task: each check the planted suite runs passes on the template as shipped."""
    monkeypatch.syspath_prepend(str(TEMPLATE))
    import my_generation_task

    task = my_generation_task.make_task(split={"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    assert task.splits["train"] and task.splits["val"] and task.convention == "next_token"
    assert my_generation_task.spell(342) == "three hundred forty-two"

    def build():
        torch.manual_seed(0)
        return my_generation_task.GRUDecoder(vocab_size=259)

    settings = {**runner.DEFAULTS, "micro_batch": 2, "accumulation": 8, "eval_micro_batch": 16}
    for step, check in runner.CHECKS.items():
        if step in runner.OPT_IN:
            continue
        result = check(task, build, settings)
        assert result.verdict == "pass", (step, result.reason)


@pytest.mark.parametrize("path", ["conf/model/my_decoder.yaml", "conf/data/my_text.yaml"])
def test_generation_template_configs_carry_no_pilot_schema(path):
    text = (TEMPLATE / path).read_text()
    assert "_target_: my_generation_task." in text and "defaults" not in text


def test_soft_targets_smoothed_again_by_the_loss_warn_and_a_temperature_does_not():
    """Targets smoothed in the data and again by cross_entropy(label_smoothing=0.1): the loss's floor (over
    free logits) rises above the targets' entropy, which a loss training towards them reaches. The same
    targets under a distillation loss at temperature 2, or smoothed once, keep the floor at the entropy."""
    import dataclasses

    import torch.nn.functional as F

    from pilot.checks.objective import objective_check
    from tests.planted_tasks import bug_label_smoothing_twice as twice

    task = twice.make_task()
    result = objective_check(task, twice.build_model(task), 4)
    assert result.verdict == "warn" and "smoothing applied twice" in result.reason, result.reason
    assert result.details["soft_targets"]["targets_entropy"] < result.details["soft_targets"]["loss_floor"]
    once = dataclasses.replace(
        task, loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["soft"], reduction="sum")
    )
    assert objective_check(once, twice.build_model(once), 4).verdict == "pass"
    tempered = dataclasses.replace(  # distillation at T = 2: the logits move, the floor does not
        task, loss_sum=lambda logits, b: F.cross_entropy(logits.float() / 2, b["soft"], reduction="sum")
    )
    assert "smoothing applied twice" not in objective_check(tempered, twice.build_model(tempered), 4).reason


def test_float_labels_that_are_values_are_a_regression_whatever_the_kind_is_called():
    """Two float targets per example (a forecast, scores) under a kind not named 'regression': their fresh
    loss was compared with ln(2) and warned about. Float labels that are values (neither 0 nor 1, rows no
    class distributions) are a regression to the objective check, whatever the kind's name."""
    import dataclasses

    from pilot.checks.objective import objective_check
    from tests.planted_tasks import ok_bert_two_target_regression as scores

    task = dataclasses.replace(scores.make_task(), kind="forecast")
    result = objective_check(task, scores.build_model(task), 4)
    assert result.verdict == "pass", result.reason
    assert "not compared (a regression: float labels, values)" in result.reason


def test_argmax_over_half_precision_logits_is_not_read_as_a_level_the_loss_never_trains():
    """LoRA over an fp16 model failed `objective`: logits + shift rounded in fp16 made and broke argmax
    ties (60 of 20,000 rows changed). Probed in float32, argmax passes; a threshold still fails."""
    from types import SimpleNamespace

    import torch.nn.functional as F

    from pilot.checks.shift_probe import prediction_outside_the_loss

    generator = torch.Generator().manual_seed(0)
    logits = (torch.randn(4000, 5, generator=generator) * 3).half()  # fp16: ties after rounding are common
    batch = {"y": torch.randint(0, 5, (4000,), generator=generator)}

    def task(predict):
        return SimpleNamespace(
            loss_sum=lambda out, b: F.cross_entropy(out.float(), b["y"], reduction="sum"), predict=predict
        )

    by_argmax = task(lambda out, b: out.argmax(-1))
    shifted = (logits.float() + 1 + float(logits.abs().max())).half()
    assert not torch.equal(logits.argmax(-1), shifted.argmax(-1))  # what fp16 rounding alone does
    assert prediction_outside_the_loss(by_argmax, [(logits, batch)]) is None
    by_threshold = task(lambda out, b: out > 0)
    found = prediction_outside_the_loss(by_threshold, [(logits, batch)])
    assert found is not None and "predict reads what the loss never trains" in found.problem


def test_targets_copied_from_their_own_input_fail_and_a_corrector_that_changes_one_does_not():
    """A masked LM's labels taken after the masking equal their input at every target; a per-position
    spelling corrector keeps most tokens and changes a few: not the same mistake."""
    from types import SimpleNamespace

    from pilot.checks.copied_targets import copied_target_findings

    ids = torch.randint(3, 50, (8, 12), generator=torch.Generator().manual_seed(0))
    corrected = ids.clone()
    corrected[2, 5] = 1  # one typo fixed
    for labels, flagged in ((ids.clone(), True), (corrected, False)):
        items = [{"row": row} for row in range(8)]
        task = SimpleNamespace(
            convention="same_position",
            collate=lambda chunk, labels=labels: {
                "input_ids": ids[[i["row"] for i in chunk]],
                "labels": labels[[i["row"] for i in chunk]],
            },
        )
        found, details = copied_target_findings(task, items, 4)
        assert bool(found) == flagged, details
        if flagged:
            assert "96 of 96 targets are the input token at their own position" in found[0].problem


def test_a_score_computed_from_the_trained_embeddings_is_not_said_to_be_never_trained():
    """A siamese model returning {"logits": cosine(ea, eb), "ea", "eb"}, its loss on the embeddings: the hint
    said predict's 'logits' were "never trained", though they are computed from what the loss trains. A head
    of its own beside the embeddings is still named."""
    from types import SimpleNamespace

    import torch.nn.functional as F

    from pilot.checks.output_reads import output_hint

    torch.manual_seed(0)
    encoder, head, a, b = torch.nn.Linear(4, 3), torch.nn.Linear(4, 1), torch.randn(5, 4), torch.randn(5, 4)
    task = SimpleNamespace(
        loss_sum=lambda out, batch: (out["ea"] * out["eb"]).sum(), predict=lambda out, batch: (out["logits"] > 0).long()
    )
    ea, eb = encoder(a), encoder(b)
    assert output_hint(task, {"logits": F.cosine_similarity(ea, eb, dim=-1), "ea": ea, "eb": eb}, {}) == ""
    separate = {"logits": head(a).squeeze(-1), "ea": ea, "eb": eb}  # scored by a head the loss never reaches
    assert "what is scored is never trained" in output_hint(task, separate, {})


def test_a_margin_the_fresh_model_already_meets_is_not_targets_the_loss_leaves_out():
    """A triplet margin loss on scores [-d(a,p), -d(a,n)]: the fresh model already met the margin for most
    triplets, whose gradient is zero there, and objective failed "target_count says 4 targets but loss_sum
    trains 1" (an outside examination). The loss is asked again at random outputs: a margin becomes active,
    targets a loss leaves out stay untrained."""
    import torch.nn.functional as F

    from pilot.checks.objective import objective_check
    from pilot.data.split import make_splits
    from pilot.data.task import Example, TaskData

    people = torch.randn(20, 8, generator=torch.Generator().manual_seed(0))
    examples = [
        Example(
            index=i,
            group=f"p{i % 20}",
            fields={"a": people[i % 20], "n": people[(i + 7) % 20] if i % 2 else people[i % 20] + 0.03},
        )
        for i in range(80)
    ]  # every other negative a hard one: its margin is active at the start, the others' already met

    class Distances(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.net = torch.nn.Linear(8, 16)

        def forward(self, a, n):
            ea, ep, en = (F.normalize(self.net(x), dim=-1) for x in (a, a + 0.01, n))
            return torch.stack([-(ea - ep).norm(dim=-1), -(ea - en).norm(dim=-1)], dim=1)  # the positive first

    def task(loss_sum):
        return TaskData(
            kind="metric_learning",
            splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
            encode=lambda e: {"index": e.index, "a": e.fields["a"], "n": e.fields["n"]},
            collate=lambda items: {
                "a": torch.stack([i["a"] for i in items]),
                "n": torch.stack([i["n"] for i in items]),
                "labels": torch.zeros(len(items), dtype=torch.long),
                "index": torch.tensor([i["index"] for i in items]),
            },
            loss_sum=loss_sum,
            target_count=lambda b: torch.tensor(b["labels"].numel()),
            predict=lambda s, b: s.argmax(-1),
            forward=lambda m, b: m(b["a"], b["n"]),
            info={"target_unit": "triplet"},
        )

    def margin(s, b):
        return F.relu(s[:, 1].float() - s[:, 0].float() + 0.2).sum()

    result = objective_check(task(margin), Distances(), micro_batch=4)
    assert "target_count says" not in result.reason, result.reason
    left_out = objective_check(task(lambda s, b: margin(s[:1], b)), Distances(), micro_batch=4)  # first only
    said = [f.problem for f in left_out.findings]
    assert left_out.verdict == "fail" and any("target_count says 4 targets but loss_sum trains 1" in f for f in said), (
        said
    )


def test_character_offsets_used_as_token_positions_are_named_once_not_crashed_on():
    """Start/end labels in characters, used as token positions (an examiner's BERT QA task): alignment,
    objective, tiny subset, phases and estimate each crashed with 'IndexError: Target 41 is out of bounds'
    and no check named the cause. A loss that crashes on them is refused by the contract (one row, the cause
    and the fix); one that clamps them away (transformers' QA loss) fails inspect, the cause named first."""
    crashing = runner.run_task(runner.load("bug_qa_char_offsets_as_positions"))
    assert list(crashing) == ["contract"], crashing
    said = crashing["contract"].reason
    assert said.startswith("position labels past the sequence: 64 of the first 126 training examples"), said
    assert "character offsets" in said and "char_to_token" in said and "out of bounds" in said, said
    clamped = runner.run_task(runner.load("bug_qa_char_offsets_clamped"))
    assert not any(r.reason.startswith("crashed") for r in clamped.values()), clamped
    inspect = clamped["inspect"]
    assert inspect.verdict == "fail" and inspect.findings[0].problem.startswith("position labels past the sequence")
    assert inspect.details["position_labels"]["past_the_sequence"] == 64
    untruncated = runner.run_task(runner.load("bug_qa_positions_untruncated"))["inspect"]  # a few past the cut
    assert "most likely positions counted on the text before it was truncated" in untruncated.reason
    assert runner.run_task(runner.load("ok_qa_truncated_no_answer"))["inspect"].verdict == "pass"  # no-answer: 0


def test_a_model_that_cannot_run_one_example_alone_is_not_judged_by_the_position_probe():
    """The contract's position probe runs training examples one at a time; a forward that needs two rows (a
    statistic over the batch) raised there and its exception was the contract's own crash. Not judged there:
    the contract passes as it did before the probe, and only the probe's crash is left out."""
    from pilot.checks.contract import check_contract

    module = runner.load("bug_qa_char_offsets_as_positions")
    task = module.make_task()

    def two_rows_at_least(m, b):
        if b["input_ids"].shape[0] < 2:
            raise RuntimeError("this model normalises over the batch: it needs two rows")
        return module._qa.forward(m, b)

    torch.manual_seed(0)
    result = check_contract(dataclasses.replace(task, forward=two_rows_at_least), module.build_model(task))
    assert result.verdict == "pass", result.reason
    with pytest.raises(ContractError, match="position labels past the sequence"):  # the same task, one row runs
        check_contract(task, module.build_model(task))


def test_in_batch_scores_that_read_the_padding_fail_inspect_and_a_masked_pool_passes():
    """A bi-encoder mean-pooling over every position (h.mean(1)), trained with in-batch InfoNCE ([B, B] scores),
    passed every check: the padding probe compares a row with its example alone, and a [B, B] row has none.
    Only the padding changed (the same examples padded longer by a longer one, its row left out) must move
    no score; the masked twin's move by float noise."""
    results = {}
    for name in ("bug_contrastive_mean_pool_counts_padding", "ok_contrastive_masked_mean_pool"):
        module = runner.load(name)
        task = module.make_task()
        torch.manual_seed(0)
        results[name] = inspect_task(task, 2, 4, module.build_model(task))[0]
    bug, ok = results["bug_contrastive_mean_pool_counts_padding"], results["ok_contrastive_masked_mean_pool"]
    assert bug.verdict == "fail" and bug.reason.startswith("train: the scores over the batch read the padding"), bug
    assert "input_ids 6 -> 8" in bug.reason and "mask.sum(1, keepdim=True)" in bug.reason, bug.reason
    assert bug.details["batch_padding"]["largest_relative_difference"] > 5 * bug.details["batch_padding"]["limit"]
    assert ok.verdict == "pass", ok.reason
    assert ok.details["batch_padding"]["batches_compared"] == 2
    assert ok.details["batch_padding"]["largest_relative_difference"] < 1e-5
