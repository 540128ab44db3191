"""The sweeper (hydra_plugins/pilot_sweeper): each job's config composed once, not twice, the
launcher getting what it would have composed itself; a job that cannot be composed still stops
the sweep before any job runs."""

import pickle
from contextlib import nullcontext
from pathlib import Path

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_config_search_path
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import MissingConfigException
from omegaconf import OmegaConf

import hydra_plugins.pilot_sweeper as sweeper_module
from hydra_plugins.pilot_sweeper import ComposedOnce

CONFIG = """
defaults:
  - group: a
  - override hydra/sweeper: compose_once
  - _self_
x: 0
y: 1
hydra:
  job:
    chdir: false
  sweeper:
    check_job: test_sweeper.refuse_x_two
"""


SEEN = []


def record_job_num(composed):
    """A check reading ${hydra:job.num} (Hydra's config must be the job's, its number set)."""
    SEEN.append(composed.z)


def refuse_x_two(composed):
    """The job check the config above names: job configs with x=2 are refused."""
    return "x=2: refused by the check" if composed.x == 2 else None


class CountingLoader:
    def __init__(self):
        self.calls = []

    def load_sweep_config(self, master_config, sweep_overrides):
        self.calls.append(list(sweep_overrides))
        return OmegaConf.create({"overrides": list(sweep_overrides), "call": len(self.calls)})

    def list_groups(self, parent):
        return ["from the wrapped loader"]


def test_a_composed_config_is_handed_out_once_then_composed_again():
    loader = CountingLoader()
    composed_once, master = ComposedOnce(loader), OmegaConf.create({})
    composed_once.compose(master, ["x=1"])
    assert composed_once.load_sweep_config(master, ["x=1"]).call == 1  # the one the check composed
    assert composed_once.load_sweep_config(master, ["x=1"]).call == 2  # handed out once: composed again
    assert composed_once.load_sweep_config(master, ["x=2"]).call == 3  # never checked: composed
    composed_once.compose(master, ["x=3"])
    assert composed_once.load_sweep_config(OmegaConf.create({}), ["x=3"]).call == 5  # another master config
    assert composed_once.list_groups("") == ["from the wrapped loader"]


def test_it_pickles_as_the_loader_alone():  # submitit pickles the launcher, config loader included
    composed_once, master = ComposedOnce(CountingLoader()), OmegaConf.create({})
    composed_once.compose(master, ["x=1"])
    again = pickle.loads(pickle.dumps(composed_once))
    assert again.list_groups("") == ["from the wrapped loader"] and again._ready == {}


def test_at_most_keep_configs_are_kept(monkeypatch):
    monkeypatch.setattr(sweeper_module, "KEEP", 2)
    loader, master = CountingLoader(), OmegaConf.create({})
    composed_once = ComposedOnce(loader)
    for x in range(3):
        composed_once.compose(master, [f"x={x}"])
    assert [composed_once.load_sweep_config(master, [f"x={x}"]).call for x in range(3)] == [1, 2, 4]


def _multirun(tmp_path, monkeypatch, *overrides, ran=None, config=CONFIG, groups="a"):
    """Run a Hydra multirun of a task recording its configs; the loader's composes counted."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text(config)
    (tmp_path / "conf" / "group").mkdir()
    for option in groups:
        (tmp_path / "conf" / "group" / f"{option}.yaml").write_text(f"name: {option}\n")
    composed, ran = [], ([] if ran is None else ran)
    original = ConfigLoaderImpl.load_sweep_config

    def counting(self, master_config, sweep_overrides):
        composed.append(list(sweep_overrides))
        return original(self, master_config, sweep_overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counting)
    GlobalHydra.instance().clear()
    hydra = Hydra.create_main_hydra2("sweeper_test", create_config_search_path(str(tmp_path / "conf")))
    try:
        hydra.multirun(
            config_name="config",
            task_function=lambda cfg: ran.append(OmegaConf.to_container(cfg, resolve=True)),
            overrides=[f"hydra.sweep.dir={tmp_path / 'sweep'}", *overrides],
        )
    finally:
        GlobalHydra.instance().clear()
    return composed, ran


def test_each_job_is_composed_once_and_runs_its_own_config(tmp_path, monkeypatch):
    composed, ran = _multirun(tmp_path, monkeypatch, "x=1,3,4", "y=5")
    assert [(job["x"], job["y"]) for job in ran] == [(1, 5), (3, 5), (4, 5)]
    assert len(composed) == 3  # Hydra's basic sweeper: 6 (its check, then its launcher)
    assert (tmp_path / "sweep" / "multirun.yaml").exists()


def test_each_config_file_is_read_once_per_batch_and_every_job_gets_what_a_fresh_read_gives(tmp_path, monkeypatch):
    """Hydra read and parsed each YAML file at every job's compose; now once per batch, each compose given its own
    copy: the jobs' configs are those composed without it (a group swept too)."""
    from hydra._internal.config_repository import ConfigRepository

    reads = []
    original = ConfigRepository.load_config

    def counted(self, config_path):
        reads.append(config_path)
        return original(self, config_path)

    monkeypatch.setattr(ConfigRepository, "load_config", counted)
    (tmp_path / "fresh").mkdir()
    _, fresh = _multirun(tmp_path / "fresh", monkeypatch, "x=1,3,4", "group=a,b", config=CONFIG + "\n", groups="ab")
    fresh_reads = list(reads)
    reads.clear()
    monkeypatch.setattr(sweeper_module, "_each_config_file_read_once", nullcontext)  # as Hydra composes
    (tmp_path / "plain").mkdir()
    _, plain = _multirun(tmp_path / "plain", monkeypatch, "x=1,3,4", "group=a,b", config=CONFIG + "\n", groups="ab")
    for job in fresh + plain:
        job["hydra"] = {}  # paths of the two sweeps differ
    assert fresh == plain and [job["group"]["name"] for job in fresh] == ["a", "b"] * 3
    assert len(fresh_reads) < len(reads) / 2, (len(fresh_reads), len(reads))
    assert ConfigRepository.load_config is counted  # put back after the batch


def test_a_job_that_cannot_be_composed_stops_the_sweep_before_any_job_runs(tmp_path, monkeypatch):
    ran = []
    with pytest.raises(MissingConfigException, match="group/missing"):
        _multirun(tmp_path, monkeypatch, "group=a,missing", ran=ran)  # the second job's group option
    assert ran == []


def test_a_job_the_check_refuses_stops_the_sweep_before_any_job_runs(tmp_path, monkeypatch, capsys):
    ran = []
    with pytest.raises(SystemExit) as stop:
        _multirun(tmp_path, monkeypatch, "x=1,2,3", ran=ran)
    assert stop.value.code == 2 and ran == []
    error = capsys.readouterr().err
    assert "1 of the sweep's jobs 0-2 would be refused; none was launched" in error
    assert "job 1 (x=2): x=2: refused by the check" in error


def test_another_sweeper_composes_with_pilots_config(tmp_path, monkeypatch):
    """pilot's config names no sweeper key: hydra/sweeper=basic (or optuna) still composes."""
    config = CONFIG.replace("override hydra/sweeper: compose_once", "override hydra/sweeper: basic")
    config = config.replace("  sweeper:\n    check_job: test_sweeper.refuse_x_two\n", "")
    composed, ran = _multirun(tmp_path, monkeypatch, "x=1,3", config=config)
    assert len(ran) == 2 and len(composed) == 4  # Hydra's own: composed twice


def test_a_sweep_over_no_values_is_refused(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as stop:
        _multirun(tmp_path, monkeypatch, "x=range(0)")
    assert stop.value.code == 2 and "x=range(0): a sweep over no values launches no job" in capsys.readouterr().err


def test_the_check_sees_each_job_as_it_will_run_hydra_interpolations_included(tmp_path, monkeypatch):
    config = CONFIG.replace("y: 1\n", "y: 1\nz: ${hydra:job.num}\n").replace("refuse_x_two", "record_job_num")
    SEEN.clear()
    _, ran = _multirun(tmp_path, monkeypatch, "x=1,3", config=config)
    assert SEEN == [0, 1] and [job["z"] for job in ran] == [0, 1]


def test_a_control_written_wrong_stops_the_sweep_and_one_that_is_none_of_its_jobs_is_said(
    tmp_path, monkeypatch, capsys
):
    ran = []
    config = CONFIG.replace("y: 1\n", 'y: 1\ncampaign:\n  control: "seed=0"\n')
    with pytest.raises(SystemExit) as stop:
        _multirun(tmp_path, monkeypatch, "x=1,3", ran=ran, config=config)  # CONFIG's check_job passes both
    assert stop.value.code == 2 and ran == []
    assert "campaign.control=seed=0: seed does not define a variant" in capsys.readouterr().err
    (tmp_path / "again").mkdir()
    config = CONFIG.replace("y: 1\n", 'y: 1\ncampaign:\n  control: "x=9"\n')
    _, ran = _multirun(tmp_path / "again", monkeypatch, "x=1,3", ran=[], config=config)
    assert [job["x"] for job in ran] == [1, 3]  # a relaunch of some variants: its control is elsewhere
    assert "warning: campaign.control=x=9 and this sweep's 2 job(s): no variant has x=9; its values: 1, 3" in (
        capsys.readouterr().err
    )


def test_a_control_key_no_job_sets_is_named_with_the_nearest_one():
    from pilot.variant import control_problem

    variants = ["optim.lr=0.0001", "optim.lr=0.0002"]
    assert control_problem("optim.lrr=1e-4", variants).startswith("no variant sets optim.lrr (did you mean optim.lr?)")
    assert control_problem("optim.lr=9", variants) == "no variant has optim.lr=9; its values: 0.0001, 0.0002"
    assert control_problem("garbage", variants).startswith("garbage is not key=value")
    assert control_problem("optim.lr=1e-4", variants) is None and control_problem("", variants) is None
    assert control_problem("lr=1e-4", variants).startswith("no variant sets lr (did you mean optim.lr?)")
    assert control_problem(" optim.lr = 1e-4", variants) is None  # spaces around '='
    assert control_problem("seed=0", variants).startswith("seed does not define a variant")
    assert control_problem(",", variants).startswith("',' names no key=value")
    assert control_problem("=1e-4", variants).startswith("=1e-4 is not key=value")
    assert control_problem("batch.drop_last=true", ["batch.drop_last=True", "batch.drop_last=False"]) is None
    several = ["budget.value=2,optim.lr=1", "budget.value=2,optim.lr=2"]
    assert control_problem("budget.value=2", several).startswith("it matches every one of the 2 variants")
    assert control_problem("optim.lr=1", [*several, "budget.value=3,optim.lr=1"]) is None  # a grid's control


@pytest.mark.parametrize(
    "sweep, said",
    [("x=range(0,3,0)", "range() arg 3 must not be zero"), ("x=interval(1,2)", "INTERVAL_SWEEP")],
)
def test_a_sweep_that_cannot_be_expanded_is_refused_naming_it(tmp_path, monkeypatch, capsys, sweep, said):
    """An outside examination: Hydra's ValueError / HydraException came out as a traceback, exit 1."""
    with pytest.raises(SystemExit) as stop:
        _multirun(tmp_path, monkeypatch, sweep)
    error = capsys.readouterr().err
    assert stop.value.code == 2 and f"{sweep}: the sweep cannot be expanded into jobs" in error and said in error
    assert "interval() and tag() are for optimising sweepers" in error


def test_the_slurm_launcher_without_a_slurm_client_is_refused_before_any_directory(tmp_path):
    """An outside examination: submitit's 'Could not detect srun' traceback, exit 1, and a sweep
    directory left holding multirun.yaml. PATH here holds only Python's own directory (no srun)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    sweep = tmp_path / "sweep"
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pilot",
            "-m",
            "mode=train",
            "budget.value=2",
            "hydra/launcher=slurm",
            f"hydra.sweep.dir={sweep}",
        ],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "srun is not on PATH" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not sweep.exists()


def test_a_launcher_size_no_job_can_have_is_refused_naming_it():
    """An outside examination: hydra.launcher.timeout_min=-5 launched the jobs, and the sweep ended
    with 'left submitit no result'."""
    from omegaconf import OmegaConf

    from hydra_plugins.pilot_sweeper import _launcher_problems

    launcher = OmegaConf.create({"timeout_min": -5, "cpus_per_task": 0, "nodes": 1, "gpus_per_node": None})
    problems = _launcher_problems(launcher)
    assert len(problems) == 2
    assert problems[0].startswith("hydra.launcher.timeout_min=-5: the minutes a job may run")
    assert problems[1].startswith("hydra.launcher.cpus_per_task=0")
    assert _launcher_problems(OmegaConf.create({"timeout_min": 120, "cpus_per_task": 1})) == []
    assert _launcher_problems(None) == []  # the basic launcher: no sizes
    said = _launcher_problems(OmegaConf.create({"signal_delay_s": -1}))  # sbatch's own error, after the launch
    assert said and said[0].startswith("hydra.launcher.signal_delay_s=-1: the seconds before the time limit")


def test_a_jobs_directory_suffix_is_the_same_in_every_process_of_the_job_and_new_at_each_launch(monkeypatch):
    """hydra.sweep.subdir's suffix was random in every process resolving it: a SLURM job's second task and the
    job requeued after a preemption each made a directory of their own (the requeued job trained from update 1)."""
    from pilot.config import unique

    monkeypatch.setenv("PILOT_SWEEP_ID", "launch-a")
    first = unique(3)
    assert unique(3) == first != unique(4) and len(first) == 6
    monkeypatch.setenv("PILOT_SWEEP_ID", "launch-b")
    assert unique(3) != first  # a sweep directory reused by another launch: other directories
    monkeypatch.delenv("PILOT_SWEEP_ID")
    assert unique(3) != unique(3) and unique() != unique()  # no launch: random, as a run's own directory
    conf = (Path(__file__).resolve().parents[1] / "conf" / "config.yaml").read_text()
    assert "subdir: ${hydra.job.num}-${pilot_unique:${hydra.job.num}}" in conf


def test_a_value_given_twice_or_a_sweep_of_nothing_is_said():
    """-m optim.lr=1e-3,1e-3 ran two identical jobs, and -m with no comma one job, without a word (an outside
    examination)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    def said(*line: str, jobs: int) -> list[str]:
        return sweeper_module._sweep_warnings(OverridesParser.create().parse_overrides(list(line)), jobs)

    (twice,) = said("optim.lr=1e-3,1e-3,3e-3", jobs=3)
    assert twice.startswith("optim.lr=1e-3,1e-3,3e-3: 0.001 given more than once") and "0.003" not in twice
    assert "nothing swept" in said("mode=estimate", jobs=1)[0]
    assert said("optim.lr=1e-3,3e-3", jobs=2) == [] and said("seed=range(0,3)", jobs=3) == []
    # a range whose default step (1) gives one value ran one job, said nothing (outside examination)
    (one,) = said("optim.lr=range(1e-4,1e-3)", jobs=1)
    assert one.startswith("optim.lr=range(1e-4,1e-3): one value (0.0001)") and "give the step" in one


def test_a_glob_over_a_group_sweeps_its_options_not_pilots_schema_entries():
    """-m 'optim=glob(*)' swept optim=schema as a job (refused: optim.name='???'), from the schema entries pilot
    keeps beside the options in Hydra's ConfigStore (an outside examination)."""
    from hydra_plugins.pilot_sweeper import ComposedOnce

    class Loader:
        def get_group_options(self, group_name, *args, **kwargs):
            return ["adamw", "schema", "schema_lora", "sgd", "schemata"]

    assert ComposedOnce(Loader()).get_group_options("optim") == ["adamw", "sgd", "schemata"]


def test_a_large_sweep_says_its_size_and_where_its_checks_stand(monkeypatch, capsys):
    """-m seed=range(0,100000): nothing was printed for minutes while each job's config was checked."""
    from hydra_plugins.pilot_sweeper import MANY_JOBS, _CheckProgress, _sweep_warnings

    assert (
        not _sweep_warnings([], MANY_JOBS) and "1001 jobs: each job's config is checked" in _sweep_warnings([], 1001)[0]
    )
    monkeypatch.setattr(_CheckProgress, "EVERY_S", 0.0)
    progress = _CheckProgress(300, 0)
    progress.checked(71)
    progress.checked(300)  # the last: the launch's own lines follow
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith(
        "pilot: checking the sweep's jobs before any starts: 71 of 300 checked"
    )
