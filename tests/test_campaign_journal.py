"""``campaign.journal`` appends to the file it names (outside examination, 2026-12-07): pointed at a finished
run's run.json, its REPRODUCE.md or a data file, Markdown was appended to it and the command exited 0 (the
run's record no longer parsed). Such a file is refused before anything runs, and never appended to."""

from __future__ import annotations

import json

import pytest
from conftest import run_pilot

from pilot.rental.journal import TITLE, NotAJournal, append_entry, not_a_journal
from pilot.validation import ConfigError, validate


def _a_run(folder):
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"run_id": "r1", "status": "ok"}))
    (folder / "REPRODUCE.md").write_text("# Reproduce\n")
    return folder


def test_a_file_that_is_no_journal_is_never_appended_to(tmp_path):
    run = _a_run(tmp_path / "run")
    data = tmp_path / "data.jsonl"
    data.write_text('{"text": "a"}\n')
    for path in (run / "run.json", run / "REPRODUCE.md", run / "journal.md", data):
        before = path.read_bytes() if path.exists() else None
        assert not_a_journal(path), path
        with pytest.raises(NotAJournal):
            append_entry(path, "sweep", ["a line"])
        assert (path.read_bytes() if path.exists() else None) == before, path


def test_a_new_an_empty_or_an_existing_journal_is_appended_to(tmp_path):
    (tmp_path / "run.json").write_text("[1, 2]")  # a user's own run.json above: not a run of pilot's
    empty = tmp_path / "empty.md"
    empty.write_text("")
    for path in (tmp_path / "new" / "journal.md", empty):
        assert not_a_journal(path) is None
        append_entry(path, "first", ["one"])
        assert path.read_text().startswith(TITLE)
    append_entry(empty, "second", ["two"])
    text = empty.read_text()
    assert text.count(TITLE) == 1 and "one" in text and "two" in text


def test_a_journal_naming_a_run_s_record_refuses_the_line_naming_the_key(tmp_path, make_cfg):
    run = _a_run(tmp_path / "run")
    with pytest.raises(ConfigError, match=r"campaign\.journal=.*run\.json.*lies in the directory of the run"):
        validate(make_cfg("mode=estimate", f"campaign.journal={run / 'run.json'}"))
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match=r"is not a campaign journal.*Fix: campaign\.journal=<a new file"):
        validate(make_cfg("mode=estimate", f"campaign.journal={data}"))
    validate(make_cfg("mode=estimate", f"campaign.journal={tmp_path / 'journal.md'}"))  # a new one: fine


def test_the_command_line_is_refused_and_the_file_left_as_it_was(tmp_path):
    data = tmp_path / "notes.txt"
    data.write_text("my notes\n")
    done = run_pilot(tmp_path / "est", "mode=estimate", "run.threads=1", f"campaign.journal={data}")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "campaign.journal=" in done.stderr and "is not a campaign journal" in done.stderr
    assert data.read_text() == "my notes\n" and not (tmp_path / "est" / "run.json").exists()


@pytest.mark.parametrize("where", ["a_directory", "a_file/j.md", "/proc/pilot_nowhere/j.md"])
def test_a_journal_no_file_can_be_written_at_is_refused_before_the_run(tmp_path, make_cfg, where):
    """campaign.journal=/proc/x/j.md, or a directory: the whole pilot ran, exit 0, and only then a warning said
    the entry was not in the journal."""
    (tmp_path / "a_directory").mkdir()
    (tmp_path / "a_file").write_text("x")
    value = where if where.startswith("/") else str(tmp_path / where)
    with pytest.raises(ConfigError, match=r"campaign\.journal=.*cannot be appended to \(.*Fix: name a file you can"):
        validate(make_cfg("mode=estimate", f"campaign.journal={value}"))
    validate(make_cfg("mode=estimate", f"campaign.journal={tmp_path / 'new' / 'deeper' / 'j.md'}"))  # made then
    assert not (tmp_path / "new").exists()  # the check made nothing
