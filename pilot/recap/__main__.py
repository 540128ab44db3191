"""``python -m pilot.recap DIR [DIR ...]``: see pilot/recap/__init__.py."""

from pilot.recap.entry import main

main()
