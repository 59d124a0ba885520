"""The ``groupsim`` command line: outputs, exit codes and one-line errors (docs/commands.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scenarios.cli.main import app

runner = CliRunner()

V2_ASSIGNMENT_HEX = (
    "0002000000027731000e687474703a2f2f77313a383038330000000000000005"
    "000000010002633100000002ffffffff00000000"
    "000000010002633200000001000000010000002"
    "8"
)


def invoke(*args: str, stdin: str | None = None):
    return runner.invoke(app, list(args), input=stdin)


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert text.startswith("groupsim: error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in text


def test_run_writes_outputs_and_exits_zero(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke("run", "scale-out", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "all expectations hold" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["events.jsonl", "summary.json", "timeline.png"]
    first = json.loads((out / "events.jsonl").read_text().splitlines()[0])
    assert first["kind"] == "run_start" and first["log_version"] == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["converged"] is True and summary["seed"] == 1


def test_run_exits_one_when_an_expectation_fails(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'name = "strict"\n[cluster]\nsize = 2\n[workload.generate]\ncount = 1\ntasks = 2\n'
        "[expect]\nmax_rebalances = 0\n"
    )
    result = invoke("run", str(scenario), "--out", str(tmp_path / "o"), "--no-plot")
    assert result.exit_code == 1, result.output
    assert "max_rebalances" in result.output


def test_run_rejects_a_bad_scenario_without_leaving_files(tmp_path: Path) -> None:
    scenario = tmp_path / "bad.toml"
    scenario.write_text(
        'name = "bad"\n[cluster]\nsize = 2\n[[timeline]]\nat_ms = 5\n'
        'action = "crash"\nmember = "w9"\n'
    )
    out = tmp_path / "out"
    result = invoke("run", str(scenario), "--out", str(out))
    assert_one_line_error(result, "bad.toml", "timeline[0].member", "w9")
    assert not out.exists()


def test_run_rejects_an_unknown_library_name() -> None:
    assert_one_line_error(invoke("run", "no-such-scenario"), "no-such-scenario")


def test_same_seed_same_log_through_the_cli(tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert (
            invoke(
                "run",
                "worker-bounce-within-delay",
                "--seed",
                "7",
                "--out",
                str(tmp_path / name),
                "--no-plot",
            ).exit_code
            == 0
        )
    assert (tmp_path / "a/events.jsonl").read_bytes() == (tmp_path / "b/events.jsonl").read_bytes()


def test_check_finds_nothing_in_a_clean_log_and_a_planted_double_owner(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert invoke("run", "scale-out", "--out", str(out), "--no-plot").exit_code == 0
    clean = invoke("check", str(out / "events.jsonl"))
    assert clean.exit_code == 0 and "0 violation(s)" in clean.output

    lines = (out / "events.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    started = next(r for r in records if r["kind"] == "task_started")
    other = "w2" if started["member"] != "w2" else "w1"
    planted = dict(started, kind="task_start", member=other, seq=started["seq"])
    records.insert(records.index(started) + 1, planted)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    result = invoke("check", str(bad))
    assert result.exit_code == 1
    assert "double_ownership" in result.output


def test_check_rejects_a_missing_or_malformed_log(tmp_path: Path) -> None:
    assert_one_line_error(invoke("check", str(tmp_path / "nope.jsonl")), "nope.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    assert_one_line_error(invoke("check", str(broken)), "broken.jsonl")


def test_codec_decode_then_encode_gives_the_same_bytes() -> None:
    decoded = invoke("codec", "decode", "assignment", V2_ASSIGNMENT_HEX)
    assert decoded.exit_code == 0, decoded.output
    obj = json.loads(decoded.output)
    assert obj == {
        "version": 2,
        "error": 0,
        "leader": "w1",
        "leader_url": "http://w1:8083",
        "config_offset": 5,
        "connectors": ["c1"],
        "tasks": ["c1-0"],
        "revoked_connectors": [],
        "revoked_tasks": ["c2-1"],
        "delay_ms": 40,
    }
    encoded = invoke("codec", "encode", "assignment", stdin=decoded.output)
    assert encoded.exit_code == 0 and encoded.output.strip() == V2_ASSIGNMENT_HEX


def test_codec_subscription_round_trip_and_version_override() -> None:
    sub = {"version": 2, "url": "http://w1:8083", "config_offset": 5, "allocation": None}
    encoded = invoke("codec", "encode", "subscription", stdin=json.dumps(sub))
    assert encoded.output.strip() == "0002000e687474703a2f2f77313a383038330000000000000005ffffffff"
    v0 = invoke("codec", "encode", "subscription", "--version", "0", stdin=json.dumps(sub))
    assert v0.output.strip() == "0000000e687474703a2f2f77313a383038330000000000000005"
    back = invoke("codec", "decode", "subscription", encoded.output.strip())
    assert json.loads(back.output) == sub


@pytest.mark.parametrize(
    ("args", "stdin", "fragments"),
    [
        (
            ("codec", "decode", "assignment", "00020000000277"),
            None,
            ["assignment.leader", "offset 4"],
        ),
        (("codec", "decode", "assignment", "zz"), None, ["HEX"]),
        (("codec", "decode", "metadata", "00"), None, ["metadata"]),
        (("codec", "encode", "assignment"), "[1]", ["JSON object"]),
        (("codec", "encode", "assignment"), "{", ["invalid JSON"]),
        (("codec", "encode", "assignment", "--version", "9"), "{}", ["--version"]),
    ],
)
def test_codec_bad_input_is_one_line(args, stdin, fragments) -> None:
    assert_one_line_error(invoke(*args, stdin=stdin), *fragments)


def test_assign_prints_rounds_and_rejects_bad_input(tmp_path: Path) -> None:
    doc = {
        "assignor": "eager",
        "protocol": "default",
        "rounds": [
            {
                "time_ms": 0,
                "generation": 1,
                "connectors": {"c1": 2},
                "members": {"leader": {}, "member": {}},
            }
        ],
    }
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    result = invoke("assign", str(path))
    assert result.exit_code == 0, result.output
    members = json.loads(result.output)["rounds"][0]["members"]
    # Kafka's EagerAssignor: connectors first, then tasks, one round-robin over sorted ids.
    assert members["leader"]["connectors"] == ["c1"] and members["leader"]["tasks"] == ["c1-1"]
    assert members["member"]["connectors"] == [] and members["member"]["tasks"] == ["c1-0"]

    doc["assignor"] = "sticky"
    path.write_text(json.dumps(doc))
    assert_one_line_error(invoke("assign", str(path)), "sticky")


def test_scenarios_lists_the_library() -> None:
    result = invoke("scenarios")
    assert result.exit_code == 0
    assert "rolling-upgrade-eager-to-sessioned (default)" in result.output
    assert "connect-system-test-bounce" in result.output


def test_assign_routes_streams_assignors(tmp_path: Path) -> None:
    doc = {
        "assignor": "high_availability",
        "config": {"num.standby.replicas": 1},
        "clients": [
            {
                "id": "PID_1",
                "capacity": 1,
                "prev_active": ["0_0"],
                "task_lags": {"0_0": 0, "0_1": 100},
            },
            {
                "id": "PID_2",
                "capacity": 1,
                "prev_active": ["0_1"],
                "task_lags": {"0_0": 50, "0_1": 0},
            },
        ],
        "tasks": {
            "stateful": ["0_0", "0_1"],
            "stateless": ["1_0"],
            "subtopologies": {"0": ["0_0", "0_1"], "1": ["1_0"]},
        },
    }
    path = tmp_path / "streams.json"
    path.write_text(json.dumps(doc))
    result = invoke("assign", str(path))
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    # KIP-441: each caught-up previous owner keeps its active; the standby goes to the other.
    assert out["clients"]["PID_1"] == {"active": ["0_0", "1_0"], "standby": ["0_1"]}
    assert out["clients"]["PID_2"] == {"active": ["0_1"], "standby": ["0_0"]}
    assert out["probing_rebalance_needed"] is False
    path.write_text(json.dumps({"assignor": "rack_aware", "clients": []}))
    assert_one_line_error(invoke("assign", str(path)), "optimize")


def test_chaos_sweep_and_report_are_commands(tmp_path: Path) -> None:
    result = invoke(
        "chaos",
        "--runs",
        "4",
        "--seed",
        "3",
        "--members",
        "3..4",
        "--duration",
        "5m",
        "--jobs",
        "1",
        "--out",
        str(tmp_path / "chaos"),
    )
    assert result.exit_code == 0, result.output
    assert "violations" in result.output
    assert_one_line_error(invoke("chaos", "--duration", "soon"), "--duration")
    assert invoke("sweep", "--help").exit_code == 0
    missing = invoke("report", str(tmp_path / "nothing-here"))
    assert missing.exit_code == 2 and "nothing-here" in missing.output


def test_run_routes_streams_scenarios(tmp_path: Path) -> None:
    out = tmp_path / "streams"
    result = invoke("run", "kip-441-scale-out", "--out", str(out), "--no-plot")
    assert result.exit_code == 0, result.output
    first = json.loads((out / "events.jsonl").read_text().splitlines()[0])
    assert first["kind"] == "run_start"
    assert "kip-441-scale-out" in invoke("scenarios").output


def test_check_allow_known_excuses_named_upstream_issues_but_lists_them(tmp_path: Path) -> None:
    """Issue 14: KAFKA-13816's double ownership (a downgrade to eager) fails a plain check,
    passes with --allow-known, and is listed either way."""
    runner = CliRunner()
    ran = runner.invoke(
        app, ["run", "downgrade-sessioned-to-eager", "--out", str(tmp_path), "--no-plot"]
    )
    assert ran.exit_code == 0, ran.output
    log = str(tmp_path / "events.jsonl")
    strict = runner.invoke(app, ["check", log])
    allowed = runner.invoke(app, ["check", "--allow-known", log])
    assert strict.exit_code == 1 and allowed.exit_code == 0
    for result in (strict, allowed):
        assert '"known_issue": "KAFKA-13816"' in result.output
    assert "(allowed by --allow-known)" in allowed.output


def test_output_files_honour_the_umask(tmp_path: Path) -> None:
    """Issue 14: outputs are written under a temporary name (mode 0600) but renamed with the
    permissions a plain open() gives, and a new run replaces the previous run's set."""
    import os

    old = os.umask(0o022)
    try:
        (tmp_path / "timeline.png").write_bytes(b"previous run")
        result = CliRunner().invoke(app, ["run", "scale-out", "--out", str(tmp_path), "--no-plot"])
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["events.jsonl", "summary.json"]  # no stale timeline, no staging dir
    for name in names:
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644


def test_run_out_is_checked_before_simulating(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(app, ["run", "--out", str(blocker)])
    assert result.exit_code == 2
    expected = f"groupsim: error: --out: {blocker} exists and is not a directory"
    assert result.output.strip() == expected
    inside = CliRunner().invoke(app, ["run", "--out", str(blocker / "sub")])
    assert inside.exit_code == 2 and inside.output.count("\n") == 1


def test_unknown_assignor_lists_connect_and_streams_assignors() -> None:
    result = invoke("assign", "-", stdin='{"assignor": "sticky", "rounds": []}')
    assert_one_line_error(
        result, "assignor: unknown assignor 'sticky'", "incremental_cooperative", "rack_aware"
    )


@pytest.mark.parametrize("command", [["run"], ["compat"], ["chaos", "--runs", "1"]])
def test_negative_seeds_are_rejected(command: list[str]) -> None:
    assert_one_line_error(invoke(*command, "--seed", "-1"), "--seed")


def test_every_library_scenario_defaults_to_seed_1() -> None:
    """Issue 14: library files of every kind say the same default seed."""
    from scenarios.input.library import library_names, load_any

    for kind in ("connect", "streams", "consumer"):
        names = library_names(kind)
        assert names
        assert {name: load_any(name).scenario.seed for name in names} == dict.fromkeys(names, 1)
