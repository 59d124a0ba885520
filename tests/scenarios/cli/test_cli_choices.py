"""scenarios.cli.choices: the enums of groupsim's fixed choices match what the code accepts,
show in --help, and a bad value is one line with exit code 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from scenarios.campaigns.chaos import ASSIGNOR_OF, FAULT_KINDS, PROTOCOLS
from scenarios.cli.choices import ChaosAssignor, ChaosProtocol, FaultKind, choices
from scenarios.cli.main import app


def test_chaos_enums_match_the_campaign_constants() -> None:
    assert tuple(p.value for p in ChaosProtocol) == PROTOCOLS
    assert tuple(f.value for f in FaultKind) == FAULT_KINDS
    assert {a.value for a in ChaosAssignor} == set(ASSIGNOR_OF.values())
    assert choices(ChaosProtocol) == "eager, compatible, sessioned, static"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["compat", "--format", "xml"], "'xml' is not one of 'table', 'json', 'markdown'"),
        (["report", ".", "--engine", "duckdb"], "'duckdb' is not one of 'auto', 'spark'"),
        (["codec", "decode", "metadata", "00"], "'metadata' is not one of 'subscription'"),
        (["chaos", "--assignor", "sticky"], "'sticky' is not one of 'eager'"),
        (["run", "--seed", "abc"], "'--seed'"),
    ],
)
def test_a_bad_choice_is_one_line_exit_2(args: list[str], fragment: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("groupsim: error: Invalid value for ")
    assert fragment in lines[0]


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["compat", "--help"], "table|json|markdown"),
        (["report", "--help"], "auto|spark|pyarrow"),
        (["chaos", "--help"], "eager|incremental_cooperative|static"),
    ],
)
def test_choices_show_in_help(args: list[str], shown: str) -> None:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert shown in result.output
