"""``python -m pilot.closing <export dir>`` (see ``pilot.closing.cli``)."""

import signal
import sys

try:
    from pilot.closing.cli import main
    from pilot.process_exit import exit_now
    from pilot.startup_signals import raise_from_now_on, signal_name_of
except KeyboardInterrupt:  # Ctrl-C while torch imports (a run's own check): stopped, nothing checked
    sys.exit(130)


def _stopped(stop: KeyboardInterrupt) -> int:
    name = signal_name_of(stop)
    print(f"pilot.closing: stopped ({name}) before it finished; run it again to check the export", file=sys.stderr)
    return 128 + signal.Signals[name].value


if __name__ == "__main__":
    raise_from_now_on()  # run by hand: SIGTERM and SIGHUP stop it as Ctrl-C does, said in one line
    # its own process (not a job of pilot.child_process's, which goes on): ended without teardown, a signal
    # from then on leaving with the verdict's exit code (the check is done), not a traceback
    leave = exit_now if sys.orig_argv[1:3] == ["-m", "pilot.closing"] else sys.exit
    code = None
    try:
        try:
            code = main()
        except KeyboardInterrupt as stop:
            code = _stopped(stop)
        leave(code)
    except KeyboardInterrupt as again:  # a second signal before ``exit_now`` took them: the first one's end
        leave(code if code is not None else 128 + signal.Signals[signal_name_of(again)].value)
