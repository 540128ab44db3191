"""What an estimate read besides its key (pilot/estimate/dependencies.py): recorded for your code's
reads, not for the process's own, and checked where the next command runs. Found by an outside
examination of the estimate store."""

from __future__ import annotations

import importlib
import os
import sys
import types

import pytest

from pilot.estimate import dependencies
from pilot.estimate.dependencies import Reads, building, changed


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Import ``name`` from ``source`` written in tmp_path (your code: outside pilot and site-packages)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(dependencies, "_imports", None)
    made = []

    def make(name: str, source: str) -> types.ModuleType:
        (tmp_path / f"{name}.py").write_text(source)
        importlib.invalidate_caches()
        made.append(name)
        return importlib.import_module(name)

    yield make
    for name in made:
        sys.modules.pop(name, None)


def test_a_file_opened_by_a_relative_path_is_checked_where_the_next_command_runs(user_module, tmp_path, monkeypatch):
    """open("sizes.json") in two campaign folders: the first folder's file was recorded by its absolute
    path, so the second folder's other sizes read the first's estimate back."""
    module = user_module("reads_relative", "def width():\n    return open('sizes.json').read()\n")
    for folder, text in (("one", "128"), ("two", "4096")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "sizes.json").write_text(text)
    monkeypatch.chdir(tmp_path / "one")
    with Reads() as reads:
        module.width()
    recorded = reads.dependencies()
    assert list(recorded["files"]) == ["sizes.json"] and changed(recorded) is None
    monkeypatch.chdir(tmp_path / "two")
    assert changed(recorded) == "sizes.json changed"


def test_a_module_found_elsewhere_now_is_a_change(user_module, tmp_path, monkeypatch):
    module = user_module("reads_found_here", "WIDTH = 1\n")
    with Reads() as reads:
        assert module.WIDTH == 1
    recorded = reads.dependencies()
    assert "reads_found_here" in recorded["modules"] and changed(recorded) is None
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "reads_found_here.py").write_text("WIDTH = 5\n")
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    importlib.invalidate_caches()
    sys.modules.pop("reads_found_here")  # as in the next command's process, run from elsewhere
    assert "is now found at" in changed(recorded)


def test_variables_your_code_sets_or_copies_are_no_inputs_but_those_it_reads_are(user_module, monkeypatch):
    """os.environ.setdefault("TOKENIZERS_PARALLELISM", ...) at a module's top level was recorded as read
    unset: every later command found it set and computed again. os.environ.copy() recorded every
    variable of the shell (PWD, SHLVL): another directory computed again."""
    monkeypatch.delenv("READS_OWN", raising=False)
    monkeypatch.setenv("READS_WIDTH", "128")
    dependencies.record_imports()
    source = (
        "import os\nos.environ.setdefault('READS_OWN', 'false')\n"
        "def width():\n    os.environ.copy()\n    return os.getenv('READS_WIDTH'), os.environb.get(b'READS_BYTES')\n"
    )
    module = user_module("reads_environment", source)
    with Reads() as reads:
        module.width()
    recorded = reads.dependencies()
    assert recorded["environment"] == {"READS_BYTES": None, "READS_WIDTH": "128"}, recorded["environment"]
    monkeypatch.setenv("PWD", "/somewhere/else")
    assert changed(recorded) is None
    monkeypatch.setenv("READS_WIDTH", "4096")
    assert changed(recorded) == "the environment variable READS_WIDTH changed"


def test_what_a_task_reads_while_built_counts_but_not_its_data_files(user_module, tmp_path, monkeypatch):
    """A task whose make_task reads a variable that sets how its forward runs: not recorded, a stale
    estimate. Its per-example files are its data (keyed by the batches): not recorded."""
    monkeypatch.setenv("READS_TASK_MODE", "fast")
    (tmp_path / "example.txt").write_text("x")
    module = user_module(
        "reads_task",
        f"import os\ndef make_task():\n    open({str(tmp_path / 'example.txt')!r}).read()\n    return os.environ['READS_TASK_MODE']\n",
    )
    dependencies.record_imports()
    with building():
        module.make_task()
    with Reads() as reads:
        pass
    recorded = reads.dependencies()
    assert recorded["environment"] == {"READS_TASK_MODE": "fast"} and recorded["files"] == {}


def test_many_files_are_fingerprinted_by_size_and_time(user_module, tmp_path):
    """A task reading one file per example: 8,000 hashed in every stored record took 2 s."""
    for number in range(dependencies.MANY_FILES + 1):
        (tmp_path / f"example-{number}.txt").write_text(str(number))
    module = user_module(
        "reads_many", f"def read(n):\n    return open({str(tmp_path)!r} + f'/example-{{n}}.txt').read()\n"
    )
    with Reads() as reads:
        for number in range(dependencies.MANY_FILES + 1):
            module.read(number)
    recorded = reads.dependencies()
    assert all(" bytes, modified " in f for f in recorded["files"].values()) and changed(recorded) is None
    os.utime(tmp_path / "example-3.txt", ns=(1, 1))
    assert changed(recorded).endswith("example-3.txt changed")


def test_an_object_in_sys_modules_whose_attributes_raise_is_no_crash(monkeypatch):
    class Odd:
        def __getattr__(self, name):
            raise RuntimeError("lazy loader")

    monkeypatch.setitem(sys.modules, "reads_odd_object", Odd())
    with Reads() as reads:
        pass
    assert "reads_odd_object" not in reads.dependencies()["modules"]
