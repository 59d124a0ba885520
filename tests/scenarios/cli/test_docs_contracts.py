"""docs/cli-contracts.md's codec examples work as printed (issue 14: the subscription's
``allocation`` shape was undocumented and a guess failed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from scenarios.cli.main import app

DOC = Path(__file__).resolve().parents[3] / "docs" / "cli-contracts.md"


def _example() -> tuple[str, str]:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"\$ echo '(.*?)' \| groupsim codec encode subscription\n(\w+)\n", text, re.S)
    assert match is not None, "the subscription example is missing"
    return match.group(1), match.group(2)


def test_the_documented_subscription_encodes_to_the_documented_bytes() -> None:
    doc, hex_bytes = _example()
    runner = CliRunner()
    encoded = runner.invoke(app, ["codec", "encode", "subscription"], input=doc)
    assert encoded.exit_code == 0, encoded.output
    assert encoded.output.strip() == hex_bytes
    decoded = runner.invoke(app, ["codec", "decode", "subscription", hex_bytes])
    assert decoded.exit_code == 0, decoded.output
    assert json.loads(decoded.output)["allocation"]["tasks"] == ["c1-0"]


def test_the_documented_wrong_guess_fails_as_documented() -> None:
    guess = '{"version": 1, "url": "u", "config_offset": 0, "allocation": {"connectors": []}}'
    result = CliRunner().invoke(app, ["codec", "encode", "subscription"], input=guess)
    assert result.exit_code == 2
    assert "allocation.version: missing required key for an assignment" in result.output
    assert "allocation.version: missing required key for an assignment" in DOC.read_text()
