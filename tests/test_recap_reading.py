"""The recap's fast paths read what the plain ones read: metrics.jsonl as bytes, the picture's
training points through numpy, curves decimated to the pixels they occupy, the run directories
found without os.walk (bench/recap_10k.py measures why)."""

import json
import math
import os

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import BboxImage
from test_recap_damaged import metrics, metrics_line, record

from pilot.metrics_reading import TRAIN_ROW, _validation_rows, plottable, training_points
from pilot.recap import collect, find_run_dirs, picture, read_metrics, reading
from pilot.recap.run_json import record_problems


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def exact_points(body: bytes) -> np.ndarray:
    """The training points of a file, every loss through float(): what the picture must show."""
    rows = [TRAIN_ROW.match(line).groups() for line in body.split(b"\n") if line.startswith(b'{"kind": "train"')]
    return plottable(np.array([(int(u), float(loss)) for u, loss in rows], dtype=np.float64).reshape(-1, 2))


ODD_LOSSES = [2.5, 4.972267609485941, 0.0001234, 1.5e-05, 1.2345678901234567e-05, math.nan, math.inf, -math.inf]
ODD_LOSSES += [-1.0, 3, 123456789.5, 1234567890.25, 0.1, 2.7000000000000002, 1e20, 0.0, 12.0, 0.00012345678901234567]


def test_training_points_read_by_numpy_agree_with_float_for_every_kind_of_number():
    """Plain decimals are read from their digits; an exponent, nan, inf, a sign, an integer, a long
    update or integer part is read exactly; non-finite and non-positive losses are left out."""
    lines = [
        json.dumps({"kind": "train", "update": u, "loss": loss, "lr": 0.5, "x": {"": 1.5}, "": 7})
        for u, loss in enumerate(ODD_LOSSES, 1)
    ]
    lines += [metrics_line("val", 3, 1.0), metrics_line("train", 12_345_678_901, 2.5), metrics_line("train", 0, 3.25)]
    body = ("\n".join(lines) + "\n").encode()
    assert _validation_rows(body) is not None  # a file as pilot writes it: the fast path reads it
    only_val = (metrics_line("val", 1, 2.0) + "\n").encode()
    first, none, again = training_points([body, only_val, body])
    expected = exact_points(body)
    assert none.shape == (0, 2) and np.array_equal(first, again)
    assert first.shape == expected.shape == (len(ODD_LOSSES) + 2 - 5, 2)  # nan, inf, -inf, -1, 0: left out
    assert np.array_equal(first[:, 0], expected[:, 0])
    np.testing.assert_allclose(first[:, 1], expected[:, 1], rtol=1e-12)


def test_training_points_of_many_files_at_once_each_keep_their_own(tmp_path):
    bodies = []
    for run in range(250):
        lines = [metrics_line("train", u, 1.0 + run + u / 1000) for u in range(1, 3 + run % 7)]
        bodies.append(("\n".join(lines) + "\n").encode())
    for body, points in zip(bodies, training_points(bodies)):
        np.testing.assert_allclose(points, exact_points(body), rtol=1e-12)


@pytest.mark.parametrize("ending", ["\r\n", "\r"])
def test_windows_and_old_mac_line_ends_read_as_before(tmp_path, ending):
    """Path.read_text reads \\r\\n and \\r as \\n; the bytes reader does the same."""
    plain = read_metrics(write(tmp_path / "plain" / "metrics.jsonl", metrics()))
    other = read_metrics(write(tmp_path / "other" / "metrics.jsonl", metrics().replace("\n", ending)), curve=True)
    assert {k: v for k, v in other.items() if not k.startswith("_train")} == plain
    assert len(training_points([other["_train_body"]])[0]) == 6  # read as pilot wrote it: the fast path


def test_text_that_is_not_ascii_and_whitespace_only_files_read_as_before(tmp_path):
    accented = metrics().replace('"lr": 0.0001', '"note": "r\u00e9sum\u00e9", "lr": 0.0001', 1)
    row = read_metrics(write(tmp_path / "a" / "metrics.jsonl", accented), curve=True)
    assert row["updates_done"] == 6 and row["final_val_loss"] == 1.5
    assert read_metrics(write(tmp_path / "b" / "metrics.jsonl", "\x1c \n"))["updates_done"] == 0  # str.strip: blank


def test_a_long_run_is_drawn_with_at_most_two_points_per_pixel_column_and_its_spike():
    updates = np.arange(1, 100_001, dtype=np.float64)
    losses = 10.0 / np.sqrt(updates)
    losses[33_333] = 500.0  # one update in 100,000, far less than a pixel wide
    fig = Figure(figsize=picture.FIGURE_INCHES, dpi=picture.DPI)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.update_datalim([[1, 0.01], [100_000, 500]])
    ax.autoscale_view()
    ax.set_yscale("log")
    (data,), (pixels,) = picture._decimate(ax, [np.column_stack([updates, losses])])
    assert len(data) <= 2 * (math.ceil(ax.bbox.width) + 1) + 2 and len(data) == len(pixels)
    assert data[0].tolist() == [1.0, 10.0] and data[-1, 0] == 100_000  # first and last kept
    assert [33_334.0, 500.0] in data.tolist()  # the spike
    assert (np.diff(data[:, 0]) > 0).all()  # in their order


def test_decimation_keeps_the_lowest_and_highest_point_of_every_column():
    rng = np.random.default_rng(0)
    columns = np.repeat(np.arange(50), 40)
    values = rng.normal(size=len(columns))
    kept = picture.decimated(columns, values)
    assert kept[0] == 0 and kept[-1] == len(columns) - 1 and (np.diff(kept) > 0).all()
    for column in range(50):
        mine = np.flatnonzero(columns == column)
        assert {mine[np.argmin(values[mine])], mine[np.argmax(values[mine])]} <= set(kept)
    assert len(kept) <= 2 * 50 + 2


def test_the_picture_draws_a_spike_of_a_long_run(tmp_path):
    lines = [metrics_line("train", u, 50.0 if u == 3_333 else 10.0 / math.sqrt(u)) for u in range(1, 10_001)]
    write(tmp_path / "run" / "metrics.jsonl", "\n".join(lines) + "\n")
    write(tmp_path / "run" / "run.json", json.dumps(record()))
    curves = {}
    frame = collect([tmp_path], curves)
    fig = Figure(figsize=picture.FIGURE_INCHES, dpi=picture.DPI)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    picture._draw_train(ax, picture._groups(frame, curves, "variant", lambda i: (0.1, 0.2, 0.7, 1.0)))
    (image,) = [artist for artist in ax.get_children() if isinstance(artist, BboxImage)]
    x, y = ax.transData.transform((3_333, 50.0)) - (ax.bbox.x0, ax.bbox.y1)
    drawn = np.asarray(image.get_array())[:, int(x) - 1 : int(x) + 2, 3]  # alpha around the spike's column
    assert drawn[max(0, int(-y) - 2) : int(-y) + 3].any()
    assert picture.plot_curves(frame, curves, tmp_path / "recap.png") == tmp_path / "recap.png"


def test_the_picture_of_runs_that_failed_before_their_first_update_is_drawn_without_a_curve(tmp_path):
    """A run failed in its set-up (empty metrics.jsonl; under SLURM tasks_per_node=2 with one replica): the log
    axis of no point raised 'Data cannot be log-scaled', a traceback from python -m pilot.recap (exit 1), and
    inside a sweep a warning, no recap and exit 0."""
    write(tmp_path / "run" / "metrics.jsonl", "")
    write(tmp_path / "run" / "run.json", json.dumps({**record(), "status": "failed", "updates_done": 0}))
    curves = {}
    frame = collect([tmp_path], curves)
    assert picture.plot_curves(frame, curves, tmp_path / "recap.png") == tmp_path / "recap.png"


def test_the_picture_drawn_aside_is_the_same_and_redrawn_here_when_that_process_dies(tmp_path, monkeypatch):
    write(tmp_path / "run" / "metrics.jsonl", metrics())
    write(tmp_path / "run" / "run.json", json.dumps(record()))
    curves = {}
    frame = collect([tmp_path], curves)
    here = os.getpid()
    monkeypatch.setattr(reading.threading, "active_count", lambda: 1)  # an earlier test's thread may linger
    drawn = picture.plot_curves_aside(frame, curves, tmp_path / "aside.png")
    assert drawn() == tmp_path / "aside.png" and (tmp_path / "aside.png").stat().st_size > 0
    draws = []
    real = picture.plot_curves

    def dies_when_forked(*args):
        if os.getpid() != here:
            os._exit(9)  # killed: out of memory
        draws.append(os.getpid())
        return real(*args)

    monkeypatch.setattr(picture, "plot_curves", dies_when_forked)
    assert picture.plot_curves_aside(frame, curves, tmp_path / "again.png")() == tmp_path / "again.png"
    assert draws == [here] and (tmp_path / "again.png").read_bytes() == (tmp_path / "aside.png").read_bytes()
    nothing = frame.assign(status="unreadable")  # nothing to draw: None, from the process as from here
    assert picture.plot_curves_aside(nothing, curves, tmp_path / "none.png")() is None


def test_a_folder_of_links_to_runs_elsewhere_is_read_and_a_link_back_up_is_not_walked_twice(tmp_path):
    """python -m pilot.recap picked/ (links to chosen runs) said 'no pilot run under picked'."""
    for name in ("a", "b"):
        write(tmp_path / "runs" / name / "run.json", json.dumps(record()))
    picked = tmp_path / "picked"
    picked.mkdir()
    os.symlink(tmp_path / "runs" / "a", picked / "first")
    os.symlink(tmp_path / "runs" / "b", picked / "second")
    os.symlink(tmp_path, picked / "loop")  # back up: everything under it once, no endless walk
    assert find_run_dirs([picked]) == [picked / "first", picked / "second"]
    assert find_run_dirs([tmp_path / "runs", picked]) == [tmp_path / "runs" / "a", tmp_path / "runs" / "b"]


def test_a_link_to_a_run_directory_is_listed_not_followed_as_os_walk_does(tmp_path):
    write(tmp_path / "sweep" / "run" / "run.json", json.dumps(record()))
    os.symlink(tmp_path / "sweep" / "run", tmp_path / "sweep" / "link")
    write(tmp_path / "sweep" / "run" / "checkpoints" / "run.json", "{}")  # inside a run: not walked
    assert find_run_dirs([tmp_path]) == [tmp_path / "sweep" / "run"]
    walked = sorted(current for current, dirs, files in os.walk(tmp_path) if "run.json" in files + dirs)
    assert walked[0] == str(tmp_path / "sweep" / "run")


def test_wrong_keys_of_run_json_are_named_in_the_order_of_record_keys():
    problems = record_problems(
        record(seed="0", variant=5, status=None, closing="pass", peak_memory={"rss_peak_bytes": "x"})
    )
    assert [p.split(" ")[0] for p in problems] == ["variant", "seed", "status", "peak_memory.rss_peak_bytes", "closing"]


def _runs_for_processes(root, count=9):
    """``count`` runs, one with a damaged metrics line, one whose run.json is not JSON."""
    for index in range(count):
        run = root / f"run-{index}"
        write(run / "run.json", "{broken" if index == 4 else json.dumps(record(seed=index, run_id=f"r{index}")))
        text = metrics(final_val=1.0 + index)
        write(run / "metrics.jsonl", text.replace('"loss": 2.9', '"loss": "x"') if index == 7 else text)


def _frame_and_curves(root):
    curves = {}
    frame = collect([root], curves)
    return frame, {run: (train.tolist(), val) for run, (train, val) in curves.items()}


def test_runs_read_in_several_processes_give_the_rows_and_curves_of_one(tmp_path, monkeypatch):
    _runs_for_processes(tmp_path)
    alone = _frame_and_curves(tmp_path)
    monkeypatch.setattr(reading, "RUNS_PER_PROCESS", 2)
    monkeypatch.setattr(reading, "cpu_budget", lambda: (3, "test"))
    monkeypatch.setattr(reading.threading, "active_count", lambda: 1)  # an earlier test's thread may linger
    assert reading.reading_processes(9) == 3
    shared = _frame_and_curves(tmp_path)
    assert alone[0].equals(shared[0]) and alone[1] == shared[1]
    assert set(alone[0]["status"]) == {"ok", "unreadable"} and len(alone[0]) == 9


def test_a_share_whose_process_dies_is_read_here_and_no_run_is_lost(tmp_path, monkeypatch):
    _runs_for_processes(tmp_path)
    alone = _frame_and_curves(tmp_path)
    parent, read_runs = os.getpid(), reading.read_runs

    def dies_in_a_child(run_dirs, picture):
        if os.getpid() != parent:
            os._exit(9)  # as the kernel's OOM killer would end it
        return read_runs(run_dirs, picture)

    monkeypatch.setattr(reading, "read_runs", dies_in_a_child)
    monkeypatch.setattr(reading, "RUNS_PER_PROCESS", 2)
    monkeypatch.setattr(reading, "cpu_budget", lambda: (3, "test"))
    monkeypatch.setattr(reading.threading, "active_count", lambda: 1)
    assert reading.reading_processes(9) == 3
    shared = _frame_and_curves(tmp_path)
    assert alone[0].equals(shared[0]) and alone[1] == shared[1]


def test_readers_that_cannot_start_leave_every_share_to_the_recap(tmp_path, monkeypatch):
    _runs_for_processes(tmp_path)
    alone = _frame_and_curves(tmp_path)

    def no_process_left(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")  # fork under a cgroup's pids limit

    monkeypatch.setattr(reading, "ProcessPoolExecutor", no_process_left)
    monkeypatch.setattr(reading, "RUNS_PER_PROCESS", 2)
    monkeypatch.setattr(reading, "cpu_budget", lambda: (3, "test"))
    monkeypatch.setattr(reading.threading, "active_count", lambda: 1)
    shared = _frame_and_curves(tmp_path)
    assert alone[0].equals(shared[0]) and alone[1] == shared[1]


def test_runs_are_read_here_alone_when_forking_is_not_safe_or_not_worth_it(monkeypatch):
    monkeypatch.setattr(reading, "cpu_budget", lambda: (8, "test"))
    monkeypatch.setattr(reading.threading, "active_count", lambda: 1)
    assert reading.reading_processes(999) == 1  # fewer than RUNS_PER_PROCESS runs per process
    assert reading.reading_processes(10_000) == 8
    monkeypatch.setattr(reading.threading, "active_count", lambda: 2)  # another thread could hold a lock
    assert reading.reading_processes(10_000) == 1


def test_the_time_a_run_stood_stopped_between_attempts_is_not_counted_as_running():
    """An interrupted run resumed a day later: the recap's wall_time_s said it ran for a day."""
    from pilot.recap.run_json import wall_time_s

    record = {
        "started_at": "2026-12-01T10:00:00+0000",
        "finished_at": "2026-12-02T10:00:30+0000",
        "resumes": [{"previous_finished_at": "2026-12-01T10:01:00+0000", "at": "2026-12-02T10:00:00+0000"}],
    }
    assert wall_time_s(record) == 90.0  # 60 s, stopped a day less 60 s, then 30 s
    older = {**record, "resumes": [{"at": "2026-12-02T10:00:00+0000"}]}  # a resume that does not say when it stopped
    assert wall_time_s(older) == 86430.0
    assert wall_time_s({k: v for k, v in record.items() if k != "resumes"}) == 86430.0


def test_wall_time_is_measured_to_the_millisecond(tmp_path):
    """started_at and finished_at were whole seconds: a job of 0.4 s lasted 0 or 1 s in the recap."""
    import time

    from pilot.recap.run_json import wall_time_s
    from pilot.run_record import RunRecord, now_text

    start = 1_764_000_000.7
    assert wall_time_s({"started_at": now_text(start), "finished_at": now_text(start + 0.4)}) == pytest.approx(
        0.4, abs=2e-3
    )
    record = RunRecord(tmp_path, {"run_id": "r", "status": "running", "started_at": now_text()})
    time.sleep(0.25)
    record.finish("ok", "budget_reached")
    written = json.loads((tmp_path / "run.json").read_text())
    assert 0.24 <= wall_time_s(written) < 1.0, written  # whole seconds gave 0 or 1


@pytest.mark.parametrize("mode", ["pilot", "estimate"])
def test_a_pilot_or_estimate_directory_given_alone_is_refused_and_left_as_it_was(tmp_path, mode, capsys):
    """Without --out it wrote recap.md and recap.csv into the pilot's own directory and said "0 run(s)", exit 0."""
    from pilot.recap.entry import main

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"mode": mode, "status": "ok"}))
    with pytest.raises(SystemExit) as stop:
        main([str(run)])
    assert stop.value.code == 2 and sorted(p.name for p in run.iterdir()) == ["run.json"]
    assert "Fix: --out DIR" in capsys.readouterr().err  # with --out it is listed (test_recap_damaged)


def test_the_recaps_reading_processes_die_with_it(tmp_path):
    """kill -9 of a recap over thousands of runs left each forked reader blocked for good, writing its result to
    a pipe no one read (an outside examination, 2026-12-07: 218 MB each, SIGTERM ignored)."""
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import os, sys, time\n"
        "import pilot.recap.reading as reading\n"
        "reading.read_runs = lambda share, picture: (time.sleep(120), ([], None))[1]\n"
        "print(os.getpid(), flush=True)\n"
        "reading._forked([['a'], ['b'], ['c']], False)\n"
    )
    recap = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    parent = int(recap.stdout.readline())

    def children() -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if entry.isdigit() and int(stat.read().rsplit(")", 1)[1].split()[1]) == parent:
                        found.append(int(entry))
            except OSError:
                continue
        return found

    deadline = time.monotonic() + 30
    while len(readers := children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(readers) >= 2, readers
    os.kill(parent, signal.SIGKILL)
    recap.wait()
    deadline = time.monotonic() + 10
    while (alive := [pid for pid in readers if os.path.exists(f"/proc/{pid}")]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in alive:  # not left behind this test either
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"readers {alive} outlived the recap"
