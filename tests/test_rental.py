"""Choice sheet, campaign plan and journal: what fits where, how long, and what is written down."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra.utils import instantiate

from pilot.estimate.fake_tensor import estimate_memory
from pilot.recap import build_recap
from pilot.rental.campaign_plan import Job, JobTime, plan_campaign, sweep_jobs, time_jobs, validations
from pilot.rental.catalog import Gpu, load_catalog
from pilot.rental.choice_sheet import ChoiceRow, Measured, choice_rows, recommended
from pilot.rental.estimate_cache import EstimateCache
from pilot.rental.journal import append_entry
from pilot.rental.sheet import SHEET_COLUMNS
from pilot.text_table import csv_text
from pilot.train import train
from pilot.validation import ConfigError, validate

REPO = Path(__file__).resolve().parents[1]
GIB = 2**30


def rows_for(cfg, gpus):
    task = instantiate(cfg.data, _convert_="all")
    return choice_rows(cfg, EstimateCache(cfg, task), gpus)


def test_a_gpu_too_small_for_the_model_states_is_reported_with_the_sharding_reason(make_cfg):
    cfg = make_cfg("rental.counts=[1,2]", "rental.reserve_gib=0")
    rows = rows_for(
        cfg, [Gpu("tiny", memory_gib=1 / 1024, fp32_tflops=10.0), Gpu("big", memory_gib=8, fp32_tflops=10.0)]
    )
    tiny = [r for r in rows if r.gpu == "tiny"]
    assert all(not r.fits for r in tiny)
    assert "model states alone" in tiny[0].reason and "must be sharded (FSDP)" in tiny[0].reason
    assert tiny[1].strategy == "FSDP, 2 ranks" and "even sharded over 2 GPUs" in tiny[1].reason
    big = [r for r in rows if r.gpu == "big"]
    assert all(r.fits for r in big) and big[0].micro_batch == 2 and big[0].accumulation == 8
    assert big[1].strategy == "DDP, 2 replicas" and big[1].micro_batch * big[1].accumulation * 2 == 16
    assert recommended(rows).gpu == "big" and recommended(rows).count == 1


def test_a_gpu_without_bf16_does_not_point_a_bf16_config_at_its_sharded_rows(make_cfg):
    """Its FSDP rows cannot run (fp16 has no sharded gradient scaler): the single-GPU row says so instead of
    "see this GPU's rows with more GPUs", which all say no."""
    cfg = make_cfg("precision=bf16", "rental.counts=[1,2]", "rental.reserve_gib=0")
    rows = rows_for(cfg, [Gpu("old", memory_gib=1 / 1024, fp32_tflops=10.0, fp16_tflops=40.0)])
    assert [r.fits for r in rows] == [False, False]
    assert "this GPU has no bf16" in rows[0].reason and "rows with more GPUs" not in rows[0].reason
    assert "no bf16 on this GPU" in rows[1].reason


def test_activations_that_do_not_fit_lead_to_a_smaller_micro_batch_keeping_the_effective_batch(make_cfg):
    cfg = make_cfg("batch=large_micro", "rental.counts=[1]", "rental.reserve_gib=0", "rental.margin=0")
    task = instantiate(cfg.data, _convert_="all")
    cache = EstimateCache(cfg, task)
    full = cache.base.peak_bytes
    smaller = cache.get(1, False).peak_bytes
    assert smaller < full
    gpu = Gpu("between", memory_gib=(smaller + full) / 2 / GIB, fp32_tflops=10.0)
    row = choice_rows(cfg, cache, [gpu])[0]
    assert row.fits and row.micro_batch < 8 and row.micro_batch * row.accumulation == 16
    assert "does not fit" in row.reason
    too_small = Gpu("between", memory_gib=cache.base.closed_form["parameters"] * 4.2 / GIB, fp32_tflops=10.0)
    row = choice_rows(cfg, cache, [too_small])[0]
    assert not row.fits and "even micro-batch 1" in row.reason


def test_time_per_update_is_measured_only_on_matching_hardware(make_cfg):
    cfg = make_cfg("rental.counts=[1]")
    gpus = [
        Gpu("X", memory_gib=8, fp32_tflops=10.0, device_name="Fake GPU X"),
        Gpu("Y", memory_gib=8, fp32_tflops=10.0),
    ]
    task = instantiate(cfg.data, _convert_="all")
    rows = choice_rows(cfg, EstimateCache(cfg, task), gpus, Measured("Fake GPU X 80GB", 0.5, 0.1, 2.0))
    assert rows[0].seconds_per_update == 0.5 and rows[0].time_source.startswith("measured")
    assert rows[1].time_source.startswith("estimate") and "TFLOP" in rows[1].time_source
    flops = EstimateCache(cfg, task).base.flops_per_micro_batch * 8
    assert rows[1].seconds_per_update == pytest.approx(flops / (10e12 * 0.35))


def _job_times(hours):
    return [JobTime(Job([f"optim.lr={i}"], 100, 1), h, 0.0, 0.0, "test") for i, h in enumerate(hours)]


def test_a_campaign_over_seven_days_goes_to_the_thirty_day_package():
    plan = plan_campaign(_job_times([24 * 4, 24 * 4]), [3, 7, 30], "H100-80GB", 1)  # 8 days
    assert plan.package_days == 30 and plan.fits_all and not plan.left_out
    assert plan_campaign(_job_times([10, 20]), [3, 7, 30], "H100-80GB", 1).package_days == 3
    assert plan_campaign(_job_times([24 * 3, 24]), [3, 7, 30], "H100-80GB", 1).package_days == 7


def test_a_campaign_over_thirty_days_reports_what_does_not_fit():
    plan = plan_campaign(_job_times([24 * 20, 24 * 15, 24 * 5]), [3, 7, 30], "H100-80GB", 1)
    assert plan.package_days == 30 and not plan.fits_all
    assert [j.job.overrides for j in plan.planned] == [["optim.lr=0"], ["optim.lr=2"]]  # priority order kept
    assert [j.job.overrides for j in plan.left_out] == [["optim.lr=1"]]


def test_the_sweep_becomes_jobs_and_times_reserve_evaluation_and_closing(make_cfg):
    cfg = make_cfg("+experiment=lr_sweep")
    task = instantiate(cfg.data, _convert_="all")
    jobs = sweep_jobs(
        cfg, {"optim.lr": "1e-4,5e-5,2e-4", "seed": "0,1", "budget.value": "200,400"}, len(task.splits["train"])
    )
    assert len(jobs) == 12 and jobs[0].overrides == ["optim.lr=0.0001", "seed=0", "budget.value=200"]
    assert {j.updates for j in jobs} == {200, 400}
    assert jobs[0].validations == validations(200, 50) == 4
    row = ChoiceRow("G", 1, 80, "single GPU", True, 1, 79, 2, 8, "fp32", False, 2.0, "measured", "")
    estimate = estimate_memory(cfg, task)
    times = time_jobs(cfg, jobs[:1], row, Gpu("G", 80, 10.0), estimate, Measured("cpu", 2.0, 0.5, 30.0))
    assert times[0].train_h == pytest.approx(200 * 2.0 / 3600)
    assert times[0].closing_h == pytest.approx(30 / 3600)  # measured closing, not the declared reserve
    assert times[0].eval_h > 0
    declared = time_jobs(cfg, jobs[:1], row, Gpu("G", 80, 10.0), estimate, None)
    assert declared[0].closing_h == pytest.approx(0.5) and "declared" in declared[0].sources
    assert not any(j.note for j in jobs)  # lr, seed and budget leave an update as it is
    # a validation evaluates what the split holds: loop.eval_examples=640 over 91 examples planned 40 batches
    measured = Measured("cpu", 2.0, 0.5, 30.0)
    many = time_jobs(cfg.copy(), jobs[:1], row, Gpu("G", 80, 10.0), estimate, measured, 10**6)
    held = time_jobs(cfg, jobs[:1], row, Gpu("G", 80, 10.0), estimate, measured, 4)
    assert held[0].eval_h < many[0].eval_h


def test_a_swept_setting_that_changes_an_update_is_said_not_estimated_on_its_own(make_cfg):
    """A sweep of model.d_model (64 and the 7B's 4096) was planned as two jobs of the base config's memory and
    time, with no word; a bf16 memory variant on a T4 as 'a config group, timed as the base config' alone."""
    from pilot.rental.plan_text import plan_lines

    cfg = make_cfg()
    jobs = sweep_jobs(cfg, {"model.d_model": "64,4096", "optim.lr": "1e-3,2e-3"}, 100)
    notes = {j.overrides[0]: j.note for j in jobs}
    assert notes["model.d_model=64"] == ""  # the base config's own value
    assert notes["model.d_model=4096"].startswith("model.d_model=4096: changes what an update computes")
    times = [JobTime(j, 1.0, 0.1, 0.1, "measured") for j in jobs]
    row = ChoiceRow("G", 1, 80, "single GPU", True, 1, 79, 2, 8, "fp32", False, 2.0, "measured", "")
    said = "\n".join(plan_lines(plan_campaign(times, [3], "G", 1), row))
    assert "2 job(s) change what an update computes" in said and "not known" in said


def test_the_journal_is_appended_never_rewritten(tmp_path, caplog):
    """Its start (folders made: a mistyped PILOT_JOURNAL went there without a word) is said once."""
    path = tmp_path / "campaign" / "journal.md"
    with caplog.at_level("INFO", logger="pilot"):
        append_entry(path, "plan chosen", ["- 1 x H100-80GB, 3-day package"])
        first = path.read_text()
        append_entry(path, "sweep concluded", ["- the control remains the best choice"])
    text = path.read_text()
    assert text.startswith(first) and text.count("## ") == 2
    assert "the control remains the best choice" in text
    started = [r.getMessage() for r in caplog.records if "new campaign journal" in r.getMessage()]
    assert started == [f"journal: a new campaign journal started at {path} (campaign.journal, or PILOT_JOURNAL)"]


def test_bad_catalog_entries_name_the_key_and_the_fix(make_cfg):
    with pytest.raises(ConfigError) as error:
        validate(
            make_cfg("+rental.catalog.mine={memory_gb:48,fp32_tflops:-1}", "rental.gpu=nope", "rental.utilisation=1.5")
        )
    text = str(error.value)
    assert "rental.catalog.mine.memory_gb" in text and "unknown field" in text
    assert "rental.catalog.mine.memory_gib" in text and "rental.catalog.mine.fp32_tflops=-1" in text
    assert "rental.gpu='nope'" in text and "rental.utilisation=1.5" in text
    cfg = make_cfg("+rental.catalog.mine={memory_gib:48,fp32_tflops:90,bf16_tflops:360}")
    validate(cfg)
    assert load_catalog(cfg.rental)[-1] == Gpu("mine", 48, 90, bf16_tflops=360)


def test_estimate_mode_writes_the_choice_sheet_and_journals_the_plan(tmp_path):
    run_dir, journal = tmp_path / "run", tmp_path / "journal.md"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pilot",
            "+experiment=lr_sweep",
            "mode=estimate",
            f"hydra.run.dir={run_dir}",
            f"campaign.journal={journal}",
            "model.d_model=256",
            "model.n_layer=4",
            "data.max_len=256",
            "rental.counts=[1,2]",
            "+rental.catalog.pocket={memory_gib:0.01,fp32_tflops:1}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    for name in ("choice_sheet.md", "choice_sheet.csv", "campaign_plan.csv", "memory_estimate.json", "run.json"):
        assert (run_dir / name).exists(), name
    sheet = (run_dir / "choice_sheet.md").read_text()
    assert "| pocket | 1 |" in sheet and "must be sharded (FSDP)" in sheet  # 10 MiB cannot hold 3.3M parameters' states
    data = json.loads((run_dir / "memory_estimate.json").read_text())
    assert len(data["plan"]["planned"]) == 6  # 3 learning rates x 2 seeds, from the experiment's sweep
    assert data["estimate"]["settings"]["seq_len"] == 256
    assert json.loads((run_dir / "run.json").read_text())["mode"] == "estimate"
    assert "plan chosen" in journal.read_text()
    assert "choice sheet" in completed.stdout
    sheet_rows = pd.read_csv(run_dir / "choice_sheet.csv")  # written without pandas, read by it as before
    assert list(sheet_rows.columns) == SHEET_COLUMNS and "pocket" in sheet_rows["gpu"].tolist()
    assert len(pd.read_csv(run_dir / "campaign_plan.csv")) == 6


def test_the_sheets_csv_text_leaves_none_and_nan_empty():
    rows = [{"gpu": "A100", "need_gib": float("nan"), "count": 4}, {"gpu": None, "extra": "not a column"}]
    assert csv_text(["gpu", "need_gib", "count"], rows) == "gpu,need_gib,count\nA100,,4\n,,\n"


def test_a_shorter_max_length_is_marked_as_changing_the_task(make_cfg, tmp_path):
    sweep = tmp_path / "sweep"
    common = ["+experiment=memory_variants", "budget.value=6", "loop.eval_every=0", "closing.control_examples=0"]
    for name, extra in (("control", []), ("short", ["+memory_variant=max_len_64"]), ("bf16", ["+memory_variant=bf16"])):
        overrides = [*common, f"+memory_variant={name}" if not extra else extra[0]]
        if name == "control":
            overrides = [*common, "+memory_variant=control"]
        cfg = make_cfg(*overrides)
        train(cfg, sweep / name, overrides=[o for o in overrides if o.startswith("+memory_variant")])
    frame = build_recap([sweep], sweep, control="memory_variant=control", plot=False, quality_tolerance=0.02)
    assert len(frame) == 3
    text = (sweep / "recap.md").read_text()
    assert "Changes the task (not a memory saving of the same experiment): memory_variant=max_len_64" in text
    assert "data.max_len 96 -> 64" in text and "of input tokens cut" in text
    assert "not comparable: changes the task" in text
    assert "within tolerance" in text  # bf16 after 6 updates stays within 2% of fp32
    assert "## Phase tables per variant" in text and "steady_steps" in text
    assert frame["estimated_peak_bytes"].notna().all()  # the experiment records each variant's estimate
    assert (sweep / "short" / "phases.csv").exists()


def test_a_measured_peak_on_matching_hardware_counts_when_larger_than_the_estimate(make_cfg):
    cfg = make_cfg("rental.counts=[1]", "rental.reserve_gib=0", "rental.margin=0")
    task = instantiate(cfg.data, _convert_="all")
    gpu = Gpu("X", memory_gib=0.05, fp32_tflops=10.0, device_name="Fake GPU X")
    fits = choice_rows(cfg, EstimateCache(cfg, task), [gpu], Measured("Fake GPU X", 0.5, 0.1, 2.0, 10 * 2**20))
    assert fits[0].fits and "allocated in the pilot" in fits[0].reason
    too_big = choice_rows(cfg, EstimateCache(cfg, task), [gpu], Measured("Fake GPU X", 0.5, 0.1, 2.0, 2**30))
    assert not too_big[0].fits and "measured peak does not fit" in too_big[0].reason


def test_a_pinned_gpu_that_does_not_fit_plans_nothing_and_says_so(make_cfg, tmp_path):
    from pilot.rental.sheet import build_and_write

    cfg = make_cfg(
        "+rental.catalog.small={memory_gib:0.001,fp32_tflops:1}",
        "rental.gpu=small",
        f"campaign.journal={tmp_path / 'journal.md'}",
        "rental.counts=[1]",
    )
    task = instantiate(cfg.data, _convert_="all")
    result = build_and_write(cfg, tmp_path, task, estimate_memory(cfg, task))
    assert result.plan is None and result.chosen is None
    assert "The chosen hardware (any number of x small) does not fit" in (tmp_path / "choice_sheet.md").read_text()
    assert "does not fit" in (tmp_path / "journal.md").read_text()
    (said,) = result.plan_lines()  # what the console prints: it said "No catalog GPU and count fits"
    assert said.startswith("The chosen hardware (any number of x small) does not fit this configuration") and (
        "Why: model states alone need" in said
    ), said
    assert "No catalog GPU" not in said


def test_nothing_planned_says_the_rows_reasons_not_memory_advice(make_cfg, tmp_path):
    """rental.counts=[3]: the batch splits over no row, and the plan advised sharding or more memory."""
    from pilot.rental.sheet import build_and_write

    cfg = make_cfg("rental.counts=[3]", f"campaign.journal={tmp_path / 'journal.md'}")
    task = instantiate(cfg.data, _convert_="all")
    (said,) = build_and_write(cfg, tmp_path, task, estimate_memory(cfg, task)).plan_lines()
    assert "Why: the effective batch (16 examples per update) does not split over 3 GPUs." in said, said
    assert "sharding" not in said and "more memory" not in said


def _row(gpu, count=1, precision="bf16", met=True, cost=None, memory=80.0):
    return ChoiceRow(
        gpu,
        count,
        memory,
        "single GPU",
        True,
        10.0,
        memory - 10,
        1,
        8,
        precision,
        False,
        1.0,
        "estimate",
        "",
        "",
        met,
        1,
        None if cost is None else 1.0,
        cost,
    )


def test_the_plan_picks_neither_a_substitute_precision_nor_an_unknown_gpu_and_compares_prices():
    """A user's catalog T4 (no bf16: the sheet substitutes fp16, a variant never piloted; its capability
    unknown) was the plan's choice over GPUs known to run the bf16 config."""
    substitute, unknown, known = _row("T4-cheap", precision="fp16", met=None), _row("mine", met=None), _row("A100", 2)
    assert recommended([substitute, unknown, known], precision="bf16").gpu == "A100"
    assert recommended([substitute, unknown], precision="bf16").gpu == "mine"  # none known: the unknown one
    assert recommended([substitute], precision="bf16") is None
    assert recommended([substitute], gpu="T4-cheap", precision="bf16").gpu == "T4-cheap"  # pinned: the user's call
    cheap_pair, dear_one = _row("L4", 2, cost=0.01), _row("H100", 1, cost=0.02)
    assert recommended([dear_one, cheap_pair]).gpu == "L4"  # every one priced: the cheapest per update
    assert recommended([dear_one, _row("L4", 2)]).gpu == "H100"  # one unpriced: the smallest rental


def test_a_priced_catalog_gives_a_cost_per_update(make_cfg, tmp_path):
    cfg = make_cfg(
        "+rental.catalog.cheap={memory_gib:8,fp32_tflops:10,price_per_hour:1.0}",
        "+rental.catalog.dear={memory_gib:8,fp32_tflops:40,price_per_hour:8.0}",
        "rental.counts=[1]",
        "rental.gpu=null",
        f"campaign.journal={tmp_path / 'journal.md'}",
    )
    task = instantiate(cfg.data, _convert_="all")
    catalog = [g for g in load_catalog(cfg.rental) if g.name in ("cheap", "dear")]
    rows = choice_rows(cfg, EstimateCache(cfg, task), catalog)
    cheap, dear = rows
    assert cheap.cost_per_update == pytest.approx(1.0 * cheap.seconds_per_update / 3600)
    assert dear.seconds_per_update < cheap.seconds_per_update and dear.cost_per_update > cheap.cost_per_update
    assert recommended(rows).gpu == "cheap"  # the faster one costs more per update


class _StubEstimates:
    """An EstimateCache stand-in: fixed estimates by (micro-batch, checkpointing), counting calls."""

    def __init__(self, estimates):
        self.estimates, self.calls = dict(estimates), []

    def get(self, micro, checkpointing, ranks=1):
        self.calls.append((micro, checkpointing))
        return self.estimates[(micro, checkpointing, ranks)]


def _stub_estimate(peak_bytes, during, states=0):
    from types import SimpleNamespace

    breakdown = {"parameters": states // 3, "gradients": states // 3, "optimizer_state": states - 2 * (states // 3)}
    peak = SimpleNamespace(peak_bytes=peak_bytes, during=during, phase="steady_steps", breakdown=breakdown)
    return SimpleNamespace(peak_bytes=peak_bytes, peak_phase=peak)


def test_checkpointing_is_not_estimated_where_the_peak_is_the_optimizer_step():
    """Issue 17 item 4: checkpointing cannot lower an optimizer-step peak, so that estimate is skipped
    and the row names the term that sets its peak; a forward/backward peak is still tried."""
    from types import SimpleNamespace

    from pilot.rental.row_fit import first_fit
    from pilot.rental.row_reasons import no_fit_reason

    setup = SimpleNamespace(settings=[False, True], micro_batch=1, margin=0.0, reserve=0)
    step_bound = _StubEstimates({(1, False, 1): _stub_estimate(10 * GIB, "optimizer step", states=9 * GIB)})
    chosen, smallest = first_fit(setup, step_bound, per_replica=1, buckets=0, capacity=8 * GIB)
    assert chosen is None and step_bound.calls == [(1, False)]  # no second, useless estimate
    reason = no_fit_reason(setup, smallest)
    assert "the peak is the optimizer step" in reason and "cannot lower" in reason and "activations of" not in reason

    activation_bound = _StubEstimates(
        {
            (1, False, 1): _stub_estimate(10 * GIB, "forward/backward"),
            (1, True, 1): _stub_estimate(6 * GIB, "forward/backward"),
        }
    )
    chosen, _ = first_fit(setup, activation_bound, per_replica=1, buckets=0, capacity=8 * GIB)
    assert activation_bound.calls == [(1, False), (1, True)] and chosen[:2] == (1, True)


def test_a_rows_reason_names_the_terms_at_its_peak_largest_first():
    """Issue 17 item 4: a row says which terms set its peak and how large they are, not a guess."""
    from types import SimpleNamespace

    from pilot.rental.row_reasons import no_fit_reason, peak_terms

    breakdown = {"parameters": 2 * GIB, "gradients": 2 * GIB, "optimizer_state": 4 * GIB, "activations": 9 * GIB}
    peak = SimpleNamespace(
        peak_bytes=17 * GIB, during="forward/backward", phase="steady_steps", breakdown=breakdown, micro_batch=1
    )
    assert peak_terms(peak) == (
        "activations 9.0 GiB + optimizer state 4.0 GiB + parameters 2.0 GiB + gradients 2.0 GiB"
    )
    setup = SimpleNamespace(settings=[False, True])
    reason = no_fit_reason(setup, (18 * GIB, SimpleNamespace(peak_bytes=17 * GIB, peak_phase=peak)))
    assert "forward/backward in steady_steps: activations 9.0 GiB + optimizer state 4.0 GiB" in reason


def test_the_plan_states_its_cost_at_the_chosen_gpus_price():
    from pilot.rental.campaign_plan import Plan
    from pilot.rental.plan_text import plan_lines

    job = JobTime(Job([], 100, 1), 1.0, 0.25, 0.25, "estimate")
    plan = Plan("L4", 2, 3, True, [job], [], 72.0)
    lines = plan_lines(plan, _row("L4", 2, cost=0.01), brief=True)
    assert any("Cost: ~3 for the planned jobs (3 GPU-hours x 1 per GPU-hour" in line for line in lines), lines
    assert not any("Cost" in line for line in plan_lines(plan, _row("L4", 2), brief=True))


def test_a_catalog_gpu_declares_or_is_known_by_its_device_name_for_its_compute_capability():
    from omegaconf import OmegaConf

    from pilot.rental.catalog import catalog_problems
    from pilot.rental.requirements import catalog_capability

    assert str(catalog_capability("T4-cheap", "Tesla T4")) == "compute capability 7.5"  # was unknown
    assert catalog_capability("mine", "Some GPU") is None
    entries = {
        "ok": {"memory_gib": 48, "fp32_tflops": 90, "compute_capability": 8.6},
        "amd": {"memory_gib": 48, "fp32_tflops": 90, "compute_capability": "gfx942"},
        "bad": {"memory_gib": 48, "fp32_tflops": 90, "compute_capability": "abc"},
        "named": {"memory_gib": 48, "fp32_tflops": 90, "device_name": 4090},
        "yes": {"memory_gib": True, "fp32_tflops": 90},
    }
    found = {key for key, _, _ in catalog_problems(OmegaConf.create(entries))}
    assert found == {
        "rental.catalog.bad.compute_capability",
        "rental.catalog.named.device_name",
        "rental.catalog.yes.memory_gib",
    }
    gpus = {g.name: g for g in load_catalog(OmegaConf.create({"catalog": {k: entries[k] for k in ("ok", "amd")}}))}
    assert gpus["ok"].compute_capability == "8.6" and gpus["amd"].compute_capability == "gfx942"


def test_a_model_held_in_bf16_is_timed_at_the_bf16_peak(make_cfg):
    """model.dtype=bf16 without autocast computes in bf16: its rows said fp32 and took the fp32 peak
    (about 16x slower on an A100)."""
    from pilot.rental.choice_sheet import compute_precision

    cfg = make_cfg("model=hf_causal_lm", "model.dtype=bf16", "rental.counts=[1]")
    assert compute_precision(cfg) == "bf16" and compute_precision(make_cfg()) == "fp32"
    gpu = Gpu("A", memory_gib=40, fp32_tflops=19.5, bf16_tflops=312.0)
    (row,) = rows_for(cfg, [gpu])
    assert row.fits and row.precision == "bf16" and "312 TFLOP/s" in row.time_source, row.time_source
    assert recommended([row], precision=compute_precision(cfg)) is row


def test_the_plan_says_the_overrides_that_run_the_config_as_planned(make_cfg):
    """distributed=ddp2 planned on one GPU: the plan's micro-batch x accumulation differ from the config's,
    and it did not say what to change."""
    from pilot.rental.choice_sheet import row_overrides

    cfg = make_cfg("distributed=ddp2")
    one = _row("T4", 1, precision="fp32")  # micro-batch 1 x accumulation 8 in _row
    assert row_overrides(cfg, one) == ["distributed=single", "batch.micro_batch=1"]
    sharded = ChoiceRow(**{**one.as_dict(), "count": 4, "ranks": 4, "activation_checkpointing": True})
    assert row_overrides(cfg, sharded) == [
        "distributed=fsdp",
        "distributed.replicas=4",
        "batch.micro_batch=1",
        "memory.activation_checkpointing=true",
    ]
    same = ChoiceRow(**{**one.as_dict(), "count": 2, "micro_batch": 2, "accumulation": 8})
    assert row_overrides(cfg, same) == []


def test_the_sheets_word_on_prices_is_about_the_rows_the_plan_chooses_among(make_cfg):
    """An unpriced GPU the plan would never choose (its capability unknown beside a known one) made the
    sheet say costs were not compared, while the plan compared them."""
    from pilot.rental.sheet import _prices_line

    cfg = make_cfg("precision=bf16")
    known, unknown = _row("A100", cost=0.01), _row("mine", met=None)
    assert recommended([known, unknown], precision="bf16") is known
    assert "the plan takes the cheapest per update" in _prices_line(cfg, [known, unknown])
    both = [known, _row("H100")]  # known to run it, unpriced: the smallest rental, and said so
    assert "price_per_hour is missing for H100" in _prices_line(cfg, both)


def test_the_sheet_tries_checkpointing_when_the_model_a_factory_built_supports_it(make_cfg):
    """A factory _target_ declares nothing before it builds: the sheet read the function and never
    tried its rows with activation checkpointing. The base estimate says what the built model can do."""
    from pilot.rental.choice_sheet import _Setup

    gpt = make_cfg("mode=estimate", "model._target_=tests.test_configs.build_tiny_gpt")
    classifier = make_cfg(
        "mode=estimate", "+experiment=classification", "model._target_=tests.test_configs.build_classifier"
    )
    for cfg, tried in ((gpt, [False, True]), (classifier, [False])):
        cache = EstimateCache(cfg, instantiate(cfg.data, _convert_="all"))
        assert _Setup.read(cfg, cache).settings == tried


def test_a_ddp_row_whose_peak_is_the_optimizer_step_points_at_sharding():
    """A1.01B model on 24 GB GPUs x 2/4/8 (DDP: each replica holds every state) said only that checkpointing
    or a smaller micro-batch cannot lower the optimizer step's peak; sharded (distributed=fsdp) they fit."""
    from types import SimpleNamespace

    from pilot.rental.row_reasons import no_fit_reason

    peak = SimpleNamespace(during="optimizer step", phase="first_step", breakdown={"optimizer_state": 8 << 30})
    smallest = (26 << 30, SimpleNamespace(peak_phase=peak))
    setup = SimpleNamespace(settings=(False,))
    assert "distributed=fsdp" in no_fit_reason(setup, smallest, replicas=4)
    assert "distributed=fsdp" not in no_fit_reason(setup, smallest)


def test_mode_estimate_does_not_call_the_settings_its_plan_reads_unread(make_cfg):
    """loop.eval_examples and loop.eval_every set the plan's validation times, yet were warned 'mode=estimate
    trains nothing and does not read it'."""
    from pilot.validation.unread import unread_settings

    lines = unread_settings(
        make_cfg("mode=estimate"), ["loop.eval_examples=64", "loop.eval_every=10", "checkpoint.every=5"]
    )
    assert lines == ["checkpoint.every=5: mode=estimate trains nothing and does not read it"], lines


def test_the_console_says_the_times_it_prints_are_computed_not_measured(make_cfg, tmp_path, capsys):
    """The console's choice sheet printed "~467 µs est." per GPU and the plan's hours without what choice_sheet.md
    says of them: computed from counted FLOPs and a rental's datasheet peak at a declared utilisation, not measured.
    Where every time shown was measured, no such line."""
    import dataclasses

    from pilot.rental.sheet import build_and_write, print_sheet

    cfg = make_cfg("rental.counts=[1]", f"campaign.journal={tmp_path / 'journal.md'}")
    task = instantiate(cfg.data, _convert_="all")
    estimate = estimate_memory(cfg, task)
    result = build_and_write(cfg, tmp_path, task, estimate)
    capsys.readouterr()
    print_sheet(result, estimate)
    said = " ".join(capsys.readouterr().out.split())  # rich wraps the line at the console's width
    assert " est. " in said
    assert "- ~ est.: computed, not measured: from counted FLOPs at 0.35 of the datasheet peak" in said, said
    assert "The plan's hours below are made of such estimates." in said
    measured = [dataclasses.replace(r, time_source="measured in the pilot on Fake GPU") for r in result.rows]
    chosen = dataclasses.replace(result.chosen, time_source="measured in the pilot on Fake GPU")
    print_sheet(dataclasses.replace(result, rows=measured, chosen=chosen), estimate)
    said = " ".join(capsys.readouterr().out.split())
    assert "not measured" not in said and " est. " not in said, said
