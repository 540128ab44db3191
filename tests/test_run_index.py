"""The per-root run index (pilot/run_index.py): a relaunch finds its parent from one file, the
index is rebuilt when missing, never trusted over the run directories, and safe under
concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

from pilot import run_index


def _run(root: Path, name: str, run_id: str, started_at: str, variant="optim.lr=0.0002", seed=0, mode="train"):
    run_dir = root / name
    run_dir.mkdir(parents=True)
    record = {"run_id": run_id, "variant": variant, "seed": seed, "mode": mode, "started_at": started_at}
    (run_dir / "run.json").write_text(json.dumps(record))
    run_index.add([root], run_dir, record)
    return run_dir


def _index_lines(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / run_index.INDEX_NAME).read_text().splitlines()]


def test_missing_index_is_rebuilt_from_the_run_directories_then_appended_to(tmp_path):
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")  # no index yet: add() leaves it to the first search
    _run(tmp_path, "a/2", "r2", "2026-01-01T00:00:02", mode="pilot")
    assert not (tmp_path / run_index.INDEX_NAME).exists()
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r1"  # pilot runs are no parents
    assert [e["run_id"] for e in _index_lines(tmp_path)] == ["r1", "r2"]
    _run(tmp_path, "b/3", "r3", "2026-01-01T00:00:03")
    assert [e["run_id"] for e in _index_lines(tmp_path)] == ["r1", "r2", "r3"]
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r3"
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 1, None) is None
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, tmp_path / "b") == "r1"  # same sweep: no parent


def test_the_index_is_never_trusted_over_the_run_directories(tmp_path):
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(tmp_path)
    _run(tmp_path, "a/2", "r2", "2026-01-01T00:00:02")
    shutil.rmtree(tmp_path / "a" / "2")  # the newest indexed run is gone
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r1"
    assert [e["run_id"] for e in _index_lines(tmp_path)] == ["r1"]  # rebuilt from what is there
    (tmp_path / "a" / "1" / "run.json").write_text(json.dumps({"run_id": "other", "variant": "x", "seed": 0}))
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) is None  # the run.json decides


def test_a_cut_line_is_skipped(tmp_path):
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(tmp_path)
    with (tmp_path / run_index.INDEX_NAME).open("a") as handle:
        handle.write('{"path": "a/9", "run_id": "r9", "vari')  # a kill in the middle of an append
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r1"


def _append_many(root: str, worker: int) -> None:
    for n in range(40):
        _run(Path(root), f"w{worker}/{n}", f"w{worker}-{n}", f"2026-01-01T00:{worker:02d}:{n:02d}")


def test_concurrent_writers_never_interleave_lines(tmp_path):
    run_index.rebuild(tmp_path)  # an (empty) index exists: every run appends
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(str(tmp_path), w)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join()
    lines = _index_lines(tmp_path)  # every line parses
    assert sorted(e["run_id"] for e in lines) == sorted(f"w{w}-{n}" for w in range(4) for n in range(40))


def _newer_runs(root: Path) -> None:
    _run(root, "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(root)
    for n in (2, 3):
        _run(root, f"a/{n}", f"r{n}", f"2026-01-01T00:00:0{n}")


def test_an_index_not_as_pilot_wrote_it_is_rebuilt(tmp_path):
    """An emptied index, one of other text, one cut to its first line: each found no parent or the oldest
    run (r1) while newer runs of the variant were there; it is not the size pilot wrote: rebuilt."""
    index = tmp_path / run_index.INDEX_NAME
    _newer_runs(tmp_path)
    first_line = index.read_text().splitlines()[0] + "\n"
    for damaged in ("", "not json at all\n", first_line, first_line + '{"path": "a/3", "run_id": "r3", "vari'):
        index.write_text(damaged)
        assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r3", damaged
        assert [e["run_id"] for e in _index_lines(tmp_path)] == ["r1", "r2", "r3"]


def test_an_index_that_cannot_be_written_is_read_around_and_the_run_goes_on(tmp_path, monkeypatch, caplog):
    """A directory where the index should be crashed every run with IsADirectoryError, no run.json
    written; an index the system refuses to append to (EPERM) left run.json saying running."""
    _newer_runs(tmp_path)
    index = tmp_path / run_index.INDEX_NAME
    index.unlink()
    index.mkdir()
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r3"
    _run(tmp_path, "a/4", "r4", "2026-01-01T00:00:04")  # add() skips a directory
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r4"
    index.rmdir()
    run_index.rebuild(tmp_path)

    def refused(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    run_index._said.clear()  # said once per root and process: the directory above was said
    monkeypatch.setattr(run_index, "_locked_write", refused)
    _run(tmp_path, "a/5", "r5", "2026-01-01T00:00:05")  # not appended, said, no exception
    assert "cannot be written (Operation not permitted)" in caplog.text
    monkeypatch.undo()
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r5"  # missing from the index: rebuilt


def test_an_estimate_is_no_parent(tmp_path):
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    _run(tmp_path, "a/2", "r2", "2026-01-01T00:00:02", mode="estimate")
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r1"
