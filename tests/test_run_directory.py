"""hydra.run.dir is checked before Hydra writes into it (pilot/run_directory.py): a user's files are
never overwritten, a finished run's .hydra/ is not rewritten by a line that does nothing, a file in
the way or an empty value is refused naming the key, and a refused line leaves no directory behind."""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, run_pilot
from omegaconf import OmegaConf

from pilot.checkpoint import TMP_MARK
from pilot.run_directory import after_refusal, check_run_directory
from pilot.run_record import RunDirectoryLock

TRAIN = ["mode=train", "budget.value=4", "loop.eval_every=0", "run.threads=1", "closing.control_examples=0"]


LIVE = ("__main__.log", ".pilot.lock")  # the job log (appended) and the lock (holder's pid) of every process


def _files(directory, skip=()):
    """Every file under ``directory`` (path -> bytes), those named in ``skip`` left out."""
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name not in skip
    }


def _times(directory, skip=LIVE):
    """Every path under ``directory`` and itself (path -> modification time in ns), ``skip`` left out."""
    paths = [directory, *sorted(directory.rglob("*"))]
    return {p.relative_to(directory).as_posix(): p.stat().st_mtime_ns for p in paths if p.name not in skip}


def test_a_directory_of_other_files_is_refused_and_left_as_it_was(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.yaml").write_text("my: precious\n")
    (mine / "metrics.jsonl").write_text('{"mine": 1}\n')
    done = run_pilot(mine, *TRAIN)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "hydra.run.dir=" in done.stderr and "config.yaml, metrics.jsonl" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert _files(mine) == {"config.yaml": b"my: precious\n", "metrics.jsonl": b'{"mine": 1}\n'}
    assert sorted(p.name for p in mine.iterdir()) == ["config.yaml", "metrics.jsonl"]  # no .hydra either


def test_a_users_own_log_file_is_not_taken_for_hydras_and_never_removed(tmp_path):
    import os

    from pilot.run_directory import remove_unstarted_job

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.log").write_text("my precious notes\n")
    os.utime(mine / "notes.log", (1_000_000_000, 1_000_000_000))  # written before any pilot process
    done = run_pilot(mine, *TRAIN)
    assert done.returncode == 2 and "notes.log" in done.stderr, done.stderr[-2000:]
    assert _files(mine) == {"notes.log": b"my precious notes\n"}
    (mine / ".hydra").mkdir()  # a sweep job stopped at its start: its directory goes unless it holds the user's
    remove_unstarted_job(mine)
    assert (mine / "notes.log").read_text() == "my precious notes\n"
    (mine / "notes.log").unlink()
    (mine / "__main__.log").write_text("")
    (mine / ".run.json.123.tmp").write_text("{")  # pilot's own record, staged when a signal came
    remove_unstarted_job(mine)
    assert not mine.exists()


@pytest.mark.parametrize("config", ["db:\n  host: x\n", "other app config\n"], ids=["yaml", "no-key"])
def test_another_hydra_apps_directory_is_refused_and_its_record_kept(tmp_path, config):
    """A directory holding another Hydra app's .hydra/ and job log was taken as empty, and its config.yaml
    and overrides.yaml were overwritten by pilot's (a config.yaml without a key was taken for pilot's own,
    cut short by a kill)."""
    other = tmp_path / "other"
    (other / ".hydra").mkdir(parents=True)
    (other / ".hydra" / "config.yaml").write_text(config)
    (other / "app.log").write_text("their log\n")
    before = _files(other)
    done = run_pilot(other, *TRAIN)
    assert done.returncode == 2 and "another Hydra app" in done.stderr, done.stderr[-2000:]
    assert _files(other) == before


@pytest.mark.parametrize("written", ["", "mode: train\nmodel:\n  _target_: pilot.mod"], ids=["empty", "cut"])
def test_a_start_killed_while_hydra_wrote_its_config_is_not_taken_for_another_app(tmp_path, written):
    """SIGKILL while Hydra wrote .hydra/config.yaml left it empty (or cut short): the same command was
    refused forever, the directory said to be another Hydra app's."""
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text(written)
    (run / "__main__.log").write_text("")
    done = run_pilot(run, *TRAIN)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((run / "run.json").read_text())["status"] == "ok"


@pytest.mark.parametrize("value, expected", [("", "hydra.run.dir='' is empty"), ("{tmp}/a_file/run", "is a file")])
def test_an_empty_run_dir_or_a_file_in_the_way_is_refused_naming_the_key(tmp_path, value, expected):
    (tmp_path / "a_file").write_text("x")
    done = run_pilot(value.format(tmp=tmp_path), *TRAIN)
    assert done.returncode == 2 and expected in done.stderr and "hydra.run.dir" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "root, sweep",
    [("campaign.run_root", ()), ("campaign.sweep_root", ("-m", "optim.lr=0.1,0.2"))],
    ids=["run", "sweep"],
)
def test_a_file_in_the_way_of_a_campaign_root_names_the_root_not_hydras_key(tmp_path, root, sweep):
    """hydra.run.dir (hydra.sweep.dir) left out is made from the campaign's root: the key to fix is the root."""
    (tmp_path / "a_file").write_text("x")
    line = [*sweep, *TRAIN, f"{root}={tmp_path / 'a_file'}"]
    done = subprocess.run([sys.executable, "-m", "pilot", *line], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"{root}={tmp_path / 'a_file'} (so hydra." in done.stderr and f"leave {root} out" in done.stderr
    assert (tmp_path / "a_file").read_text() == "x"


def test_a_finished_estimate_or_pilot_started_again_says_so_with_the_exit_code_it_ended_with(tmp_path, make_cfg):
    """The same mode=estimate (or pilot) again in its directory exited 2 ("never overwrites"): a script
    gated on it failed although it had finished. It says it is finished, touches nothing and exits as it
    ended (a pilot whose check failed: 1); another setting is still refused (exit 2)."""
    from pilot.errors import RunFinished
    from pilot.finished_runs import refuse_reused_for

    run = tmp_path / "run"
    first = run_pilot(run, "mode=estimate", "run.threads=1")
    assert first.returncode == 0, first.stderr[-2000:]
    before = _files(run, skip=LIVE)
    again = run_pilot(run, "mode=estimate", "run.threads=2")  # run.* changes no estimate
    assert again.returncode == 0 and "holds this estimate, finished" in again.stderr, again.stderr[-2000:]
    assert _files(run, skip=LIVE) == before
    for setting in ("rental.margin=0.3", "+run.foo=1"):  # another choice sheet; a key nothing reads
        other = run_pilot(run, "mode=estimate", setting)
        assert other.returncode == 2, other.stderr[-2000:]
    assert _files(run, skip=LIVE) == before

    pilot = tmp_path / "pilot"
    (pilot / ".hydra").mkdir(parents=True)
    cfg = make_cfg()
    OmegaConf.save(cfg, pilot / ".hydra" / "config.yaml")
    from pilot.run_record import config_hash

    record = {"run_id": "p", "mode": "pilot", "status": "failed", "stop_cause": "tiny_subset: not learnt"}
    record["config_hash"] = config_hash(cfg)
    (pilot / "run.json").write_text(json.dumps({**record, "verdicts": {"inspect": "pass", "tiny_subset": "fail"}}))
    with pytest.raises(RunFinished, match="verdict fail") as finished:
        refuse_reused_for("pilot", pilot, cfg)
    assert finished.value.exit_code == 1
    edited = (pilot / ".hydra" / "config.yaml").read_text().replace("lr: 0.001", "lr: 0.5")
    (pilot / ".hydra" / "config.yaml").write_text(edited)  # no longer what its record says it ran
    with pytest.raises(Exception, match="never overwrites"):
        refuse_reused_for("pilot", pilot, make_cfg("optim.lr=0.5"))
    (pilot / "run.json").write_text(json.dumps({**record, "status": "interrupted", "stop_cause": "SIGTERM"}))
    with pytest.raises(Exception, match="never overwrites") as refused:
        refuse_reused_for("pilot", pilot, cfg)
    assert refused.value.exit_code == 2


def test_a_finished_run_started_again_is_left_untouched_hydra_files_included(tmp_path):
    run = tmp_path / "run"
    first = run_pilot(run, *TRAIN)
    assert first.returncode == 0, first.stderr[-2000:]
    before = _files(run)
    again = run_pilot(run, *TRAIN, "optim.lr=1e-3")  # another config: .hydra/ would have said it
    assert again.returncode == 0 and "holds a finished run" in again.stderr, again.stderr[-2000:]
    assert _files(run) == before
    other = run_pilot(run, *TRAIN, "optim.lr=0.05")  # a variant that never ran here: not a success (exit 0 before)
    assert other.returncode == 2 and "of another config" in other.stderr, other.stderr[-2000:]
    assert "optim.lr: the run's 0.001 != now 0.05" in other.stderr and "Traceback" not in other.stderr
    assert "Warning" not in other.stderr  # refused by the directory check, before Hydra writes a byte
    assert _files(run) == before
    estimate = run_pilot(run, "mode=estimate")
    assert estimate.returncode == 2 and "mode=estimate never overwrites" in estimate.stderr, estimate.stderr[-2000:]
    assert _files(run, skip=LIVE) == {k: v for k, v in before.items() if k.split("/")[-1] not in LIVE}
    assert json.loads((run / "run.json").read_text())["mode"] == "train"


def test_a_line_whose_config_does_not_resolve_leaves_a_finished_run_s_hydra_files_as_they_were(tmp_path):
    """The directory check resolved the line's config to compare it with the run's: an interpolation that does
    not resolve (model=mlp_classifier with the default data, optim.lr=${oops}) raised there, Hydra printed it as
    a warning and rewrote the finished run's .hydra/ with the refused config, left so after the refusal."""
    run = tmp_path / "run"
    assert run_pilot(run, *TRAIN).returncode == 0
    before, times = _files(run, skip=LIVE), _times(run)
    for line in ("model=mlp_classifier", "optim.lr=${oops}"):
        refused = run_pilot(run, *TRAIN, line)
        assert refused.returncode == 2 and "cannot be resolved" in refused.stderr, refused.stderr[-2000:]
        assert "Warning" not in refused.stderr and "Traceback" not in refused.stderr
        assert _files(run, skip=LIVE) == before and _times(run) == times


def test_a_refused_line_leaves_no_directory_behind(tmp_path):
    done = run_pilot(tmp_path / "new" / "run", *TRAIN, "budget.value=-5")
    assert done.returncode == 2 and "budget.value" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "new" / "run").exists()


def test_a_run_without_checkpoint_restarts_only_under_its_own_config(tmp_path):
    run = tmp_path / "run"
    failed = run_pilot(run, *TRAIN, "checkpoint.every=0", fault="exception@2")  # fails before any checkpoint
    assert failed.returncode != 0 and json.loads((run / "run.json").read_text())["status"] == "failed"
    before, times = _files(run), _times(run)
    other = run_pilot(run, *TRAIN, "checkpoint.every=0", "optim.lr=1e-3")
    assert other.returncode == 2 and "started under another config" in other.stderr, other.stderr[-2000:]
    assert "optim.lr" in other.stderr and "Traceback" not in other.stderr
    assert "restarts from update 0" not in other.stderr + (run / "__main__.log").read_text()  # it did not
    assert _files(run, skip=LIVE) == {k: v for k, v in before.items() if k.split("/")[-1] not in LIVE}  # put back
    assert _times(run) == times  # .hydra/'s times too: the refused line did not touch the run
    for line in (["checkpoint.resume=false"], ["mode=pilot"]):  # a new run over it: refused, nothing written
        again = run_pilot(run, *TRAIN, "checkpoint.every=0", *line)
        assert again.returncode == 2 and "already holds run" in again.stderr, again.stderr[-2000:]
        assert _files(run, skip=LIVE) == {k: v for k, v in before.items() if k.split("/")[-1] not in LIVE}
    same = run_pilot(run, *TRAIN, "checkpoint.every=0")
    assert same.returncode == 0 and "restarts from update 0" in same.stdout, same.stderr[-2000:]
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "ok" and "injected failure" in record["resumes"][-1]["previous_error"]


def test_hydra_files_in_another_output_subdir_are_put_back_too(tmp_path):
    """hydra.output_subdir=meta: Hydra writes config.yaml there, and a refused line's Hydra rewrote it
    (it said lr 1e-3, a config the run never used); a refused new directory is removed with it."""
    run, meta = tmp_path / "run", "hydra.output_subdir=meta"
    failed = run_pilot(run, *TRAIN, "checkpoint.every=0", meta, fault="exception@2")
    assert failed.returncode != 0 and (run / "meta" / "config.yaml").is_file(), failed.stderr[-2000:]
    before, times = _files(run, skip=LIVE), _times(run)
    other = run_pilot(run, *TRAIN, "checkpoint.every=0", meta, "optim.lr=1e-3")
    assert other.returncode == 2 and "started under another config" in other.stderr, other.stderr[-2000:]
    assert _files(run, skip=LIVE) == before and _times(run) == times
    moved = run_pilot(run, *TRAIN, "checkpoint.every=0", "optim.lr=1e-3")  # Hydra writes .hydra/ this time
    assert moved.returncode == 2 and "started under another config" in moved.stderr, moved.stderr[-2000:]
    assert _files(run, skip=LIVE) == before and not (run / ".hydra").exists()
    refused = run_pilot(tmp_path / "new", *TRAIN, meta, "budget.value=-5")
    assert refused.returncode == 2 and "budget.value" in refused.stderr, refused.stderr[-2000:]
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("subdir", ["../done/.hydra", "/elsewhere/.hydra", "", "."])
def test_hydra_files_outside_the_run_directory_are_refused(subdir):
    """hydra.output_subdir=../train1/.hydra overwrote a finished run's overrides.yaml with a config it never
    used (exit 0, nothing said). A relative folder inside the run, or null, is its own."""
    from pilot.config.hydra_keys import refuse_escaping_output_subdir
    from pilot.errors import ConfigRefused

    with pytest.raises(ConfigRefused, match="hydra.output_subdir=.*inside the run's own directory"):
        refuse_escaping_output_subdir(OmegaConf.create({"hydra": {"output_subdir": subdir}}))
    for own in (".hydra", "meta/files", None):
        refuse_escaping_output_subdir(OmegaConf.create({"hydra": {"output_subdir": own}}))


def test_a_sweep_whose_hydra_files_would_land_elsewhere_makes_nothing(tmp_path):
    done = tmp_path / "done"
    swept = subprocess.run(
        [sys.executable, "-m", "pilot", "-m", *TRAIN, f"hydra.sweep.dir={tmp_path / 'sweep'}",
         "hydra.output_subdir=../../done/.hydra"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    assert swept.returncode == 2 and "hydra.output_subdir" in swept.stderr, swept.stderr[-2000:]
    assert "Traceback" not in swept.stderr and not done.exists() and not (tmp_path / "sweep").exists()


def test_after_a_refusal_a_directory_another_process_runs_in_is_never_touched(tmp_path):
    run = tmp_path / "new"
    check_run_directory(OmegaConf.create({"hydra": {"run": {"dir": str(run)}}, "mode": "train"}))  # made here
    (run / ".hydra").mkdir()
    winner = RunDirectoryLock(run).acquire()  # another process won the lock and runs there
    try:
        after_refusal(run)
        assert (run / ".hydra").is_dir()
    finally:
        winner.release()
    mine = tmp_path / "mine"
    check_run_directory(OmegaConf.create({"hydra": {"run": {"dir": str(mine)}}, "mode": "train"}))
    (mine / ".hydra").mkdir()
    after_refusal(mine)  # made by this process for a refused line, nobody in it: removed
    assert not mine.exists()


def test_a_line_refused_because_another_process_runs_there_puts_its_hydra_files_back(tmp_path):
    """Process A trains in the directory (it holds the lock); B, started there with another lr, is refused,
    but B's Hydra had rewritten .hydra/ before the lock was tried: config.yaml said lr 1e-4, a config the
    run never used. Now B puts back what A's Hydra wrote."""
    run = tmp_path / "run"
    failed = run_pilot(run, *TRAIN, "checkpoint.every=0", fault="exception@2")  # a run that may be resumed
    assert failed.returncode != 0, failed.stderr[-2000:]
    before = _files(run / ".hydra")
    with RunDirectoryLock(run):  # "A" resumed and runs there now
        refused = run_pilot(run, *TRAIN, "checkpoint.every=0", "optim.lr=1e-4")
    assert refused.returncode == 2 and "another pilot process" in refused.stderr, refused.stderr[-2000:]
    assert _files(run / ".hydra") == before


@pytest.mark.parametrize(
    "line, expected",
    [
        (["hydra.run.dir=${oops}"], "pilot: hydra.run.dir='${oops}' cannot be resolved"),
        (["-m", "hydra.sweep.dir=", "mode=train"], "pilot: hydra.sweep.dir='' is empty"),  # jobs wrote into the cwd
        (["-m", "hydra.sweep.dir=${nope}", "mode=train"], "pilot: hydra.sweep.dir='${nope}' cannot be resolved"),
        (["hydra.job.name=${x}", "hydra.run.dir=made/run"], "Interpolation key 'x' not found"),  # in Hydra's own code
        # an empty campaign root: runs, sweeps and the journal were written under the filesystem's root
        (["mode=estimate", "campaign.run_root="], "pilot: campaign.run_root='' is empty"),
        (["-m", "mode=estimate", "campaign.sweep_root=", "seed=0"], "pilot: campaign.sweep_root='' is empty"),
        # beside a run directory of the user's: the journal went to /journal.md, the run index into the cwd
        (["mode=estimate", "campaign.sweep_root=", "hydra.run.dir=made/run"], "pilot: campaign.sweep_root='' is empty"),
        (["mode=estimate", "campaign.run_root=", "hydra.run.dir=made/run"], "pilot: campaign.run_root='' is empty"),
    ],
)
def test_a_directory_hydra_cannot_name_is_refused_and_nothing_is_made(tmp_path, line, expected):
    top = set(os.listdir("/"))
    done = subprocess.run(
        [sys.executable, "-m", "pilot", *line], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert set(os.listdir("/")) <= top, sorted(set(os.listdir("/")) - top)
    assert done.returncode == 2 and expected in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr[-3000:]
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize(
    "line", [["optim.lr=-1"], ["-m", "mode=estimate", "optim.lr=1e-3,-1"], ["-m", "seed=range(0)"]]
)
def test_a_refused_line_leaves_no_empty_folder_of_the_day(tmp_path, line):
    """A refused line on a day's first run left outputs/<date>/ (or sweeps/<date>/) empty behind: made
    with its run directory, it now goes with it."""
    done = subprocess.run(
        [sys.executable, "-m", "pilot", *line], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == []


def test_a_run_whose_config_yaml_was_left_empty_restarts_under_the_same_command(tmp_path):
    """A full disk while an earlier version wrote config.yaml in place left it empty, and every later
    start was refused ('<absent>' != now, for every key): the run could never be finished. An empty
    config.yaml is no record of a config; config.yaml is now written through a temporary file."""
    run = tmp_path / "run"
    failed = run_pilot(run, *TRAIN, "checkpoint.every=0", fault="exception@2")  # fails before any checkpoint
    assert failed.returncode != 0 and json.loads((run / "run.json").read_text())["status"] == "failed"
    (run / "config.yaml").write_text("")
    again = run_pilot(run, *TRAIN, "checkpoint.every=0")
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads((run / "run.json").read_text())["status"] == "ok"
    assert OmegaConf.load(run / "config.yaml").optim.lr == 0.001  # written again, whole


def test_a_sweep_into_a_directory_of_other_files_or_a_run_is_refused_and_leaves_them(tmp_path):
    """An outside examination: -m hydra.sweep.dir=<a directory with the user's recap.md and
    multirun.yaml> replaced both; into a finished run's directory it wrote jobs and a recap there."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "recap.md").write_text("my notes\n")
    (theirs / "multirun.yaml").write_text("keep: me\n")
    before = _files(theirs)
    done = run_pilot(tmp_path / "unused", "-m", *TRAIN, f"hydra.sweep.dir={theirs}")
    assert done.returncode == 2 and "hydra.sweep.dir" in done.stderr and "recap.md" in done.stderr, done.stderr
    assert _files(theirs) == before
    finished = tmp_path / "finished"
    assert run_pilot(finished, *TRAIN).returncode == 0
    before = _files(finished, skip=LIVE)
    done = run_pilot(tmp_path / "unused", "-m", *TRAIN, f"hydra.sweep.dir={finished}")
    assert done.returncode == 2 and "holds a run (run.json)" in done.stderr, done.stderr
    assert _files(finished, skip=LIVE) == before


def test_a_recap_over_no_run_or_beside_the_users_own_recap_writes_nothing(tmp_path):
    """python -m pilot.recap <a directory with no run> said '0 run(s)' and replaced the user's
    recap.md and recap.csv there with an empty recap."""
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-m", "pilot.recap", str(empty)], capture_output=True, text=True)
    assert done.returncode == 2 and "no pilot run under" in done.stderr and "Traceback" not in done.stderr
    assert list(empty.iterdir()) == []
    sweep = tmp_path / "sweep"
    assert run_pilot(tmp_path / "unused", "-m", *TRAIN, "seed=0,1", f"hydra.sweep.dir={sweep}").returncode == 0
    (sweep / "recap.md").write_text("my precious notes\n")
    before = _files(sweep)
    done = subprocess.run([sys.executable, "-m", "pilot.recap", str(sweep)], capture_output=True, text=True)
    assert done.returncode == 2 and "recap.md" in done.stderr and "--out" in done.stderr, done.stderr
    assert _files(sweep) == before


@pytest.mark.parametrize("mode", ["estimate", "pilot"])
def test_a_directory_another_process_holds_is_refused_in_every_mode(tmp_path, mode):
    """Two lines racing for one new directory: the one that does not hold the lock is refused. mode=estimate
    took no lock: both could write run.json."""
    run = tmp_path / "run"
    with RunDirectoryLock(run):  # another pilot process, between its directory check and its run.json
        done = run_pilot(run, f"mode={mode}", "run.threads=1")
    assert done.returncode == 2 and "in use by another pilot process" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert not (run / "run.json").exists()


def test_the_run_holding_its_directory_puts_back_its_own_hydra_files_a_refused_line_rewrote(tmp_path):
    """Two lines started at once on one new directory: the refused one's Hydra rewrote .hydra/ after the
    winner's, which then named a learning rate the run never used (4 of 11 races)."""
    from pilot.run_directory import RunDirectoryCheck

    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("- optim.lr=0.001\n")  # this line's Hydra, just now
    config = OmegaConf.create({"hydra": {"runtime": {"output_dir": str(run)}, "output_subdir": ".hydra"}})
    RunDirectoryCheck().on_job_start(config)
    (run / ".hydra" / "overrides.yaml").write_text("- optim.lr=0.002\n")  # the other line's, before its refusal
    lock = RunDirectoryLock(run).acquire()
    try:
        assert (run / ".hydra" / "overrides.yaml").read_text() == "- optim.lr=0.001\n"
    finally:
        lock.release()


def test_a_finished_run_whose_reload_check_was_killed_says_how_to_redo_it(tmp_path, make_cfg):
    """Relaunched, a run whose closing's reload check never answered (killed) said only "finished run": the
    unverified export went unmentioned."""
    from pilot.errors import RunFinished
    from pilot.finished_runs import refuse_finished_run

    run = tmp_path / "run"
    run.mkdir()
    record = {"status": "ok", "run_id": "r", "mode": "train", "updates_done": 4, "stop_cause": "budget"}
    (run / "run.json").write_text(json.dumps({**record, "closing": {"verdict": "incomplete"}}))
    with pytest.raises(RunFinished, match=r"reload check is incomplete .* python -m pilot\.closing .*export runs it"):
        refuse_finished_run(make_cfg("mode=train"), run)
    (run / "run.json").write_text(json.dumps({**record, "closing": {"verdict": "pass"}}))
    with pytest.raises(RunFinished) as finished:
        refuse_finished_run(make_cfg("mode=train"), run)
    assert "pilot.closing" not in str(finished.value)


def test_an_estimate_whose_journal_cannot_be_appended_to_says_so_and_keeps_its_sheet(tmp_path):
    """campaign.journal empty (PILOT_JOURNAL= in a script): mode=estimate ended in a traceback after its
    sheet was written, run.json 'failed'. The journal is a notebook: a warning naming the key and the fix,
    the run ok. (A journal no file can be written at is refused before the run: test_campaign_journal.)"""
    value, run = "", tmp_path / "run"
    done = run_pilot(run, "mode=estimate", "run.threads=1", f"campaign.journal={value}")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"campaign.journal={value!r} cannot be appended to" in done.stdout + done.stderr
    assert json.loads((run / "run.json").read_text())["status"] == "ok" and (run / "choice_sheet.md").exists()


@pytest.mark.parametrize("key", ["hydra.run.dir", "campaign.run_root"])
def test_a_directory_name_longer_than_a_file_system_allows_is_refused_naming_the_key(tmp_path, key):
    """A 300-byte part: the OS's ENAMETOOLONG came out of the directory check as two chained tracebacks."""
    value = str(tmp_path / ("b" * 300))
    done = run_pilot(tmp_path / "run" if key == "campaign.run_root" else value, "mode=estimate", "run.threads=1")
    if key == "campaign.run_root":
        done = subprocess.run(
            [sys.executable, "-m", "pilot", "mode=estimate", "run.threads=1", f"campaign.run_root={value}"],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert (
        f"pilot: {key}=" in done.stderr and "is 300 bytes, more than a file or directory name may hold" in done.stderr
    )


def test_changing_into_the_run_directory_is_refused(tmp_path):
    """hydra.job.chdir=true: the run index was neither read nor appended to (no parent, nothing said)."""
    done = run_pilot(tmp_path / "run", *TRAIN, "hydra.job.chdir=true")
    assert done.returncode == 2 and "pilot: hydra.job.chdir=true" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "run").exists()


def test_the_run_keeps_its_own_configs_hydra_files_even_when_they_were_mixed_before_it_read_them(tmp_path):
    """Two lines at once on one directory (an outside examination, 3 of 22 races): the refused line's Hydra
    wrote between this line's Hydra and its on_job_start, so the files this run kept as its own were already
    the other line's (.hydra/config.yaml at the refused lr) or two writers' bytes interleaved (hydra.yaml not
    YAML). What the run keeps is made from its own config, as Hydra writes it, not read back."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import _save_config
    from omegaconf import open_dict, read_write

    from pilot.config import register
    from pilot.run_directory import RunDirectoryCheck

    run = tmp_path / "run"
    register()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        config = compose(config_name="config", overrides=["optim.lr=0.001"], return_hydra_config=True)
    with read_write(config), open_dict(config):
        config.hydra.runtime.output_dir = str(run)
        config.hydra.overrides.task = ["optim.lr=0.001"]
    HydraConfig.instance().set_config(config)
    task = OmegaConf.create(OmegaConf.to_container(config))
    del task["hydra"]
    hydra_dir = run / ".hydra"
    for cfg, name in ((task, "config.yaml"), (HydraConfig.instance().cfg, "hydra.yaml")):
        _save_config(cfg, name, hydra_dir)  # as Hydra's run_job writes them
    _save_config(config.hydra.overrides.task, "overrides.yaml", hydra_dir)
    written = {p.name: p.read_bytes() for p in hydra_dir.iterdir()}
    (hydra_dir / "config.yaml").write_text(written["config.yaml"].decode().replace("lr: 0.001", "lr: 0.05"))
    (hydra_dir / "hydra.yaml").write_bytes(written["hydra.yaml"][:300] + b"run:\n  di: [")  # two writers mixed
    RunDirectoryCheck().on_job_start(config)  # the files are already the other line's
    lock = RunDirectoryLock(run).acquire()
    try:
        assert {p.name: p.read_bytes() for p in hydra_dir.iterdir()} == written
    finally:
        lock.release()
        GlobalHydra.instance().clear()


def test_a_line_refused_over_a_killed_run_leaves_its_lock_file_as_it_was_and_says_it_was_killed(tmp_path):
    """A run killed (SIGKILL) after its first checkpoint; a line with another optim.lr is refused after this
    process announced itself in the lock file, which stayed rewritten; a line with checkpoint.resume=false
    called the killed run 'status running'."""
    run_dir = tmp_path / "run"
    common = ["mode=train", "budget.value=6", "checkpoint.every=2", "run.threads=1"]
    assert run_pilot(run_dir, *common, fault="update@3").returncode == -9
    leftover = run_dir / "checkpoints" / f"ckpt-00000004.pt{TMP_MARK}123"  # of a save killed midway
    leftover.write_bytes(b"half a checkpoint")
    lock = run_dir / RunDirectoryLock.NAME
    before = {p.relative_to(run_dir): (p.read_bytes(), p.stat().st_mtime_ns) for p in run_dir.rglob("*") if p.is_file()}
    refused = run_pilot(run_dir, *common, "optim.lr=0.02")
    assert refused.returncode == 2 and "optim.lr" in refused.stderr, refused.stderr[-2000:]
    after = {p.relative_to(run_dir): (p.read_bytes(), p.stat().st_mtime_ns) for p in run_dir.rglob("*") if p.is_file()}
    assert after == before and lock.read_bytes() == before[lock.relative_to(run_dir)][0]
    again = run_pilot(run_dir, *common, "checkpoint.resume=false")
    assert again.returncode == 2 and "status running, but no process holds it" in again.stderr, again.stderr[-2000:]
    resumed = run_pilot(run_dir, *common)  # not refused: the run's own leftover goes, and is recorded
    assert resumed.returncode == 0 and not leftover.exists(), resumed.stderr[-2000:]
    assert json.loads((run_dir / "run.json").read_text())["resumes"][-1]["cleaned_temporary_files"] == [leftover.name]


@pytest.mark.parametrize("mode", ["pilot", "estimate"])
def test_a_pilot_or_an_estimate_refused_under_its_lock_leaves_the_lock_file_as_it_was(make_cfg, tmp_path, mode):
    """A run.json that appears after the command line's own check (another line just wrote it) is refused
    under the lock; the pilot's and the estimate's line wrote themselves into the lock file first, and left
    it so (the training path put it back), and a killed run is said to be killed."""
    import socket

    from pilot.errors import ResumeRefused
    from pilot.estimate_run import run_estimate
    from pilot.pilot_run import run_pilot as pilot_in_process

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"run_id": "killed", "mode": "train", "status": "running"}))
    lock = run_dir / RunDirectoryLock.NAME
    lock.write_text(f"pid 999999999 on host {socket.gethostname()}")  # its holder gone: killed
    os.utime(lock, ns=(10**18, 10**18))
    before = (lock.read_bytes(), lock.stat().st_mtime_ns)
    start = pilot_in_process if mode == "pilot" else run_estimate
    with pytest.raises(ResumeRefused, match="status running, but no process holds it"):
        start(make_cfg(f"mode={mode}"), run_dir)
    assert (lock.read_bytes(), lock.stat().st_mtime_ns) == before


def test_a_bad_setting_beside_a_finished_run_is_refused_as_in_a_new_directory(tmp_path):
    """run.threads=-1 (or run.device=cuda, a missing data.path) with hydra.run.dir of a finished run: "holds a
    finished run ... Nothing was done", exit 0, or "another config" (outside examination): the line's own
    settings are checked first, exit 2 naming the key; the run's files stay as they were."""
    run = tmp_path / "run"
    assert run_pilot(run, *TRAIN).returncode == 0
    before = _files(run, skip=LIVE)
    for setting in ("run.threads=-1", f"data.path={tmp_path / 'missing.jsonl'}"):
        refused = run_pilot(run, *TRAIN, setting)
        assert refused.returncode == 2 and setting.split("=")[0] in refused.stderr, refused.stderr[-2000:]
        assert "finished run" not in refused.stderr and "Traceback" not in refused.stderr
        assert _files(run, skip=LIVE) == before


@pytest.mark.parametrize(
    "line, named",
    [
        (lambda run: [f"hydra.run.dir={run / 'sub'}"], "hydra.run.dir="),
        (lambda run: ["-m", "seed=0,1", f"campaign.sweep_root={run}"], "campaign.sweep_root="),
    ],
    ids=["run_dir", "sweep_root"],
)
def test_a_run_or_sweep_inside_a_run_s_directory_is_refused_and_makes_nothing(tmp_path, line, named):
    """hydra.run.dir=<run>/sub, campaign.run_root or campaign.sweep_root set to a run's directory: new runs were
    written among a finished run's files (outside examination)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "r1", "status": "ok", "mode": "train"}))
    done = subprocess.run(
        [sys.executable, "-m", "pilot", "mode=estimate", "run.threads=1", *line(run)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert named in done.stderr and f"lies inside the directory of the run at {run}" in done.stderr
    assert sorted(p.name for p in run.iterdir()) == ["run.json"]
