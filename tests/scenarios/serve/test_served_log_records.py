"""A served log against the typed schema (scenarios/eventlog/kinds_serve.py).

Raw requests over a socket drive one ``groupsim serve`` broker through every record kind it
writes (static members, an offset commit, a closed connection's dropped answer, an
undecodable frame, every fault, a coordinator failover); the saved ``events.jsonl`` must
validate, decode into the Structs and encode back to the very same lines.
"""

from __future__ import annotations

import datetime
import json
import struct
from pathlib import Path

import msgspec
import pytest
import trio

pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402

from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.eventlog import kinds_serve, read_jsonl, read_typed, record_to_dict  # noqa: E402
from scenarios.eventlog.kinds import _CoordRec  # noqa: E402
from scenarios.eventlog.records import RECORD_TYPES  # noqa: E402
from scenarios.serve import open_broker, wire  # noqa: E402
from scenarios.serve.config import (  # noqa: E402
    CoordinatorFailover,
    Heal,
    Latency,
    Loss,
    Partition,
    Slow,
)

from .clients import options  # noqa: E402
from .test_wire import _rejoin_until_replaced, _request_frame, _roundtrip  # noqa: E402

SCHEMA = Path(__file__).resolve().parents[3] / "docs" / "event-log.schema.json"
SERVE_KINDS = {getattr(kinds_serve, name).__struct_config__.tag for name in kinds_serve.__all__}
COORDINATOR_KINDS = {kind for kind, cls in RECORD_TYPES.items() if issubclass(cls, _CoordRec)}


def _join(group: str, member_id: str, instance: str | None) -> bytes:
    module = wire.module(11, 5, False)
    return _request_frame(
        11,
        5,
        9,
        "raw",
        group_id=group,
        session_timeout=datetime.timedelta(seconds=3),
        rebalance_timeout=datetime.timedelta(seconds=3),
        member_id=member_id,
        group_instance_id=instance,
        protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"\x00"),),
        protocol_type="consumer",
    )


def _commit(group: str) -> bytes:
    module = wire.module(8, 8, False)
    partition = wire.build(
        module.OffsetCommitRequestPartition,
        partition_index=1,
        committed_offset=7,
        committed_leader_epoch=-1,
        committed_metadata="m",
    )
    topic = module.OffsetCommitRequestTopic(name="orders", partitions=(partition,))
    return _request_frame(
        8,
        8,
        3,
        "raw",
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=(topic,),
    )


async def _send_and_close(port: int, frame: bytes) -> None:
    """Send one request and close the connection without reading the answer."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(struct.pack(">i", len(frame)) + frame)
        await trio.sleep(0.05)


async def _serve_everything(out: Path) -> None:
    with trio.fail_after(30):
        async with open_broker(options(log_heartbeats=True), out) as broker:
            port = broker.port
            # KIP-345: a static member gets its member id at once; the same instance id
            # joining again with no member id replaces it (member_replaced).
            _, first = await _roundtrip(port, 11, 5, _join("static", "", "i1"))
            assert first.error_code == ErrorCode.none and first.generation_id == 1
            await _rejoin_until_replaced(
                broker, "static", _join("static", "", "i1"), first.member_id
            )
            # A dynamic member's JoinGroup is parked for the initial delay; its connection
            # closes first, so the coordinator's answer is dropped.
            _, required = await _roundtrip(port, 11, 5, _join("dynamic", "", None))
            assert required.error_code == ErrorCode.member_id_required
            await _send_and_close(port, _join("dynamic", required.member_id, None))
            await trio.sleep(0.4)
            _, body = await _roundtrip(port, 8, 8, _commit("simple"))
            assert body.topics[0].partitions[0].error_code == ErrorCode.none
            await _send_and_close(port, struct.pack(">hhih", 999, 0, 1, 3) + b"raw")
            broker.inject(Partition(at_ms=0, member="raw", duration_ms=20))
            broker.inject(Heal(at_ms=0, member="raw"))
            broker.inject(
                Loss(at_ms=0, member="x", probability=1.0, duration_ms=10, direction="both")
            )
            broker.inject(Latency(at_ms=0, member="x", extra_ms=1, duration_ms=10))
            broker.inject(Slow(at_ms=0, member="x", stall_ms=10))
            broker.inject(CoordinatorFailover(at_ms=0, down_ms=20))
            await trio.sleep(0.2)
            assert not broker.down


async def test_a_served_log_decodes_and_reencodes_to_the_same_lines(tmp_path: Path) -> None:
    await _serve_everything(tmp_path)
    path = tmp_path / "events.jsonl"
    lines = path.read_bytes().splitlines()
    typed = read_typed(path)
    encoder = msgspec.json.Encoder()
    for line, record in zip(lines, typed, strict=True):
        assert encoder.encode(record_to_dict(record)) == line
    records = read_jsonl(path, validate=True)
    kinds = {r["kind"] for r in records}
    assert kinds >= SERVE_KINDS, sorted(SERVE_KINDS - kinds)
    assert {"group_loaded", "member_added", "generation", "group_state"} <= kinds
    assert records[0]["mode"] == "serve" and records[-1]["groups"]
    faults = {r["fault"] for r in records if r["kind"] == "fault"}
    assert faults == {"partition", "heal", "loss", "latency", "slow", "coordinator_failover"}
    # every coordinator record names its group, right after ``kind``
    for record in records:
        if record["kind"] in COORDINATOR_KINDS:
            assert list(record)[3] == "group", record
    check_log(path)  # validates every line (violations of raw clients are beside the point)


async def test_a_served_log_validates_against_the_shipped_json_schema(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    await _serve_everything(tmp_path)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    by_kind = {
        kind: jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": ref})
        for kind, ref in schema["discriminator"]["mapping"].items()
    }
    for record in read_jsonl(tmp_path / "events.jsonl"):
        by_kind[record["kind"]].validate(record)
    with pytest.raises(jsonschema.ValidationError):
        by_kind["listening"].validate({"t_ms": 0, "seq": 1, "kind": "listening", "host": "h"})


def test_a_served_record_with_an_unknown_field_is_rejected(tmp_path: Path) -> None:
    from scenarios.eventlog import LogFormatError

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"t_ms":0,"seq":0,"kind":"run_start","log_version":1,"scenario":"s","seed":1,'
        '"mode":"serve","host":"h","port":0,"topics":{},"workers":[],"connectors":{}}\n'
        '{"t_ms":1,"seq":1,"kind":"listening","host":"h","port":9092,"tls":true}\n'
    )
    with pytest.raises(LogFormatError, match=r"bad\.jsonl:2: listening record: tls: unknown"):
        read_jsonl(bad, validate=True)
