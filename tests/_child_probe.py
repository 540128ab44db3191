"""A job for tests/test_child_process.py:
``python -m tests._child_probe <out.json> [exit CODE|message | die CODE | sleep SECONDS | late SECONDS PATH]``
(``late``: sleeps, then writes PATH)."""

import json
import os
import sys
import time

import pilot.child_process

if __name__ == "__main__":
    out, action = sys.argv[1], sys.argv[2:]
    facts = {
        "pid": os.getpid(),
        "parent_marker": hasattr(pilot.child_process, "_parent_marker"),
        "env": {k: v for k, v in os.environ.items() if k.startswith("PILOT_")},
    }
    with open(out, "w") as handle:
        json.dump(facts, handle)
    print("probe ran", flush=True)
    if action[:1] == ["exit"]:
        sys.exit(f"probe says: exit {action[1]}" if action[1] == "message" else int(action[1]))
    if action[:1] == ["die"]:
        os._exit(int(action[1]))  # the process itself ends, as a crash or a kill would
    if action[:1] == ["sleep"]:
        time.sleep(float(action[1]))
    if action[:1] == ["late"]:
        time.sleep(float(action[1]))
        with open(action[2], "w") as handle:
            handle.write("written after the wait")
