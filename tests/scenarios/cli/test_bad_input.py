"""Odd input to every command is one line on stderr and exit code 2, never a traceback
(docs/cli-contracts.md): bytes that are not UTF-8, JSON and TOML nested past any parser's
depth, an event log too large to check, a directory where a file belongs, seeds past
2^63 - 1. Each test runs ``groupsim`` in a subprocess in an empty directory, as a user
would, and looks at what is left there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.cli.choices import SEED_MAX
from scenarios.input.schema import INT64_MAX

#: A valid first record of an event log.
RUN_START = {
    "t_ms": 0,
    "seq": 0,
    "kind": "run_start",
    "log_version": 1,
    "scenario": "s",
    "seed": 1,
    "workers": [],
    "connectors": {},
}


def groupsim(
    cwd: Path, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``groupsim ARGS`` run in ``cwd`` (stdout and stderr captured as bytes)."""
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli.main", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def one_line_error(done: subprocess.CompletedProcess[bytes], *fragments: str) -> str:
    """The one error line of a run that exited 2, checked to hold every fragment."""
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("groupsim: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


# --------------------------------------------------------------------------- item 5


def test_assign_refuses_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "in.json").write_bytes(b'{"assignor": "\xff"}')
    done = groupsim(tmp_path, "assign", "in.json")
    one_line_error(done, "in.json: not UTF-8 text", "at byte 14")
    assert done.stdout == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.json"]


def test_assign_and_codec_encode_refuse_json_nested_past_the_limit(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text('{"rounds":\n  ' + nested_json(3000) + "}")
    one_line_error(
        groupsim(tmp_path, "assign", "deep.json"),
        "deep.json: line 2 column 102: 101 exceeds the limit of 100 nesting levels",
        "GROUPSIM_LIMITS=nesting_levels=N",
    )
    one_line_error(
        groupsim(tmp_path, "codec", "encode", "assignment", stdin=nested_json(3000).encode()),
        "stdin: line 1 column 101",
        "nesting levels",
    )
    # raised past what Python's parser can recurse into: still one line
    one_line_error(
        groupsim(
            tmp_path,
            "assign",
            "deep.json",
            env={"GROUPSIM_LIMITS": "nesting_levels=100000"},
        ),
        "deep.json: nested too deeply to parse",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep.json"]


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    doc = {"assignor": "[" * 500, "rounds": []}
    (tmp_path / "in.json").write_text(json.dumps(doc))
    one_line_error(groupsim(tmp_path, "assign", "in.json"), "unknown assignor")


def test_run_refuses_toml_nested_past_the_limit_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "deep.toml").write_text('name = "deep"\nx = ' + nested_json(3000) + "\n")
    done = groupsim(tmp_path, "run", "deep.toml", "--out", "out")
    one_line_error(done, "deep.toml: line 2 column 105: 101 exceeds the limit of 100 nesting")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep.toml"]


def test_check_refuses_a_log_line_nested_too_deeply(tmp_path: Path) -> None:
    line = '{"t_ms": 1, "seq": 1, "kind": "run_end", "x": ' + nested_json(1500) + "}"
    (tmp_path / "events.jsonl").write_text(json.dumps(RUN_START) + "\n" + line + "\n")
    one_line_error(groupsim(tmp_path, "check", "events.jsonl"), "events.jsonl:2: JSON nested")


# --------------------------------------------------------------------------- item 6


def test_check_bounds_a_line_and_never_echoes_it(tmp_path: Path) -> None:
    long_kind = {"t_ms": 1, "seq": 1, "kind": "k" * 5000}
    (tmp_path / "kind.jsonl").write_text(f"{json.dumps(RUN_START)}\n{json.dumps(long_kind)}\n")
    message = one_line_error(
        groupsim(tmp_path, "check", "kind.jsonl"), "kind.jsonl:2:", "unknown record kind"
    )
    assert len(message) < 300
    long_line = {"t_ms": 1, "seq": 1, "kind": "run_end", "groups": ["g" * 3000]}
    (tmp_path / "long.jsonl").write_text(f"{json.dumps(RUN_START)}\n{json.dumps(long_line)}\n")
    message = one_line_error(
        groupsim(tmp_path, "check", "long.jsonl", env={"GROUPSIM_LIMITS": "log_line_bytes=1000"}),
        "long.jsonl:2: line longer than the limit of 1000 bytes",
        "GROUPSIM_LIMITS=log_line_bytes=N",
    )
    assert "ggg" not in message


def test_check_bounds_the_file(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text(json.dumps(RUN_START) + "\n" * 2000)
    one_line_error(
        groupsim(tmp_path, "check", "events.jsonl", env={"GROUPSIM_LIMITS": "log_bytes=1000"}),
        "events.jsonl: ",
        "exceeds the limit of 1000 log bytes",
        "GROUPSIM_LIMITS=log_bytes=N",
    )


def test_check_prints_violations_without_echoing_long_names(tmp_path: Path) -> None:
    long_task = "t" * 100_000
    records = [
        RUN_START,
        {"t_ms": 5, "seq": 1, "kind": "task_started", "task": long_task, "generation": 1,
         "member": "w1"},
        {"t_ms": 6, "seq": 2, "kind": "task_started", "task": long_task, "generation": 1,
         "member": "w2"},
        {"t_ms": 7, "seq": 3, "kind": "run_end"},
    ]  # fmt: skip
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = groupsim(tmp_path, "check", "events.jsonl")
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode()
    assert "violation(s) in events.jsonl" in out
    assert long_task not in out
    assert max(len(line) for line in out.splitlines()) < 2000


# --------------------------------------------------------------------------- item 7


def test_check_of_a_directory_says_it_is_one(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    one_line_error(groupsim(tmp_path, "check", "out"), "out: is a directory, not an event log")
    one_line_error(groupsim(tmp_path, "check", "missing.jsonl"), "missing.jsonl: no such file")


def test_seeds_cap_at_the_scenario_seeds_cap(tmp_path: Path) -> None:
    assert SEED_MAX == INT64_MAX
    too_big = str(SEED_MAX + 1)
    for args in (
        ("run", "scale-out", "--seed", too_big),
        ("compat", "--seed", too_big),
        ("chaos", "--runs", "1", "--seed", too_big),
        ("serve", "--port", "0", "--seed", too_big),
        ("serve", "--port", "0", "--seed", "-1"),
    ):
        one_line_error(groupsim(tmp_path, *args), "--seed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("port", "bound"), [("99999", "65535"), ("65536", "65535"), ("-1", "0")])
def test_serve_refuses_a_port_out_of_range(tmp_path: Path, port: str, bound: str) -> None:
    one_line_error(groupsim(tmp_path, "serve", "--port", port), "--port", bound)
    assert list(tmp_path.iterdir()) == []
