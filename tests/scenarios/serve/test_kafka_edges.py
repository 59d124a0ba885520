"""Where ``groupsim serve`` follows a Kafka broker at the edges: DescribeGroups of a rebalancing
group, ApiVersions of an unknown version, a client id that is not UTF-8, idle connections;
and ``groupsim serve`` leaves nothing but its outputs in the working directory."""

from __future__ import annotations

import datetime
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import trio

pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402

from scenarios.serve import open_broker, wire  # noqa: E402

from .clients import options  # noqa: E402
from .test_wire import _decode_response, _request_frame, _roundtrip  # noqa: E402


def _join(member_id: str, client_id: str = "raw", correlation_id: int = 9) -> bytes:
    module = wire.module(11, 5, False)
    return _request_frame(
        11,
        5,
        correlation_id,
        client_id,
        group_id="g",
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10),
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"\x00"),),
    )


def _describe() -> bytes:
    return _request_frame(15, 5, 6, "admin", groups=("g",), include_authorized_operations=False)


async def test_describe_groups_keeps_assignments_while_the_group_rebalances():
    """``GroupMetadataManagerTest#testDescribeGroupRebalancing``: a PreparingRebalance group
    is described without protocol and member metadata, but with each member's assignment
    (``ClassicGroupMember#describeNoMetadata``)."""
    assignment = b"\x00\x01groupsim-assignment"
    async with open_broker(options()) as broker:
        _, first = await _roundtrip(broker.port, 11, 5, _join(""))
        member = first.member_id
        _, joined = await _roundtrip(broker.port, 11, 5, _join(member))
        sync_module = wire.module(14, 3, False)
        sync = _request_frame(
            14,
            3,
            10,
            "raw",
            group_id="g",
            generation_id=joined.generation_id,
            member_id=member,
            group_instance_id=None,
            assignments=(
                sync_module.SyncGroupRequestAssignment(member_id=member, assignment=assignment),
            ),
        )
        _, synced = await _roundtrip(broker.port, 14, 3, sync)
        assert synced.error_code == ErrorCode.none
        _, stable = await _roundtrip(broker.port, 15, 5, _describe())
        assert stable.groups[0].group_state == "Stable"
        assert stable.groups[0].members[0].member_assignment == assignment
        # a second member joins: the group prepares a rebalance, its join parks meanwhile
        _, second = await _roundtrip(broker.port, 11, 5, _join("", "raw2"))
        parked = await trio.open_tcp_stream("127.0.0.1", broker.port)
        async with parked:
            frame = _join(second.member_id, "raw2")
            await parked.send_all(struct.pack(">i", len(frame)) + frame)
            with trio.fail_after(5):
                while broker.snapshot("g").state != "PreparingRebalance":
                    await trio.sleep(0.01)
            _, described = await _roundtrip(broker.port, 15, 5, _describe())
    (group,) = described.groups
    assert (group.group_state, group.protocol_type, group.protocol_data) == (
        "PreparingRebalance",
        "consumer",
        "",
    )
    by_id = {m.member_id: m for m in group.members}
    assert by_id[member].member_assignment == assignment
    assert by_id[member].member_metadata == b""


async def test_apiversions_of_an_unknown_version_lists_only_its_own_range():
    """``KafkaApis#handleApiVersionsRequest`` -> ``ApiVersionsRequest#getErrorResponse``:
    UNSUPPORTED_VERSION with ApiVersions' own range, in a v0 answer (KIP-511)."""
    async with open_broker(options()) as broker:
        unknown = struct.pack(">hhih", 18, 9, 2, 3) + b"raw" + b"\x00"
        correlation, body = await _roundtrip(broker.port, 18, 0, unknown)
    assert correlation == 2 and body.error_code == ErrorCode.unsupported_version
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [
        (18, *wire.API_VERSIONS[18])
    ]


async def test_a_client_id_that_is_not_utf8_is_read_as_kafka_reads_it():
    """``RequestHeader#parse`` reads the client id with ``new String(bytes, UTF_8)``: bad
    bytes become U+FFFD and the request is served (the member id is ``<client.id>-<uuid>``)."""
    frame = bytearray(_join("", "Xc1"))
    assert frame[10:13] == b"Xc1"  # int16 api key, version, int32 correlation, int16 length
    frame[10] = 0xFF
    async with open_broker(options()) as broker:
        _, body = await _roundtrip(broker.port, 11, 5, bytes(frame))
        errors = [r for r in broker.log.records if r["kind"] == "connection_error"]
    assert body.error_code == ErrorCode.member_id_required
    assert body.member_id.startswith("\ufffdc1-")
    assert errors == []
    request = wire.decode_request(bytes(frame))
    assert (request.client_id, request.body.group_id) == ("\ufffdc1", "g")


async def _apiversions(stream: trio.SocketStream, correlation_id: int) -> None:
    frame = _request_frame(
        18, 3, correlation_id, "idle", client_software_name="t", client_software_version="1"
    )
    await stream.send_all(struct.pack(">i", len(frame)) + frame)
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
        chunk = await stream.receive_some()
        assert chunk, "the broker closed a busy connection"
        data += chunk
    assert _decode_response(18, 3, data)[0] == correlation_id


async def test_a_connection_idle_for_connections_max_idle_ms_is_closed():
    async with open_broker(options(connections_max_idle_ms=300)) as broker:
        busy = await trio.open_tcp_stream("127.0.0.1", broker.port)
        idle = await trio.open_tcp_stream("127.0.0.1", broker.port)
        async with busy, idle:
            await _apiversions(idle, 1)
            for n in range(8):  # a request every 100 ms: never idle for 300 ms
                await _apiversions(busy, n)
                await trio.sleep(0.1)
            with trio.fail_after(2):
                assert await idle.receive_some() == b""  # closed by the broker
            await _apiversions(busy, 99)


def test_serve_creates_no_hypothesis_directory(tmp_path: Path) -> None:
    """kio registers Hypothesis strategies when Hypothesis is importable, which writes
    ``./.hypothesis/``; ``groupsim serve`` hides Hypothesis from it."""
    pytest.importorskip("hypothesis")
    done = subprocess.run(
        [sys.executable, "-m", "scenarios.cli.main", "serve", "--port", "0", "--control"],
        cwd=tmp_path,
        input="stop\n",
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "listening on 127.0.0.1:" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groupsim-out"]
    assert sorted(p.name for p in (tmp_path / "groupsim-out" / "serve").iterdir()) == [
        "events.jsonl",
        "summary.json",
    ]


def test_connections_max_idle_ms_is_a_broker_setting(tmp_path: Path) -> None:
    from scenarios.serve.config import (
        ServeInputError,
        ServeScenario,
        broker_settings,
        load_serve_scenario,
    )

    overrides = {"connections.max.idle.ms": 5000, "group.max.size": 3}
    assert broker_settings(ServeScenario(), overrides).connections_max_idle_ms == 5000
    assert overrides == {"group.max.size": 3}  # the rest goes to the coordinator
    assert broker_settings(ServeScenario(), {}).connections_max_idle_ms == 600_000
    with pytest.raises(ServeInputError, match="connections.max.idle.ms"):
        broker_settings(ServeScenario(), {"connections.max.idle.ms": 0})
    path = tmp_path / "s.toml"
    path.write_text('[broker]\n"connections.max.idle.ms" = 1234\n')
    assert load_serve_scenario(path).broker.connections_max_idle_ms == 1234
