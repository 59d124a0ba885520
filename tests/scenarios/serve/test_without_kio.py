"""Without the serve extra, groupsim still starts and ``serve`` says what to install."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner


def test_serve_without_kio_is_one_line_and_exit_code_2(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "kio", None)  # "import kio" raises ImportError
    from scenarios.cli.main import app

    result = CliRunner().invoke(app, ["serve", "--port", "0"])
    assert result.exit_code == 2
    assert (
        result.output.strip()
        == "groupsim: error: groupsim serve needs kio: pip install 'groupsim[serve]'"
    )
