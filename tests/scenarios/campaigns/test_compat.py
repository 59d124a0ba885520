"""`groupsim compat`: the protocol compatibility matrix."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from protocol.connect import ConnectProtocol
from scenarios.campaigns.compat import SETTINGS, run_matrix
from scenarios.cli.main import app


@pytest.fixture(scope="module")
def rows():
    return run_matrix(1)


def test_every_mix_and_path_is_replayed(rows) -> None:
    mixes = [r for r in rows if r.kind == "mix"]
    paths = [r for r in rows if r.kind == "path"]
    assert len(mixes) == 10 + 20  # pairs and triples, with repetition, of 4 settings
    assert len(paths) == 4 * 3
    assert all(r.converged for r in rows)


def test_a_mix_settles_on_the_lowest_common_protocol(rows) -> None:
    for row in (r for r in rows if r.kind == "mix"):
        lowest = min(
            (ConnectProtocol.from_setting(s) for s in row.case.split("+")),
            key=lambda p: p.version,
        )
        assert row.settled_protocol == lowest.protocol_name, row.case
        assert row.signing == ("on" if lowest.version >= 2 else "off")


def test_upgrades_move_up_once_the_last_old_worker_is_gone(rows) -> None:
    by_case = {r.case: r for r in rows}
    assert by_case["eager → sessioned"].protocols == ["default", "sessioned"]
    assert by_case["eager → sessioned"].signing == "off→on"
    assert by_case["sessioned → static"].protocols == ["sessioned", "static"]
    assert by_case["sessioned → static"].signing == "on"


def test_downgrades_to_eager_show_kafka_13816_and_nothing_else_is_unsafe(rows) -> None:
    for row in rows:
        to_eager = (
            row.kind == "path" and row.case.endswith("→ eager") and not row.case.startswith("eager")
        )
        if to_eager:
            assert row.double_ownership > 0 and set(row.violations) == {"KAFKA-13816"}
            assert row.unsafe(allow_known=False) and not row.unsafe(allow_known=True)
        else:
            assert not row.unsafe(allow_known=False), row.case


def test_cli_formats_and_exit_codes() -> None:
    runner = CliRunner()
    strict = runner.invoke(app, ["compat"])
    assert strict.exit_code == 1 and "KAFKA-13816" in strict.output
    as_json = runner.invoke(app, ["compat", "--format", "json", "--allow-known"])
    assert as_json.exit_code == 0
    parsed = json.loads(as_json.output)
    assert {row["case"] for row in parsed} >= {"+".join([s, s]) for s in SETTINGS}
    assert all(row["safe"] is True for row in parsed)  # as the table's "safe" column
    strict_out = runner.invoke(app, ["compat", "--format", "json"]).output
    strict_json = json.loads(strict_out[: strict_out.rindex("]") + 1])  # then stderr's line
    unsafe = {row["case"] for row in strict_json if not row["safe"]}
    assert unsafe and unsafe == {
        row["case"] for row in strict_json if row["violations"].get("KAFKA-13816")
    }
    for row in strict_json:  # the table prints every case name whole
        assert row["case"] in strict.output
    markdown = runner.invoke(app, ["compat", "--format", "markdown", "--allow-known"])
    assert markdown.output.startswith("| kind | case |")
    bad = runner.invoke(app, ["compat", "--format", "xml"])
    assert bad.exit_code == 2
