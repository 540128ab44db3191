"""``python -m pilot.closing <export dir>`` (see ``pilot.closing.cli``)."""

import signal
import sys

try:
    from pilot.closing.cli import main
    from pilot.startup_signals import raise_from_now_on, signal_name_of
except KeyboardInterrupt:  # Ctrl-C while torch imports (a run's own check): stopped, nothing checked
    sys.exit(130)

if __name__ == "__main__":
    raise_from_now_on()  # run by hand: SIGTERM and SIGHUP stop it as Ctrl-C does, said below in one line
    try:
        sys.exit(main())
    except KeyboardInterrupt as stop:
        name = signal_name_of(stop)
        print(
            f"pilot.closing: stopped ({name}) before it finished; run it again to check the export",
            file=sys.stderr,
        )
        sys.exit(128 + signal.Signals[name].value)
