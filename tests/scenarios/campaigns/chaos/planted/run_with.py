"""``python run_with.py BUG ARGS...``: the ``groupsim`` command line (``ARGS``) with the planted
bug ``BUG`` of the catalogue applied, so that tests can run a campaign against a bug as a user
runs ``groupsim chaos`` (a subprocess, real signals). The campaign's worker processes are
forked, so they inherit the patch."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[4]), str(HERE.parent)]

from planted import by_name  # noqa: E402

from scenarios.cli.main import app  # noqa: E402

if __name__ == "__main__":
    with by_name(sys.argv[1]).applied():
        app(args=sys.argv[2:], prog_name="groupsim")
