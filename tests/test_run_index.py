"""The per-root run index (pilot/run_index.py): a relaunch finds its parent from one file, the
index is rebuilt when missing, never trusted over the run directories, and safe under
concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import threading
import time
from pathlib import Path

from pilot import run_index


def _run(root: Path, name: str, run_id: str, started_at: str, variant="optim.lr=0.0002", seed=0, mode="train"):
    run_dir = root / name
    run_dir.mkdir(parents=True)
    record = {"run_id": run_id, "variant": variant, "seed": seed, "mode": mode, "started_at": started_at}
    (run_dir / "run.json").write_text(json.dumps(record))
    run_index.add([root], run_dir, record)
    return run_dir


def _record(run_id: str, started_at: str) -> dict:
    return {"run_id": run_id, "variant": "optim.lr=0.0002", "seed": 0, "mode": "train", "started_at": started_at}


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
    monkeypatch.setattr(run_index, "_append", refused)
    _run(tmp_path, "a/5", "r5", "2026-01-01T00:00:05")  # not appended, said, no exception
    assert "cannot be written (Operation not permitted)" in caplog.text
    monkeypatch.undo()
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r5"  # missing from the index: rebuilt


def test_an_estimate_is_no_parent(tmp_path):
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    _run(tmp_path, "a/2", "r2", "2026-01-01T00:00:02", mode="estimate")
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r1"


def test_a_run_appended_while_another_process_rebuilds_is_kept(tmp_path, monkeypatch):
    """The rebuild scanned without the lock, then replaced the whole index: a job whose line was
    appended during the scan (two jobs starting at once beside 10,000 runs) was dropped, and the index,
    the size pilot wrote, was trusted afterwards: its relaunch got no parent. Now the scan holds the lock."""
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    scan = run_index._scanned

    def scan_while_another_job_starts(root):
        found = scan(root)
        record = {"run_id": "r2", "variant": "v2", "seed": 0, "mode": "train", "started_at": "2026-01-01T00:00:02"}
        (root / "a" / "2").mkdir()
        (root / "a" / "2" / "run.json").write_text(json.dumps(record))
        appending = multiprocessing.get_context("fork").Process(
            target=run_index.add, args=([root], root / "a" / "2", record)
        )
        appending.start()  # waits for the lock this rebuild holds
        appending.join(0.5)
        assert appending.is_alive()
        monkeypatch.setattr(run_index, "_scanned", scan)
        scan_while_another_job_starts.appending = appending
        return found

    monkeypatch.setattr(run_index, "_scanned", scan_while_another_job_starts)
    run_index.rebuild(tmp_path)
    scan_while_another_job_starts.appending.join(10)
    assert [e["run_id"] for e in _index_lines(tmp_path)] == ["r1", "r2"]
    assert run_index.find_parent([tmp_path], "v2", 0, None) == "r2"


def test_newest_compares_instants_not_text_of_other_time_zones(tmp_path):
    """A run recorded in Tokyo time (18:51+0900 = 09:51Z) sorted after two later UTC runs as text."""
    _run(tmp_path, "a/1", "tokyo", "2026-12-06T18:51:42+0900")
    _run(tmp_path, "a/2", "utc-1", "2026-12-06T09:51:45+0000")
    _run(tmp_path, "a/3", "utc-2", "2026-12-06T09:51:49+0000")
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "utc-2"
    assert run_index.started_instant("2026-10-25T02:30:00+0200") < run_index.started_instant("2026-10-25T02:10:00+0100")
    assert run_index.started_instant(None) == run_index.started_instant("not a time") == float("-inf")


def test_an_index_of_the_size_pilot_wrote_but_zeros_is_rebuilt(tmp_path):
    """What a crash can leave in place of a file's blocks: zeros of the recorded length hid every run."""
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(tmp_path)
    index = tmp_path / run_index.INDEX_NAME
    index.write_bytes(bytes(index.stat().st_size))
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r1"
    assert [e["run_id"] for e in _index_lines(tmp_path)] == ["r1"]


def test_a_run_under_an_indexed_directory_is_indexed_there_from_any_working_directory(tmp_path, monkeypatch):
    """A run started from another directory with a hydra.run.dir inside this campaign's root: its roots
    (relative to that directory) did not hold it, so it was never indexed, and later relaunches from the
    campaign's directory trusted the index and skipped it."""
    campaign = tmp_path / "campaign"
    _run(campaign / "outputs", "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(campaign / "outputs")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    _run_dir = campaign / "outputs" / "manual"
    _run_dir.mkdir(parents=True)
    record = _record("r2", "2026-01-01T00:00:02")
    (_run_dir / "run.json").write_text(json.dumps(record))
    run_index.add(["outputs", "sweeps"], _run_dir, record)  # the roots of the directory it was started from
    monkeypatch.chdir(campaign)
    assert run_index.find_parent(["outputs", "sweeps"], "optim.lr=0.0002", 0, None) == "r2"
    assert not run_index.within_roots(["outputs"], tmp_path / "elsewhere" / "a")
    assert run_index.within_roots(["outputs"], campaign / "outputs" / "manual")


def test_a_run_outside_the_roots_is_given_no_parent_and_a_forced_new_variant_is_found(make_cfg, tmp_path):
    """README: a run given a hydra.run.dir outside both roots is neither found as a parent nor given one
    (two such runs were both given the same outputs/ run as parent). A forced resume that changes the
    run's variant (the batch split) adds an index line under the new one: the index, the size pilot
    wrote, kept the old variant only, so a relaunch of the new one found no parent until a rebuild."""
    from pilot.resume import continue_record
    from pilot.run_record import RunRecord

    roots = [f"campaign.run_root={tmp_path}/outputs", f"campaign.sweep_root={tmp_path}/sweeps"]
    cfg = make_cfg(*roots)
    inside = RunRecord.start(tmp_path / "outputs" / "a", cfg, ["seed=0"])
    inside.metrics.close()
    run_index.rebuild(tmp_path / "outputs")
    outside = RunRecord.start(tmp_path / "elsewhere" / "a", cfg, ["seed=0"])
    assert outside.data["parent_id"] is None
    assert RunRecord.start(tmp_path / "outputs" / "b", cfg, ["seed=0"]).data["parent_id"] == inside.data["run_id"]
    forced = ["batch.micro_batch=4", "batch.accumulation=4", "seed=0"]
    continued = continue_record(
        make_cfg(*roots, *forced[:2]),
        tmp_path / "outputs" / "a",
        {"forced_despite": ["batch"], "from_update": 0},
        forced,
    )
    continued.metrics.close()
    new_variant = continued.data["variant"]
    assert new_variant != inside.data["variant"]
    assert run_index.find_parent([tmp_path / "outputs"], new_variant, 0, None) == inside.data["run_id"]


def test_a_run_started_from_another_directory_into_a_campaigns_root_finds_its_parent_there(
    make_cfg, tmp_path, monkeypatch
):
    """It was indexed there, and became the next run's parent, but was given none itself: a gap in the
    chain of relaunches."""
    from pilot.run_record import RunRecord

    campaign = tmp_path / "campaign"
    (campaign / "outputs").mkdir(parents=True)
    monkeypatch.chdir(campaign)
    first = RunRecord.start(campaign / "outputs" / "a", make_cfg(), ["seed=0"])
    first.metrics.close()
    run_index.rebuild(campaign / "outputs")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # its own roots, sub/outputs and sub/sweeps, hold nothing
    second = RunRecord.start(campaign / "outputs" / "manual", make_cfg(), ["seed=0"])
    second.metrics.close()
    assert second.data["parent_id"] == first.data["run_id"]


def test_an_index_held_too_long_by_another_process_is_read_around_and_said(tmp_path, monkeypatch, caplog):
    """A job start waited without limit and without a word while another process held the lock."""
    import fcntl

    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(tmp_path)
    monkeypatch.setattr(run_index, "LOCK_WAIT_S", 0.4)
    monkeypatch.setattr(run_index, "LOCK_SAID_S", 0.1)
    with (tmp_path / run_index.INDEX_NAME).open("a") as held:  # another open file: flock blocks this process too
        fcntl.flock(held, fcntl.LOCK_EX)
        _run(tmp_path, "a/2", "r2", "2026-01-01T00:00:02")  # returns: its line could not be appended
        assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r2"  # the directories read
    assert "another process holds its lock" in caplog.text
    assert not (tmp_path / run_index.SIZE_NAME).exists()  # the next search rebuilds it
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r2"


def test_a_resume_after_an_attempt_that_recorded_no_position_says_null(make_cfg, tmp_path):
    """An attempt interrupted before its first update left seconds_per_update null: the resume recorded
    previous_position {"seconds_per_update": null}, a position where the README says null (none recorded)."""
    from pilot.resume import continue_record
    from pilot.run_record import RunRecord

    cfg = make_cfg(f"campaign.run_root={tmp_path}/outputs", f"campaign.sweep_root={tmp_path}/sweeps")
    first = RunRecord.start(tmp_path / "outputs" / "a", cfg, ["seed=0"])
    first.update(seconds_per_update=None)
    first.metrics.close()
    again = continue_record(cfg, tmp_path / "outputs" / "a", {"from_update": 0}, ["seed=0"])
    again.metrics.close()
    assert again.data["resumes"][-1]["previous_position"] is None


def test_an_edit_that_keeps_the_index_size_cannot_reorder_the_runs(tmp_path):
    """Every run the index gives for the variant and seed is checked against its run.json: a time edited in
    place (same size) is caught whichever way it reorders them (fails with only the chosen run checked)."""
    for number in (1, 2, 3):
        _run(tmp_path, f"a/{number}", f"r{number}", f"2026-01-01T00:00:0{number}")
    run_index.rebuild(tmp_path)
    index = tmp_path / run_index.INDEX_NAME
    text = index.read_text()
    index.write_text(text.replace("2026-01-01T00:00:03", "2025-01-01T00:00:03"))  # the newest made to look oldest
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r3"
    index.write_text(index.read_text().replace("2026-01-01T00:00:01", "2027-01-01T00:00:01"))  # the oldest newest
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r3"


def test_a_run_not_indexed_while_a_directory_stood_there_is_found_once_the_index_is_put_back(tmp_path, caplog):
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(tmp_path)
    index = tmp_path / run_index.INDEX_NAME
    saved = index.read_bytes()
    index.unlink()
    index.mkdir()
    _run(tmp_path, "a/2", "r2", "2026-01-01T00:00:02")  # cannot be indexed: said, and the size file removed
    assert "cannot be written" in caplog.text
    index.rmdir()
    index.write_bytes(saved)  # the user puts the backup back, as the warning invites
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r2"


def test_an_index_line_whose_run_json_was_never_written_is_no_parent(tmp_path):
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(tmp_path)
    record = _record("r2", "2026-01-01T00:00:02")
    (tmp_path / "a" / "2").mkdir()
    run_index.add([tmp_path], tmp_path / "a" / "2", record)  # RunRecord.start indexes first, then writes run.json
    assert run_index.find_parent([tmp_path], "optim.lr=0.0002", 0, None) == "r1"
    assert [e["run_id"] for e in _index_lines(tmp_path)] == ["r1"]  # rebuilt from what is there


def test_a_search_while_a_run_starts_waits_for_its_run_json_and_keeps_its_line(tmp_path):
    """A run's line is in the index before its run.json is written: a search meanwhile (another job) found the
    line disproved, rebuilt the index without it and recorded the new size, so every later relaunch missed
    the run. The line and the run.json are written holding the index's lock; the search waits."""
    _run(tmp_path, "a/1", "r1", "2026-01-01T00:00:01")
    run_index.rebuild(tmp_path)
    record, found = _record("r2", "2026-01-01T00:00:02"), []
    (tmp_path / "a" / "2").mkdir()
    with run_index.adding([tmp_path], tmp_path / "a" / "2", record):
        search = threading.Thread(
            target=lambda: found.append(run_index.find_parent([tmp_path], record["variant"], 0, None))
        )
        search.start()
        time.sleep(0.3)  # the search is waiting for the index's lock
        (tmp_path / "a" / "2" / "run.json").write_text(json.dumps(record))
    search.join(10)
    assert found == ["r2"]
    assert [e["run_id"] for e in _index_lines(tmp_path)] == ["r1", "r2"]
    assert run_index.find_parent([tmp_path], record["variant"], 0, None) == "r2"
