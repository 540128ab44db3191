"""A SLURM launcher's request against what sinfo says its partition has (pilot/validation/slurm_partition.py):
each request no node can meet is refused naming its key and fix; one that fits passes."""

import pytest
from omegaconf import OmegaConf

from pilot.validation.slurm_partition import gpus_of, minutes_of, partition_problems, read_groups

SINFO = """\
cpu*|up|4|32|257000|(null)|2-00:00:00
gpu|up|2|64|512000|gpu:a100:8(S:0-1)|12:00:00
gpu|up|1|64|512000|gpu:a100:4(S:0),gpu:v100:2|12:00:00
"""
GROUPS = read_groups(SINFO)


def launcher(**values):
    base = {"partition": None, "nodes": 1, "tasks_per_node": 1, "cpus_per_task": 1, "mem_gb": 4,
            "gpus_per_node": 0, "timeout_min": 60}  # fmt: skip
    return OmegaConf.create({**base, **values})


def test_sinfo_lines_are_read_with_their_default_gpus_and_limits():
    cpu, gpu8, gpu6 = GROUPS
    assert (cpu.partition, cpu.default, cpu.nodes, cpu.cpus, cpu.memory_mb, cpu.gpus) == ("cpu", True, 4, 32, 257000, 0)
    assert (gpu8.gpus, gpu6.gpus, gpu8.default) == (8, 6, False)
    assert (cpu.limit_min, gpu8.limit_min) == (2880, 720)


@pytest.mark.parametrize(
    ("limit", "minutes"),
    [("infinite", None), ("UNLIMITED", None), ("30", 30), ("30:00", 30), ("2:00:00", 120), ("1-00:00:00", 1440),
     ("1-02", 1560), ("1-02:30", 1590)],
)  # fmt: skip
def test_time_limits_in_minutes(limit, minutes):
    assert minutes_of(limit) == minutes


def test_gres_without_gpus_counts_none():
    assert gpus_of("(null)") == 0 and gpus_of("shard:4,gpu:2") == 2 and gpus_of("gpu:tesla:2(IDX:0-1)") == 2


def test_a_request_the_partition_meets_passes():
    assert partition_problems(launcher(), GROUPS) == []
    assert partition_problems(launcher(partition="gpu", gpus_per_node=8, nodes=2, tasks_per_node=8,
                                       cpus_per_task=8, mem_gb=480, timeout_min=720), GROUPS) == []  # fmt: skip


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"partition": "nosuch"}, "hydra.launcher.partition=nosuch: no such partition on this cluster (sinfo lists cpu, gpu)"),
        ({"cpus_per_task": 33}, "hydra.launcher.cpus_per_task=33 x tasks_per_node=1 asks 33 CPUs"),
        ({"tasks_per_node": 4, "cpus_per_task": 16}, "Fix: hydra.launcher.cpus_per_task=8"),
        ({"mem_gb": 300}, "hydra.launcher.mem_gb=300: the nodes of partition 'cpu' have at most 257000 MB"),
        ({"gpus_per_node": 1}, "Fix: hydra.launcher.partition=gpu, or hydra.launcher.gpus_per_node=0"),
        ({"partition": "gpu", "gpus_per_node": 16}, "have at most 8 GPUs"),
        ({"timeout_min": 3000}, "Fix: hydra.launcher.timeout_min=2880"),
        ({"nodes": 5}, "hydra.launcher.nodes=5: partition 'cpu' has 4 node(s)"),
        ({"partition": "gpu", "gpus_per_node": 8, "nodes": 3}, "partition 'gpu' has 2 node(s) with 1 CPU(s) and 8 GPUs"),
    ],
)  # fmt: skip
def test_a_request_no_node_meets_is_refused_naming_key_and_fix(values, said):
    problems = partition_problems(launcher(**values), GROUPS)
    assert any(said in problem for problem in problems), problems


def test_no_default_partition_and_none_named():
    groups = read_groups("a|up|1|2|1000|(null)|infinite\n")
    (problem,) = partition_problems(launcher(), groups)
    assert "hydra.launcher.partition=null: this cluster has no default partition" in problem
    assert partition_problems(launcher(partition="a", mem_gb=0), groups) == []
