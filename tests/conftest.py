"""Shared test set-up: hypothesis profiles (``HYPOTHESIS_PROFILE=long`` for deeper runs) and
the ``running_in_group`` fixture of the Ctrl-C tests."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from hypothesis import settings

settings.register_profile("default", max_examples=50, deadline=None)
settings.register_profile("long", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _running_in_group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` still running. A zombie has exited: whoever inherited
    it reaps it, and a container's init may be slow to."""
    import subprocess
    from pathlib import Path

    found = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout
    running = []
    for pid in found.split():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            running.append(int(pid))
    return running


@pytest.fixture
def running_in_group() -> Callable[[int], list[int]]:
    """``running_in_group(pgid)``: pids of the process group still running (zombies aside)."""
    return _running_in_group
