"""scenarios.eventlog: emission, subscribers, structlog routing, JSONL round trip, errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import structlog

from scenarios.eventlog import (
    LOG_VERSION,
    EventLog,
    LogFormatError,
    read_jsonl,
    write_jsonl,
    write_records_jsonl,
)


def test_emit_builds_records_in_order() -> None:
    log = EventLog()
    first = log.emit(0, "run_start", log_version=LOG_VERSION, scenario="s", seed=3)
    second = log.emit(12000, "sync_group_response", member="w2", generation=4, error="NONE")
    assert first == {
        "t_ms": 0,
        "seq": 0,
        "kind": "run_start",
        "log_version": 1,
        "scenario": "s",
        "seed": 3,
    }
    assert list(second) == ["t_ms", "seq", "kind", "member", "generation", "error"]
    assert second["seq"] == 1 and second["t_ms"] == 12000
    assert log.records == [first, second]
    assert len(log) == 2


def test_emit_goes_through_structlog() -> None:
    log = EventLog()
    assert isinstance(log._logger, structlog.BoundLogger)
    # a record field named "event" does not clash with structlog's event key
    record = log.emit(5, "x", event="e")
    assert record == {"t_ms": 5, "seq": 0, "kind": "x", "event": "e"}


def test_seq_cannot_be_overridden() -> None:
    log = EventLog()
    with pytest.raises(ValueError, match="seq is assigned"):
        log.emit(0, "x", seq=5)
    assert log.records == []


def test_subscribers_get_every_record_and_reentrant_emits_stay_ordered() -> None:
    log = EventLog()
    first_seen: list[int] = []
    second_seen: list[int] = []

    def checker(record: dict) -> None:
        first_seen.append(record["seq"])
        if record["kind"] == "task_start":
            log.emit(record["t_ms"], "violation", invariant="double_ownership")

    log.subscribe(checker)
    log.subscribe(lambda r: second_seen.append(r["seq"]))
    log.emit(1, "a")
    log.emit(2, "task_start")
    log.emit(3, "b")
    assert [r["kind"] for r in log.records] == ["a", "task_start", "violation", "b"]
    assert first_seen == [0, 1, 2, 3]
    assert second_seen == [0, 1, 2, 3]
    assert log.records[2]["t_ms"] == 2


def test_unsubscribe_and_keep_false(tmp_path: Path) -> None:
    log = EventLog(keep=False)
    seen: list[str] = []
    log.subscribe(seen.append)  # type: ignore[arg-type]
    log.emit(0, "a")
    log.unsubscribe(seen.append)  # type: ignore[arg-type]
    log.emit(0, "b")
    assert [r["kind"] for r in seen] == ["a"]  # type: ignore[index]
    assert log.records == []
    assert len(log) == 2
    with pytest.raises(RuntimeError):
        log.write_jsonl(tmp_path / "x.jsonl")


def test_round_trip(tmp_path: Path) -> None:
    log = EventLog()
    log.emit(
        0, "run_start", log_version=1, scenario="s", seed=0, workers=["w1"], connectors={"c": 2}
    )
    log.emit(5, "generation", generation=1, protocol=None, leader=None, leader_id=None, members=[])
    log.emit(9, "run_end")
    path = tmp_path / "events.jsonl"
    log.write_jsonl(path)
    text = path.read_text()
    assert text.splitlines()[1] == (
        '{"t_ms":5,"seq":1,"kind":"generation","generation":1,"protocol":null,'
        '"leader":null,"leader_id":null,"members":[]}'
    )
    assert text.endswith("\n") and text.count("\n") == 3
    assert read_jsonl(path) == log.records
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]  # no temp file left


def test_write_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("old\n")

    class Boom:
        pass

    records = [
        {"t_ms": 0, "seq": 0, "kind": "run_start", "log_version": 1},
        {"t_ms": 1, "seq": 1, "kind": "bad", "value": Boom()},
    ]
    with pytest.raises(TypeError):
        write_jsonl(records, path)
    assert path.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["events.jsonl"]
    with pytest.raises(OSError):
        write_jsonl(records[:1], tmp_path / "missing-dir" / "e.jsonl")


def test_write_records_jsonl_is_write_jsonl() -> None:
    assert write_records_jsonl is write_jsonl


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "e.jsonl"
    path.write_text(text)
    return path


START = '{"t_ms":0,"seq":0,"kind":"run_start","log_version":1}\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (START + '{"t_ms":1,"seq":1,"kind":\n', ":2: malformed JSON: "),
        (START + "\n[1, 2]\n", ":3: expected a JSON object, got list"),
        (START + '{"seq":1,"kind":"x"}\n', ":2: record has no int 't_ms'"),
        (START + '{"t_ms":1,"seq":true,"kind":"x"}\n', ":2: record has no int 'seq'"),
        (START + '{"t_ms":1,"seq":1,"kind":3}\n', ":2: record has no str 'kind'"),
        ('{"t_ms":0,"seq":0,"kind":"run_start"}\n', ":1: first record has no log_version"),
        (
            '{"t_ms":0,"seq":0,"kind":"run_start","log_version":2}\n',
            ":1: unsupported log_version 2 (this groupsim reads 1)",
        ),
        ("\n\n", ":1: empty log (no records)"),
    ],
)
def test_read_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(LogFormatError) as info:
        read_jsonl(path)
    message = str(info.value)
    assert message.startswith(f"{path}{expected}")
    assert "\n" not in message


def test_read_skips_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, START + "\n" + '{"t_ms":3,"seq":1,"kind":"run_end","extra":[1]}\n')
    assert read_jsonl(path)[1] == {"t_ms": 3, "seq": 1, "kind": "run_end", "extra": [1]}


def test_many_emits_keep_order_and_reach_subscribers() -> None:
    # Speed is measured in benchmarks, not asserted here.
    log = EventLog()
    seen: list[int] = []
    log.subscribe(lambda r: seen.append(r["seq"]))
    n = 5_000
    for i in range(n):
        log.emit(i, "task_started", member="w1", task="c-1", generation=3)
    assert len(log.records) == n
    assert seen == list(range(n))
