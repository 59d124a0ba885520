"""The typed event-log records (scenarios/eventlog/records.py) against real logs.

Every record of every library scenario (Connect and Kafka Streams) and chaos reproducer, at
seeds 1 and 7, with heartbeat RPCs logged too, must decode into its kind's Struct and encode
back to the very same JSON line (key order included): the Structs are the log's closed schema.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from scenarios.check.log_check import check_log
from scenarios.eventlog import (
    RECORD_TYPES,
    LogFormatError,
    decode_record,
    kinds_serve,
    read_jsonl,
    read_typed,
    record_to_dict,
    write_jsonl,
)
from scenarios.eventlog.kinds import Assignment, Fault
from scenarios.eventlog.kinds_streams import ActiveTaskStart
from scenarios.eventlog.records import LogRecord
from scenarios.input.library import (
    consumer_library_dir,
    library_dir,
    load_any,
    streams_library_dir,
)
from scenarios.input.loader import load_scenario
from scenarios.input.streams import load_streams_scenario, loads_streams_scenario
from scenarios.sim.runner import simulate
from scenarios.sim.runner import simulate as simulate_streams

ROOT = Path(__file__).resolve().parents[3]
REPRO = ROOT / "tests" / "scenarios" / "campaigns" / "chaos" / "repro"
CONSUMER = ROOT / "tests" / "scenarios" / "consumer"
DOC = ROOT / "docs" / "event-log.md"
_encoder = msgspec.json.Encoder()

# Kinds no library scenario or reproducer writes (real records from chaos runs below).
RARE_KINDS = {
    "static_config_ignored",
    "internal_request_rejected",
    # the coordinator's join timer re-armed for static stragglers only, and a KIP-394 pending
    # member id forgotten: chaos reaches them (docs/chaos.md, Contract rules), no library run
    "join_rescheduled",
    "member_pending_removed",
    # the wire tap's JoinGroup of a known member in CompletingRebalance: chaos reaches it (a
    # SyncGroup held past request.timeout.ms), no library run; its test decodes real ones
    "completing_join",
}
# Kinds only ``groupsim serve`` writes (tests/scenarios/serve/test_served_log_records.py round-trips
# them). (The wire tap's ``bounded_join`` and the Streams ``stream_thread_stall`` were rare
# until chaos reproducers with session bounds and a stalled stream thread joined the library.)
SERVE_KINDS = {getattr(kinds_serve, name).__struct_config__.tag for name in kinds_serve.__all__}
# The coordinator's traffic, logged only for the Kafka referee (``coordinator_io``;
# tests/scenarios/sim/test_coordinator_io.py decodes them).
IO_KINDS = {
    "coordinator_opened",
    "coordinator_request",
    "coordinator_response",
    "coordinator_timer",
}


def _cases() -> list[tuple[str, Path]]:
    connect = [(f"connect/{p.stem}", p) for p in sorted(library_dir().glob("*.toml"))]
    streams = [(f"streams/{p.stem}", p) for p in sorted(streams_library_dir().glob("*.toml"))]
    repro = [(f"repro/{p.stem}", p) for p in sorted(REPRO.glob("*.toml"))]
    consumer = [
        (f"consumer/{p.stem}", p)
        for p in sorted([*CONSUMER.glob("*.toml"), *consumer_library_dir().glob("*.toml")])
    ]
    return connect + streams + repro + consumer


def _run(key: str, path: Path, seed: int, heartbeats: bool) -> list[dict]:
    if key.startswith("streams/"):
        return simulate_streams(
            load_streams_scenario(path), seed, log_heartbeats=heartbeats
        ).records
    return simulate(load_any(path), seed, log_heartbeats=heartbeats).records


_PARAMS = [
    pytest.param(
        key,
        path,
        seed,
        heartbeats,
        id=f"{key}@{seed}{'+hb' if heartbeats else ''}",
        # heartbeat logs are long: the default run logs them for the library at seed 1 only
        marks=[pytest.mark.slow] if heartbeats and (seed == 7 or key.startswith("repro/")) else [],
    )
    for key, path in _cases()
    for seed in (1, 7)
    for heartbeats in (False, True)
]
# (case, seed, heartbeats) -> the kinds its log holds, filled by the round-trip test
_KINDS: dict[tuple[str, int, bool], set[str]] = {}


@pytest.mark.parametrize(("key", "path", "seed", "heartbeats"), _PARAMS)
def test_every_record_decodes_and_reencodes_to_the_same_line(
    key: str, path: Path, seed: int, heartbeats: bool
) -> None:
    records = _run(key, path, seed, heartbeats)
    data = _encoder.encode_lines(records)
    typed = _typed.decode(b"[" + data.replace(b"\n", b",").rstrip(b",") + b"]")
    again = _encoder.encode_lines([record_to_dict(struct) for struct in typed])
    if again != data:  # name the first record that differs
        for line, struct in zip(data.splitlines(), typed, strict=True):
            assert _encoder.encode(record_to_dict(struct)) == line
    assert [decode_record(r) for r in records[:: max(1, len(records) // 200)]] == typed[
        :: max(1, len(records) // 200)
    ]
    kinds = _KINDS[(key, seed, heartbeats)] = {r["kind"] for r in records}
    assert ("heartbeat_request" in kinds) is heartbeats


_typed = msgspec.json.Decoder(list[LogRecord])


def test_the_runs_write_every_kind_but_the_rare_ones() -> None:
    seen: set[str] = {"heartbeat_request", "heartbeat_response"}
    for key, path in _cases():
        if (key, 1, False) not in _KINDS:
            _KINDS[(key, 1, False)] = {r["kind"] for r in _run(key, path, 1, False)}
        seen |= _KINDS[(key, 1, False)]
    expected = set(RECORD_TYPES) - RARE_KINDS - SERVE_KINDS - IO_KINDS
    assert expected <= seen, sorted(expected - seen)
    assert not RARE_KINDS & seen, "a rare kind is now written by the library: drop it from RARE"
    assert not SERVE_KINDS & seen, "a simulated run wrote a serve-only kind"
    assert not IO_KINDS & seen, "an ordinary run logged its coordinator's traffic"


_STALL = """
kind = "streams"
name = "stall"
settle_ms = 200000

[config]
"max.poll.interval.ms" = 60000

[[subtopologies]]
id = 0
partitions = 4
stateful = false

[[clients]]
name = "c1"

[[clients]]
name = "c2"

[[timeline]]
at_ms = 30000
action = "slow"
client = "c2"
stall_ms = 90000
"""


def test_a_stalled_stream_thread_round_trips() -> None:
    """A ``slow`` fault on a Streams client: ``stream_thread_stall``, then the poll timeout's
    ``leave_group`` and lost tasks, all decode and re-encode to the same lines."""
    records = simulate_streams(loads_streams_scenario(_STALL), 1).records
    data = _encoder.encode_lines(records)
    typed = _typed.decode(b"[" + data.replace(b"\n", b",").rstrip(b",") + b"]")
    for line, struct in zip(data.splitlines(), typed, strict=True):
        assert _encoder.encode(record_to_dict(struct)) == line
    stall = [r for r in records if r["kind"] == "stream_thread_stall"]
    assert [(r["member"], r["stall_ms"]) for r in stall] == [("c2", 90_000)]
    leaves = [(r["member"], r["reason"]) for r in records if r["kind"] == "leave_group"]
    assert leaves == [("c2", "poll timeout expired")]
    lost = {
        r["reason"]
        for r in records
        if r["kind"] == "active_task_stopped" and r["member"] == "c2" and r["t_ms"] == 90_000
    }
    assert lost == {"lost: poll timeout expired"}


def test_every_kind_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [k for k in RECORD_TYPES if f"`{k}`" not in text]
    assert not missing, missing


def _line(**fields: object) -> dict:
    return {"t_ms": 5, "seq": 3, **fields}


RARE = [
    _line(kind="static_config_ignored", protocol="sessioned", member="w1"),
    _line(
        kind="internal_request_rejected",
        origin="w2",
        connector="c1",
        tasks=3,
        validation=True,
        reason="unknown session key 4",
        member="w1",
    ),
    _line(
        kind="internal_request",
        to="w1",
        connector="c2",
        tasks=3,
        key_id=None,
        signed=False,
        member="w2",
    ),
    _line(
        kind="internal_request_verified",
        origin="w2",
        connector="c2",
        tasks=3,
        validation=False,
        reason=None,
        member="w1",
    ),
    _line(
        kind="late_request",
        member="w1",
        request="heartbeat",
        generation=1,
        sent_ms=30004,
        delay_ms=8000,
        error="ILLEGAL_GENERATION",
        dropped=False,
    ),
    _line(
        kind="late_request",
        member="w2",
        request="join_group",
        sent_ms=100,
        delay_ms=50,
        error=None,
        dropped=False,
    ),
    _line(
        kind="completing_join",
        member_id="w1-1",
        same_metadata=True,
        group_generation=2,
        error="NONE",
        generation=2,
        member="w1",
    ),
    _line(
        kind="completing_join",
        member_id="w2-1",
        same_metadata=False,
        group_generation=2,
        error=None,
        generation=None,
        member="w2",
    ),
]


@pytest.mark.parametrize("record", RARE, ids=lambda r: r["kind"])
def test_rare_kinds_round_trip(record: dict) -> None:
    assert record_to_dict(decode_record(record)) == record
    assert list(record_to_dict(decode_record(record))) == list(record)


def test_absent_stays_absent_and_null_stays_null() -> None:
    stateless = _line(kind="active_task_start", task="0_1", generation=2, lag=None, member="a")
    typed = decode_record(stateless)
    assert isinstance(typed, ActiveTaskStart) and typed.lag is None
    assert record_to_dict(typed) == stateless
    fault = _line(kind="fault", fault="heal", member="w1")
    assert isinstance(decode_record(fault), Fault)
    assert record_to_dict(decode_record(fault)) == fault  # no duration_ms: null
    streams = _line(
        kind="assignment",
        member_id="a-1",
        generation=3,
        protocol="stream",
        leader_id="a-1",
        error=0,
        active=["0_0"],
        standby=[],
        revoked=[],
        next_rebalance_ms=None,
        member="a",
    )
    assert isinstance(decode_record(streams), Assignment)
    assert record_to_dict(decode_record(streams)) == streams


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (_line(kind="phase", name="p", extra=1), "Object contains unknown field `extra`"),
        (_line(kind="phase"), "Object missing required field `name`"),
        (_line(kind="phase", name=7), "Expected `str`, got `int` - at `$.name`"),
        (_line(kind="teleport"), "Invalid value 'teleport' - at `$.kind`"),
        (
            _line(
                kind="assignment",
                member_id="w1-1",
                generation=1,
                protocol="sessioned",
                leader_id="w1-1",
                error=0,
                active=[],
                member="w1",
            ),
            "expected either the Connect fields",
        ),
    ],
    ids=["unknown-field", "missing", "wrong-type", "unknown-kind", "mixed-assignment"],
)
def test_decode_record_rejects_malformed_records(record: dict, problem: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=re.escape(problem)):
        decode_record(record)


@pytest.fixture(scope="module")
def saved_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("log") / "events.jsonl"
    write_jsonl(simulate(load_scenario(library_dir() / "scale-out.toml"), 1).records, path)
    return path


def _tamper(saved: Path, tmp_path: Path, find: str, **change: object) -> tuple[Path, int]:
    lines = saved.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if f'"kind":"{find}"' in line)
    record = json.loads(lines[index])
    record.update(change)
    lines[index] = json.dumps(record)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    return bad, index + 1


def test_read_typed_reads_a_saved_log(saved_log: Path) -> None:
    typed = read_typed(saved_log)
    assert [record_to_dict(r) for r in typed] == read_jsonl(saved_log)


@pytest.mark.parametrize(
    ("kind", "change", "problem"),
    [
        ("task_started", {"generation": "2"}, "task_started record: generation: expected `int`"),
        ("assignor", {"surprise": True}, "assignor record: surprise: unknown field"),
        ("generation", {"members": ["w1", 2]}, "generation record: members[1]: expected `str`"),
        (
            "member_added",
            {"kind": "member_adder"},
            "member_adder record: kind: unknown record kind 'member_adder'",
        ),
    ],
    ids=["wrong-type", "unknown-field", "nested", "unknown-kind"],
)
def test_validating_readers_name_file_line_and_field(
    saved_log: Path, tmp_path: Path, kind: str, change: dict, problem: str
) -> None:
    bad, lineno = _tamper(saved_log, tmp_path, kind, **change)
    read_jsonl(bad)  # the lenient reader still accepts it
    for read in (read_typed, lambda p: read_jsonl(p, validate=True), check_log):
        with pytest.raises(LogFormatError) as info:
            read(bad)
        message = str(info.value)
        assert message == f"{bad}:{lineno}: {problem}" or message.startswith(
            f"{bad}:{lineno}: {problem}"
        ), message
        assert "\n" not in message
