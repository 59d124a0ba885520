"""Issue 14: every command's ``--help`` reads cleanly: no ``<bool>`` after a flag, no
``{name}`` placeholders in a usage line, no default cut off with "…", at two widths; issue 24
item 9: no help text cut off either, and no line wider than the terminal."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from scenarios.cli.main import app


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    if hasattr(command, "commands"):  # a group
        for name, sub in sorted(command.commands.items()):
            yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


def test_every_command_is_covered() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"run", "compat", "chaos", "sweep", "report", "check", "assign"} <= names
    assert {"codec decode", "codec encode", "scenarios"} <= names


def _expected_default(param: Any) -> str | None:
    """The default text ``--help`` should show for ``param`` in full, or None."""
    if getattr(param, "is_flag", False):
        return None
    if getattr(param, "show_default", None) is False or param.default is None or param.required:
        return None
    if isinstance(param.show_default, str):
        return f"({param.show_default})"
    default = param.default
    if isinstance(default, enum.Enum):
        default = default.value
    if isinstance(default, list | tuple):
        return None
    return str(default)


@pytest.mark.parametrize("width", ["80", "120"])
@pytest.mark.parametrize(
    ("path", "command"), COMMANDS, ids=[" ".join(path) or "groupsim" for path, _ in COMMANDS]
)
def test_help_has_no_artefacts(path: tuple[str, ...], command: Any, width: str) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": width})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "<bool>" not in text
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert not re.search(r"\{\w+\}", usage), usage
    # rich cuts a word too long for its column with "…": only the help texts' own may show
    written = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
    assert text.count("…") == sum(help.count("…") for help in written), "text cut off"
    assert max(len(line) for line in text.splitlines()) <= int(width)
    flat = re.sub(r"[\s│]+", "", text)
    for param in command.params:
        expected = _expected_default(param)
        if expected is not None:
            wanted = "[default:" + re.sub(r"\s+", "", expected) + "]"
            assert wanted in flat, f"{param.name}: {wanted} not shown whole"


def test_version_and_top_level_help() -> None:
    version = CliRunner().invoke(app, ["--version"])
    assert version.exit_code == 0 and re.fullmatch(r"groupsim \d+\.\d+\.\d+\S*\n", version.output)
    assert "Kafka Streams" in CliRunner().invoke(app, ["--help"]).output
