"""Version probing when Streams clients of different releases share a group
(``groupsim.latest.supported.version``, the ``version-probing-rolling-upgrade`` scenario)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from members.assignors.streams import AssignmentConfigs
from members.assignors.streams.partition_assignor import FUTURE_CLIENT, StreamsPartitionAssignor
from members.streams_client import StreamsClient, StreamsClientConfig
from members.streams_state import (
    CONSUMER_PROTOCOL_VERSION,
    StreamsTopology,
    Subtopology,
    read_assignment,
    split_threads,
    subscription_user_data,
    with_threads,
)
from protocol import consumer_codec
from protocol.effects import Send
from protocol.group import ErrorCode, JoinGroupRequest, JoinGroupResponse, SyncGroupResponse
from protocol.streams_assignment import encode_assignment
from protocol.streams_subscription import decode_subscription
from protocol.streams_types import StreamsAssignment
from protocol.topic_partitions import TopicPartition
from scenarios.input.library import load_any
from scenarios.input.loader import ScenarioError
from scenarios.input.streams import loads_streams_scenario
from scenarios.sim.runner import simulate as simulate_streams

TOPO = StreamsTopology([Subtopology(0, 2, True, changelog_records=100, changelog_rate=0)])
NAME = "version-probing-rolling-upgrade"


def _member(n: int, version: int, latest: int) -> bytes:
    user = subscription_user_data(
        uuid.UUID(int=n), {}, {"zone": "z"}, 1, version=version, latest_supported_version=latest
    )
    envelope = consumer_codec.Subscription(topics=("input-0",), user_data=with_threads(user, 1))
    return consumer_codec.encode_subscription(envelope, CONSUMER_PROTOCOL_VERSION)


def test_an_old_client_subscribes_with_its_latest_version() -> None:
    raw = subscription_user_data(uuid.UUID(int=1), {}, {"zone": "z"}, 1, 8, 8)
    info = decode_subscription(raw)
    assert (info.version, info.latest_supported_version, info.client_tags) == (8, 8, {})


def test_an_old_leader_reads_a_newer_subscription_as_future_and_probes() -> None:
    assignor = StreamsPartitionAssignor(TOPO, AssignmentConfigs(), uuid.UUID(int=1), 8)
    out = assignor.assign([("m1", _member(1, 8, 8)), ("m2", _member(2, 11, 11))], 0)
    rec = out.record
    assert (rec["version"], rec["commonly_supported_version"], rec["version_probing"]) == (
        8,
        8,
        True,
    )
    assert set(rec["clients"]) == {"PID_1", FUTURE_CLIENT}
    assert out.probing_at_ms is None  # both caught up on everything (100 records): no probe
    for _, body in out.assignments:
        _, info = read_assignment(body)
        assert (info.version, info.commonly_supported_version) == (8, 8)


def test_a_new_leader_answers_at_the_minimum_used_version() -> None:
    assignor = StreamsPartitionAssignor(TOPO, AssignmentConfigs(), uuid.UUID(int=1))
    out = assignor.assign([("m1", _member(1, 11, 11)), ("m2", _member(2, 7, 7))], 0)
    rec = out.record
    assert (rec["version"], rec["commonly_supported_version"], rec["version_probing"]) == (
        7,
        7,
        False,
    )
    # every member downgraded to 8 but supports 11: the leader announces 11
    out = assignor.assign([("m1", _member(1, 8, 11)), ("m2", _member(2, 8, 11))], 0)
    assert (out.record["version"], out.record["commonly_supported_version"]) == (8, 11)


def _versions(records: list[dict]) -> list[tuple[int, int, int, bool]]:
    return [
        (r["generation"], r["version"], r["commonly_supported_version"], r["version_probing"])
        for r in records
        if r["kind"] == "streams_assignment"
    ]


def test_rolling_upgrade_runs_at_the_old_version_until_the_last_old_client_is_gone() -> None:
    result = simulate_streams(load_any(NAME), 0)
    assert result.failures == []
    assert result.summary.converged
    assert result.summary.violations == {}
    # (generation, used, commonly supported, version probing)
    assert _versions(result.records) == [
        (1, 8, 8, False),  # three old clients
        (2, 8, 8, True),  # new I1 (v11) under old leader I3: a future subscription
        (3, 8, 8, False),  # I1 resubscribed at v8; the follow-up moves tasks back
        (4, 8, 8, False),
        (5, 8, 8, True),  # new I2 under old leader I3
        (6, 8, 8, False),
        (7, 8, 8, False),
        (8, 8, 11, False),  # new I3 leads: I1/I2 still send v8, all support 11
        (9, 11, 11, False),  # everyone upgraded its subscription and rejoined at once
    ]
    changes = [
        (r["member"], r["from_version"], r["to_version"])
        for r in result.records
        if r["kind"] == "subscription_version_update"
    ]
    assert changes == [
        ("I1", 11, 8),
        ("I2", 11, 8),
        ("I3", 11, 11),  # its v11 assignment came back at v8: rejoin (Kafka's probing flag)
        ("I2", 8, 11),
        ("I1", 8, 11),
    ]
    gen9 = next(r for r in result.records if r["kind"] == "generation" and r["generation"] == 9)
    upgrade = next(r for r in result.records if r["kind"] == "step" and r["member"] == "I3")
    assert gen9["t_ms"] - upgrade["t_ms"] < 10_000  # upgrade rebalance right after the last


def test_default_clients_speak_v11_without_probing() -> None:
    result = simulate_streams(load_any("kip-441-scale-out"), 1)
    assert {v[1:] for v in _versions(result.records)} == {(11, 11, False)}
    assert not any(r["kind"] == "subscription_version_update" for r in result.records)


BASE = """
kind = "streams"
name = "t"
[[subtopologies]]
id = 0
partitions = 2
[[clients]]
name = "a"
"""


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ('[config]\n"groupsim.latest.supported.version" = 6\n', "groupsim.latest.supported"),
        ('[config]\n"groupsim.latest.supported.version" = 12\n', "groupsim.latest.supported"),
        (
            '[[timeline]]\nat_ms = 1\naction = "restart"\nclient = "a"\n'
            "latest_supported_version = 5\n",
            "timeline[0].latest_supported_version",
        ),
    ],
)
def test_versions_outside_7_to_11_are_rejected(extra: str, where: str) -> None:
    with pytest.raises(ScenarioError) as err:
        loads_streams_scenario(BASE + extra, source="x.toml")
    assert where in str(err.value)


def _with_future_id(place: str) -> str:
    text = (Path(__file__).parents[3] / "scenarios/library/streams" / f"{NAME}.toml").read_text()
    return text.replace("[config]\n", f'[config]\n"groupsim.future.process.id" = "{place}"\n', 1)


def _probing_actives(records: list[dict[str, object]]) -> dict[str, object]:
    first = next(r for r in records if r["kind"] == "streams_assignment" and r["version_probing"])
    clients = first["clients"]
    assert isinstance(clients, dict)
    return {label: c["active"] for label, c in clients.items()}


def test_the_future_process_id_decides_where_the_future_client_stands() -> None:
    """Kafka groups future subscriptions under ``FUTURE_ID``, a random UUID per leader JVM,
    and HATA places tasks in process-id order: ``groupsim.future.process.id`` puts that
    client where a real leader's id fell. Before every client (``PID_0``), new I1 is given
    0_0 in the probing round; at groupsim's default place (after every UUID) nothing."""
    default = simulate_streams(load_any(NAME), 0)
    assert _probing_actives(default.records) == {
        "PID_2": ["0_0", "0_1", "0_2", "0_3"],
        "PID_3": ["0_4", "0_5"],
        FUTURE_CLIENT: [],
    }
    first = simulate_streams(loads_streams_scenario(_with_future_id("PID_0"), source="x"), 0)
    assert first.failures == [] and first.summary.converged and first.summary.violations == {}
    assert _probing_actives(first.records) == {
        "PID_0": ["0_0"],
        "PID_2": ["0_1", "0_3"],
        "PID_3": ["0_2", "0_4", "0_5"],
    }


@pytest.mark.parametrize(
    ("place", "problem"),
    [
        ("PID_2", "is a client's process id"),  # a random UUID never names a client
        ("not-a-uuid", "expected PID_<n> or a UUID"),
    ],
)
def test_a_future_process_id_must_be_a_free_process_id(place: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as err:
        loads_streams_scenario(_with_future_id(place), source="x.toml")
    assert "config.groupsim.future.process.id" in str(err.value)
    assert problem in str(err.value)


@pytest.mark.parametrize(
    ("latest", "assignment_version", "common", "expected"),
    [
        (11, 8, 8, 8),  # a probing (newer) client answered by an old leader: downgrade
        (11, 8, 11, 11),  # the last old client is gone: upgrade
    ],
)
def test_the_follow_up_join_subscribes_with_the_version_onassignment_chose(
    latest: int, assignment_version: int, common: int, expected: int
) -> None:
    """``StreamsPartitionAssignor#onAssignment`` updates the used subscription version
    (``maybeUpdateSubscriptionVersion``) before the rejoin it asks for is sent: the consumer
    rejoins on the stream thread's next poll and only then builds ``subscriptionUserData``.
    So the follow-up JoinGroup carries the new version also when the same assignment asks
    for an immediate follow-up (``next_rebalance_ms`` 0) for a revocation."""
    config = StreamsClientConfig(process_id="PID_7", latest_supported_version=latest)
    client = StreamsClient("c1", config, TOPO, group_id="app")
    if expected == latest:  # the upgrade case: the client already runs downgraded
        client.subscription_version = assignment_version
    client.start(0)
    client.handle(JoinGroupResponse(error=ErrorCode.MEMBER_ID_REQUIRED, member_id="c1-a"), 1)
    client.handle(
        JoinGroupResponse(
            error=ErrorCode.NONE,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="stream",
            leader="other",
            member_id="c1-a",
        ),
        2,
    )
    info = StreamsAssignment(
        version=assignment_version,
        commonly_supported_version=common,
        next_rebalance_ms=0,  # the leader also asks for a follow-up at once
    )
    body = consumer_codec.encode_assignment(
        consumer_codec.Assignment(partitions=(), user_data=encode_assignment(info))
    )
    effects = client.handle(
        SyncGroupResponse(
            error=ErrorCode.NONE, protocol_type="consumer", protocol_name="stream", assignment=body
        ),
        3,
    )
    joins = [
        e.message
        for e in effects
        if isinstance(e, Send) and isinstance(e.message, JoinGroupRequest)
    ]
    assert len(joins) == 1
    consumer = consumer_codec.decode_subscription(joins[0].protocols[0][1])
    user, _ = split_threads(consumer.user_data)
    assert decode_subscription(user).version == expected
    assert client.subscription_version == expected


def _owning(n: int, version: int, latest: int, sums: dict[int, int], owned: list[int]) -> bytes:
    """A member of ``TOPO6`` with task offset sums (partition → sum, -2 = running active) and
    the partitions it owns."""
    from members.assignors.streams import TaskId

    user = subscription_user_data(
        uuid.UUID(int=n),
        {TaskId(0, p): s for p, s in sums.items()},
        {},
        1,
        version=version,
        latest_supported_version=latest,
    )
    envelope = consumer_codec.Subscription(
        topics=("input-0",),
        user_data=with_threads(user, 1),
        owned_partitions=tuple(TopicPartition("input-0", p) for p in owned),
    )
    return consumer_codec.encode_subscription(envelope, CONSUMER_PROTOCOL_VERSION)


TOPO6 = StreamsTopology([Subtopology(0, 6, True, changelog_records=50_000, changelog_rate=0)])


def _standbys(out: object) -> dict[str, list[str]]:
    return {
        m: sorted(f"{t.subtopology}_{t.partition}" for t in read_assignment(b)[1].standby_tasks)
        for m, b in out.assignments  # type: ignore[attr-defined]
    }


@pytest.mark.parametrize(("latest", "kept_all"), [(8, True), (11, False)])
def test_a_withheld_active_stays_a_standby_on_an_old_leader_only(
    latest: int, kept_all: bool
) -> None:
    """StreamsPartitionAssignor#buildStandbyTaskMap: a stateful active withheld because another
    member still owns its partition is placed as a transient standby on its new client; since
    Kafka 3.6 (PR #14149, ``ClientState#previouslyOwnedStandby``) only where that client held
    it as a standby before. A real 2.7.2 leader (latest version 8) kept all of them."""
    a = _owning(1, 8, 8, dict.fromkeys(range(6), -2), list(range(6)))
    b = _owning(2, 8, 8, {}, [])  # no state, caught up by the lag allowed: takes three
    assignor = StreamsPartitionAssignor(
        TOPO6, AssignmentConfigs(acceptable_recovery_lag=60_000), uuid.UUID(int=1), latest
    )
    out = assignor.assign([("a", a), ("b", b)], 0)
    withheld = out.record["clients"]["PID_2"]["withheld"]
    assert len(withheld) == 3
    assert _standbys(out) == {"a": [], "b": withheld if kept_all else []}


def test_an_old_leader_schedules_its_probing_rebalance_in_a_version_probing_round() -> None:
    """StreamsPartitionAssignor#assignTasksToClients (2.6+; 4.0 alike): when the task assignor
    wants a probing rebalance, the leader's client gets ``nextRebalanceMs`` whatever
    ``versionProbing`` says (2.6 dropped ``versionProbingAssignment``); a real 2.7.2 leader
    answering a v11 subscription did (docs/real-kafka.md)."""
    lead = _owning(1, 8, 8, {0: -2, 1: -2, 2: -2}, [0, 1, 2])
    old = _owning(2, 8, 8, {3: -2, 4: -2, 5: -2}, [3, 4, 5])
    new = _member(3, 11, 11)  # a future subscription: no offset sums read, caught up on nothing
    assignor = StreamsPartitionAssignor(TOPO6, AssignmentConfigs(), uuid.UUID(int=1), 8)
    out = assignor.assign([("m1", lead), ("m2", old), ("m3", new)], 1_000)
    assert out.record["version_probing"] and out.record["probing_rebalance_needed"]
    assert out.probing_at_ms == 1_000 + AssignmentConfigs().probing_rebalance_interval_ms
    nxt = {m: read_assignment(b)[1].next_rebalance_ms for m, b in out.assignments}
    assert nxt["m1"] == out.probing_at_ms
