"""``replay --conform`` of a Streams leader during a rolling upgrade (KIP-268 version probing):
groupsim's assignor plays the leader's own release, the ``latest_supported_version`` its
subscription announces (Kafka ``SubscriptionInfo``), and the assignments' ``version`` and
``commonly_supported_version`` (Kafka ``AssignmentInfo``) are compared."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import pytest

pytest.importorskip("kio")

from members.assignors.streams import AssignmentConfigs, TaskId  # noqa: E402
from members.assignors.streams.partition_assignor import StreamsPartitionAssignor  # noqa: E402
from members.streams_state import (  # noqa: E402
    CONSUMER_PROTOCOL_VERSION,
    StreamsTopology,
    Subtopology,
    read_assignment,
    subscription_user_data,
)
from protocol import consumer_codec  # noqa: E402
from protocol.streams_assignment import encode_assignment  # noqa: E402
from protocol.streams_types import LATEST_OFFSET  # noqa: E402
from protocol.topic_partitions import TopicPartition  # noqa: E402
from scenarios.record.streams_leaders import StreamsApp, streams_round  # noqa: E402

TOPIC = "input-0"
APP = StreamsApp({0: (TOPIC, 6, "changelog")}, AssignmentConfigs())


def _member(pid: int, tasks: list[int], version: int, latest: int, owned: bool) -> bytes:
    user = subscription_user_data(
        uuid.UUID(int=pid),
        {TaskId(0, p): LATEST_OFFSET if owned else 100 for p in tasks},
        {},
        1,
        version=version,
        latest_supported_version=latest,
    )
    parts = tuple(TopicPartition(TOPIC, p) for p in tasks) if owned else ()
    sub = consumer_codec.Subscription((TOPIC,), user, parts)
    return consumer_codec.encode_subscription(sub, CONSUMER_PROTOCOL_VERSION)


#: Two clients of the old release (latest 8, leader L first) and one just restarted on the
#: new one, subscribing at v11 with the state of 0_4 and 0_5 on disk: a future subscription
#: to the old leader (StreamsPartitionAssignor: FUTURE_ID, version probing).
MEMBERS = [
    ("L", _member(1, [0, 1], 8, 8, True)),
    ("M", _member(2, [2, 3], 8, 8, True)),
    ("N", _member(3, [4, 5], 11, 11, False)),
]
TOPOLOGY = StreamsTopology([Subtopology(0, 6, stateful=True)])


def _recorded(latest: int) -> dict[str, bytes]:
    leader = StreamsPartitionAssignor(TOPOLOGY, APP.configs, uuid.UUID(int=1), latest)
    return dict(leader.assign(MEMBERS, 1_000).assignments)


def test_an_old_leader_answers_a_future_subscription_at_its_own_version() -> None:
    recorded = _recorded(8)
    versions = {
        m: (info.version, info.commonly_supported_version)
        for m, (_, info) in ((m, read_assignment(b)) for m, b in recorded.items())
    }
    assert versions == dict.fromkeys("LMN", (8, 8))
    assert (
        streams_round(APP, MEMBERS, "L", "L-StreamThread-1-consumer", 1_000, [], recorded) is None
    )


def test_the_leaders_release_comes_from_its_own_subscription(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import scenarios.record.streams_leaders as leaders

    seen: list[int] = []

    class Spy(StreamsPartitionAssignor):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            seen.append(self.latest_supported_version)

    monkeypatch.setattr(leaders, "StreamsPartitionAssignor", Spy)
    recorded = _recorded(8)
    streams_round(APP, MEMBERS, "L", "L-StreamThread-1-consumer", 1_000, [], recorded)
    # a new leader that downgraded its subscription to v8 still announces its latest, 11
    streams_round(APP, MEMBERS, "N", "N-StreamThread-1-consumer", 1_000, [], recorded)
    assert seen[-1] == 11 and set(seen[:-1]) == {8}  # L's round tries the future places


def test_a_different_commonly_supported_version_is_a_divergence() -> None:
    recorded = _recorded(8)
    parts, info = read_assignment(recorded["N"])
    told = msgspec.structs.replace(info, commonly_supported_version=11)
    recorded["N"] = consumer_codec.encode_assignment(
        msgspec.structs.replace(parts, user_data=encode_assignment(told))
    )
    got = streams_round(APP, MEMBERS, "L", "L-StreamThread-1-consumer", 1_000, [], recorded)
    assert got == ("N", "commonly_supported_version", 11, 8)


def test_the_future_client_may_stand_anywhere_in_the_process_id_order() -> None:
    from scenarios.record.streams_leaders import future_places

    a, b = uuid.UUID(int=5), uuid.UUID("ffffffff-0000-0000-0000-000000000000")
    assert future_places([(8, a), (8, b)], 8) == [None]  # no future subscription
    places = future_places([(8, a), (11, uuid.UUID(int=9)), (8, b)], 8)
    # UUID.compareTo: a signed upper half puts b (0xffff...) before a; one place before all,
    # one just after each of them
    assert places == [
        None,
        uuid.UUID("80000000-0000-0000-8000-000000000000"),
        uuid.UUID("ffffffff-0000-0000-0000-000000000001"),
        uuid.UUID(int=6),
    ]


def test_a_round_conforms_when_one_place_of_the_future_client_gives_the_real_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the real leader's FUTURE_ID stood before every other client: groupsim's default
    # place (the label FUTURE, after every UUID) may not give that answer, one of the tried does
    from scenarios.record.streams_leaders import future_places

    processes = [(8, uuid.UUID(int=1)), (8, uuid.UUID(int=2)), (11, uuid.UUID(int=3))]
    first = future_places(processes, 8)[1]
    leader = StreamsPartitionAssignor(TOPOLOGY, APP.configs, uuid.UUID(int=1), 8, first)
    recorded = dict(leader.assign(MEMBERS, 1_000).assignments)
    assert (
        streams_round(APP, MEMBERS, "L", "L-StreamThread-1-consumer", 1_000, [], recorded) is None
    )
    # groupsim's own place alone gives another answer
    import scenarios.record.streams_leaders as leaders

    monkeypatch.setattr(leaders, "future_places", lambda processes, latest: [None])
    assert streams_round(APP, MEMBERS, "L", "L-StreamThread-1-consumer", 1_000, [], recorded)
