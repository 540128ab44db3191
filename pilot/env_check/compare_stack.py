"""The software stack against the pilot's: Python, torch and its build, CUDA runtime, cuDNN, NCCL, the driver."""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

from pilot.env_check.difference import Difference
from pilot.environment.stack import major_minor


def public_version(version: str) -> str:
    """The version without its local label (``2.13.0+cpu`` -> ``2.13.0``); as given when it does not parse."""
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def compare_stack(pilot: dict[str, Any], here: dict[str, Any], multi_gpu: bool) -> list[Difference]:
    """Python, torch, CUDA runtime and driver, cuDNN, NCCL."""
    return (
        _compare_python(pilot["python"]["version"], here["python"]["version"])
        + _compare_torch(pilot["torch"], here["torch"])
        + _compare_cuda(pilot["cuda"], here["cuda"], multi_gpu)
        + _compare_driver(pilot["cuda"]["driver"], here["cuda"]["driver"], here["cuda"]["runtime"])
    )


def _compare_python(p_py: str, h_py: str) -> list[Difference]:
    found: list[Difference] = []
    if major_minor(p_py) != major_minor(h_py):
        found.append(
            Difference(
                "Python", p_py, h_py, "another minor release: every package's build and behaviour may differ", True
            )
        )
    elif p_py != h_py:
        found.append(Difference("Python", p_py, h_py, "another patch release: bug fixes only", False))
    return found


def _compare_torch(p_torch: dict[str, Any], h_torch: dict[str, Any]) -> list[Difference]:
    found: list[Difference] = []
    if public_version(p_torch["version"]) != public_version(h_torch["version"]):
        kind = "major.minor" if major_minor(p_torch["version"]) != major_minor(h_torch["version"]) else "patch"
        found.append(
            Difference(
                "torch",
                p_torch["version"],
                h_torch["version"],
                f"another {kind} release: every kernel; numerics, memory and speed may differ from the pilot's",
                True,
            )
        )
    elif p_torch["build"] != h_torch["build"]:
        pilot_cpu = p_torch["cuda"] is None and p_torch["hip"] is None
        found.append(
            Difference(
                "torch build",
                p_torch["build"],
                h_torch["build"],
                "the pilot ran torch's CPU build: the GPU kernels were not exercised by the pilot (run with --smoke)"
                if pilot_cpu
                else "another GPU build of the same release",
                not pilot_cpu
                and major_minor(p_torch["cuda"] or p_torch["hip"]) != major_minor(h_torch["cuda"] or h_torch["hip"]),
            )
        )
    return found


def _compare_cuda(p_cuda: dict[str, Any], h_cuda: dict[str, Any], multi_gpu: bool) -> list[Difference]:
    found: list[Difference] = []
    if p_cuda["runtime"] and not h_cuda["runtime"]:
        found.append(
            Difference(
                "CUDA runtime", p_cuda["runtime"], "none (CPU build)", "the campaign's GPU kernels cannot run", True
            )
        )
    elif p_cuda["runtime"] and major_minor(p_cuda["runtime"]) != major_minor(h_cuda["runtime"]):
        found.append(
            Difference(
                "CUDA runtime",
                p_cuda["runtime"],
                h_cuda["runtime"],
                "another CUDA: cuBLAS/cuDNN kernels, numerics and memory may differ",
                True,
            )
        )
    for name, what, severe in (("cudnn", "cuDNN", True), ("nccl", "NCCL", multi_gpu)):
        before, now = p_cuda.get(name), h_cuda.get(name)
        if before and not now and h_cuda["runtime"]:  # a GPU build here without it (a CPU build: said above)
            uses = (
                "convolution and cuDNN attention kernels" if name == "cudnn" else "the gradient all-reduce between GPUs"
            )
            found.append(Difference(what, before, "not available", f"{uses} cannot run here", severe))
        elif before and now and major_minor(before) != major_minor(now):
            affects = (
                "convolution and cuDNN attention kernels: numerics and speed"
                if name == "cudnn"
                else "gradient all-reduce between GPUs" + ("" if multi_gpu else " (unused: one GPU, one replica)")
            )
            found.append(Difference(what, before, now, affects, severe))
    return found


def _compare_driver(p_driver: dict[str, Any], h_driver: dict[str, Any], runtime: str | None) -> list[Difference]:
    found: list[Difference] = []
    if p_driver.get("version") and h_driver.get("version") and p_driver["version"] != h_driver["version"]:
        found.append(
            Difference(
                "NVIDIA driver",
                p_driver["version"],
                h_driver["version"],
                "another driver: same kernels while it supports torch's CUDA",
                False,
            )
        )
    driver_cuda = h_driver.get("cuda")
    supported, needed = major_minor(driver_cuda), major_minor(runtime)
    if supported is None or needed is None or supported >= needed:
        return found
    same_major = supported[0] == needed[0]
    as_at_the_pilot = p_driver.get("cuda") == driver_cuda  # the pilot passed on such a driver
    found.append(
        Difference(
            "driver's CUDA",
            p_driver.get("cuda") or "-",
            driver_cuda,
            f"older than torch's CUDA {runtime}"
            + (
                ": CUDA's minor-version compatibility runs it (kernels that need a newer driver, such as PTX "
                "compiled at run time, fail)" + ("; the pilot ran on the same" if as_at_the_pilot else "")
                if same_major
                else ": another major CUDA, which this driver cannot run. Fix: a newer driver, or a torch built "
                "for this CUDA"
            ),
            not same_major,
        )
    )
    return found
