"""A line every minute while a long step runs (pilot/still_running.py)."""

from __future__ import annotations


def test_a_long_step_says_every_interval_that_it_still_runs_and_a_short_one_says_nothing(caplog):
    import logging
    import time

    from pilot.still_running import still_running

    with caplog.at_level(logging.INFO, logger="pilot"):
        with still_running("step quick", every_s=5.0):
            time.sleep(0.05)
        with still_running("step long", every_s=0.2):
            time.sleep(0.7)
    assert "step quick" not in caplog.text
    assert caplog.text.count("step long still running") >= 2
