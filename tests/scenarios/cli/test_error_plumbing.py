"""Issue 24 item 15: one way to report bad input. Every layer's input errors subclass
:class:`protocol.errors.InputError`, which the commands catch as their one type; the
one-line printer and ``--conf`` parser exist once, in ``scenarios/cli/errors.py``; no command
module imports ``scenarios.cli.main`` (the app imports them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from typer.testing import CliRunner

from members.assignors import UnknownAssignorError
from members.assignors.streams import StreamsAssignmentError
from protocol.connect import ConfigError
from protocol.connect_json import CodecInputError
from protocol.errors import InputError
from protocol.primitives import DecodeError, EncodeError
from scenarios.analysis.chaos_spark import CampaignOutError
from scenarios.assign.connect import AssignInputError
from scenarios.assign.streams import StreamsAssignInputError
from scenarios.cli.chaos_cmd import ChaosInputError
from scenarios.cli.errors import BadInput, parse_conf
from scenarios.cli.main import app
from scenarios.cli.outputs import OutputDirError
from scenarios.cli.report import ReportError
from scenarios.eventlog import LogFormatError
from scenarios.input.errors import ScenarioError
from scenarios.input.limits import LimitExceeded
from scenarios.input.sweep_file import SweepError
from scenarios.serve.config import ServeInputError

CLI = Path(__file__).resolve().parents[3] / "scenarios" / "cli"

INPUT_ERRORS = [
    DecodeError,
    EncodeError,
    ConfigError,
    CodecInputError,
    UnknownAssignorError,
    StreamsAssignmentError,
    LogFormatError,
    LimitExceeded,
    ScenarioError,
    SweepError,
    AssignInputError,
    StreamsAssignInputError,
    ServeInputError,
    CampaignOutError,
    BadInput,
    ChaosInputError,
    OutputDirError,
    ReportError,
]


@pytest.mark.parametrize("error", INPUT_ERRORS, ids=lambda e: e.__name__)
def test_every_layers_input_error_is_an_input_error(error: type[Exception]) -> None:
    assert issubclass(error, InputError)


def _defined(name: str) -> list[str]:
    return [
        path.name
        for path in sorted(CLI.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name in (name, f"_{name}")
    ]


def test_fail_and_parse_conf_are_defined_once() -> None:
    assert _defined("fail") == ["errors.py"]
    assert _defined("parse_conf") == ["errors.py"]
    assert _defined("bad_input_types") == []


def test_no_command_module_imports_the_app() -> None:
    importers = [
        path.name
        for path in sorted(CLI.glob("*.py"))
        if path.name != "main.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == "scenarios.cli.main"
    ]
    assert importers == []


def test_parse_conf() -> None:
    assert parse_conf(["a=1", " b =x=y", "a=2"]) == {"a": "2", "b": "x=y"}
    with pytest.raises(BadInput, match="--conf: expected KEY=VALUE, got 'nokey'"):
        parse_conf(["nokey"])


def test_an_input_error_from_the_lowest_layer_reaches_the_user_as_one_line() -> None:
    # protocol.primitives.DecodeError, raised three layers below the command
    result = CliRunner().invoke(app, ["codec", "decode", "assignment", "0002"])
    assert result.exit_code == 2
    assert result.output.startswith("groupsim: error: ") and result.output.count("\n") == 1
