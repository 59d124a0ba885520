"""groupsim's Connect assignors and codecs against Kafka's own classes (full path).

Each example is a small Connect cluster lived through several rebalances: Hypothesis draws the
config topic's history (connectors added, deleted, resized), workers joining, leaving,
restarting with a null or an empty assignment, missing a SyncGroup, lagging behind the config
topic, leader changes and time passing (so scheduled delays start, run and expire). Every
round's JoinGroup metadata goes, as the same bytes, to groupsim's assignor
(``members.assignors``) and to Kafka's ``EagerAssignor`` / ``IncrementalCooperativeAssignor``
through ``performAssignment`` in the oracle JVM (``GroupsimConnectDriver``); every member's
assignment bytes must be equal, and so must errors. Each member's next metadata embeds what
its worker holds after applying its assignment the way ``WorkerCoordinator.onJoinComplete``
does (new assignment plus what it held minus what was revoked).

The codec properties compare ``ConnectProtocol`` / ``IncrementalCooperativeConnectProtocol``
bytes with :mod:`protocol.connect_codec` for v0, v1 and v2, both ways.

Disagreements found once are kept as plain JSON cases in ``regressions/connect/`` and
replayed through both sides (:func:`test_regression_case`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from members.assignors.incremental_cooperative import IncrementalCooperativeAssignor
from protocol.connect import ConnectAssignment, ConnectorTaskId, ConnectProtocol, WorkerSubscription
from protocol.connect_codec import (
    decode_assignment_v0,
    decode_assignment_v1,
    decode_subscription_v0,
    decode_subscription_v1,
    encode_assignment,
    encode_subscription,
)
from protocol.connect_json import assignment_to_json, subscription_to_json
from tests.kafka_oracle.connect_replay import (
    Mismatch,
    compare_case,
    member_bytes,
    run_groupsim_round,
    run_kafka_round,
)
from tests.kafka_oracle.oracle import KafkaOracle, b64, unb64

pytestmark = pytest.mark.kafka

REGRESSIONS = Path(__file__).parent / "regressions" / "connect"
#: Examples per assignor in the ``-m kafka`` run (never fewer than 1,000, whatever the
#: profile says; ``GROUPSIM_ORACLE_EXAMPLES`` sets another number, e.g. for a quick look).
_PROFILE_EXAMPLES = settings.default.max_examples if settings.default else 0
EXAMPLES = int(os.environ.get("GROUPSIM_ORACLE_EXAMPLES", 0)) or max(1000, _PROFILE_EXAMPLES)
_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

# ------------------------------------------------------------------------------ strategies

_ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-_."
# Java orders and hashes strings by UTF-16 code units: non-ASCII and astral names on purpose.
_WIDE_CHARS = "éßΩ中文ﬀ\U0001f600\U00010348"


@st.composite
def names(draw: st.DrawFn, count: int, prefix: str) -> list[str]:
    """``count`` distinct names in one drawn style: ``prefix`` and an index, uuid-like, drawn
    text (sometimes non-ASCII or astral), or a family sharing one ``String.hashCode``."""
    wide = draw(st.booleans()) and draw(st.booleans())
    alphabet = _ID_CHARS + (_WIDE_CHARS if wide else "")
    stem = draw(st.text(alphabet, min_size=0, max_size=8))
    styles = draw(st.sampled_from(["plain", "uuid-ish", "drawn", "same-hash"]))
    out = []
    bits = max(1, (count - 1).bit_length())
    for i in range(count):
        if styles == "same-hash":
            # "Aa" and "BB" have the same String.hashCode, so every name here shares one hash:
            # one crowded HashMap bin (treeified past 8 keys) in Kafka's member/task maps
            out.append(prefix + "".join("BB" if i >> b & 1 else "Aa" for b in range(bits)))
        elif styles == "plain":
            out.append(f"{prefix}{i}")
        elif styles == "uuid-ish":
            out.append(f"{prefix}-{i}-{stem}{(i * 2654435761) % 2**32:08x}")
        else:
            name = draw(st.text(alphabet, min_size=0, max_size=6)) + f"{stem}{i}"
            while name in out:
                name += "~"
            out.append(name)
    return out


#: Cluster sizes: (max members, max connectors, max tasks per connector, max total tasks,
#: max rounds). Large ones are a minority so the run stays within minutes.
SIZES = {
    "small": (8, 8, 10, 80, 8),
    "medium": (40, 40, 60, 2_000, 5),
    "large": (200, 300, 5_000, 5_000, 3),
}
SIZE_CLASSES = ["small"] * 7 + ["medium"] * 2 + ["large"]


@st.composite
def connector_counts(draw: st.DrawFn, names_: list[str], per: int, total: int) -> dict[str, int]:
    """Task counts for ``names_``: each 0..per, all together at most ``total``."""
    out: dict[str, int] = {}
    left = total
    for c in names_:
        n = draw(st.integers(0, max(0, min(per, left))))
        out[c] = n
        left -= n
    return out


class World:
    """The cluster one example lives through (drawn step by step).

    ``history`` is the config topic: a list of ``(offset, connectors → task count)``; each
    worker has read up to some entry of it. Each worker holds what it got from its last
    completed rebalance (``alloc``: None until its first), and remembers the generation of
    that rebalance (its ``lastCompletedGenerationId``, -1 before).
    """

    def __init__(self, protocol: ConnectProtocol) -> None:
        self.protocol = protocol
        self.history: list[tuple[int, dict[str, int]]] = []
        self.members: dict[str, dict[str, Any]] = {}
        self.leader: str | None = None
        self.now_ms = 0
        self.generation = 0
        self.next_connector = 0
        self.next_member = 0

    def subscription(self, member: str) -> dict[str, Any]:
        m = self.members[member]
        offset = self.history[m["read"]][0]
        sub = WorkerSubscription(self.protocol.version, m["url"], offset, m["alloc"])
        return subscription_to_json(sub)


@st.composite
def cases(draw: st.DrawFn, assignor: str) -> dict[str, Any]:
    """A multi-round case (shape in :mod:`tests.kafka_oracle.connect_replay`).

    Rounds after the first are built from the previous round's groupsim assignments, so this
    strategy runs groupsim's assignors while drawing; the test then replays the whole case
    through both sides.
    """
    eager = assignor == "eager"
    protocol = (
        ConnectProtocol.EAGER
        if eager
        else draw(st.sampled_from([ConnectProtocol.COMPATIBLE, ConnectProtocol.SESSIONED]))
    )
    size = draw(st.sampled_from(SIZE_CLASSES))
    max_members, max_conns, per, total, max_rounds = SIZES[size]
    max_delay = draw(
        st.one_of(st.sampled_from([300_000, 0, 1, 40, 1_000]), st.integers(0, 600_000))
    )
    world = World(protocol)
    n_members = draw(st.integers(1, max_members))
    member_names = draw(names(n_members + 3 * max_rounds, "connect"))
    conn_names = draw(names(max_conns + 3 * max_rounds, "conn"))
    n_conns = draw(st.integers(0, max_conns))
    first = draw(connector_counts(conn_names[:n_conns], per, total))
    world.next_connector = n_conns
    world.history.append((draw(st.integers(-1, 50)), first))
    for i in range(n_members):
        world.members[member_names[i]] = {
            "url": f"http://{member_names[i]}:8083",
            "read": 0,
            "alloc": None,
            "completed": -1,
        }
    world.next_member = n_members
    world.generation = draw(st.integers(0, 5))

    case: dict[str, Any] = {
        "assignor": assignor,
        "protocol": protocol.protocol_name,
        "max_delay_ms": max_delay,
        "rounds": [],
    }
    ours: dict[str, Any] = {}
    rounds = draw(st.integers(1, max_rounds))
    last_delay = 0
    for r in range(rounds):
        if r:
            _evolve(draw, world, member_names, conn_names, per, total, last_delay)
        rnd = _round(draw, world)
        case["rounds"].append(rnd)
        outcome = run_groupsim_round(ours, case, rnd, member_bytes(rnd))
        if outcome.assignments is None:
            break
        last_delay = _apply(draw, world, outcome.assignments, rnd["generation"])
    return case


def _evolve(draw, world, member_names, conn_names, per, total, last_delay) -> None:  # type: ignore[no-untyped-def]
    """Between two rounds: config changes, workers leaving/joining/restarting, time."""
    offset, conns = world.history[-1]
    if draw(st.booleans()):
        conns = dict(conns)
        for c in draw(st.lists(st.sampled_from(sorted(conns)), max_size=3)) if conns else []:
            conns.pop(c, None)  # deleted connector
        for c in draw(st.lists(st.sampled_from(sorted(conns)), max_size=3)) if conns else []:
            conns[c] = draw(st.integers(0, per))  # reconfigured: tasks added or removed
        for _ in range(draw(st.integers(0, 3))):
            if world.next_connector < len(conn_names):
                conns[conn_names[world.next_connector]] = draw(st.integers(0, per))
                world.next_connector += 1
        while sum(conns.values()) > total:
            biggest = max(conns, key=lambda c: conns[c])
            conns[biggest] //= 2
        world.history.append((offset + draw(st.integers(1, 4)), conns))
    ids = list(world.members)
    # workers leaving (never all of them)
    if len(ids) > 1 and draw(st.booleans()):
        for m in draw(st.lists(st.sampled_from(ids), max_size=min(3, len(ids) - 1), unique=True)):
            del world.members[m]
    # workers restarting with the same id: their assignment is gone (null) or empty
    for m in draw(st.lists(st.sampled_from(list(world.members)), max_size=2, unique=True)):
        world.members[m]["alloc"] = _empty(world) if draw(st.booleans()) else None
        world.members[m]["completed"] = -1
    # workers joining (new ids, as a restarted Kafka worker gets): null or empty assignment
    for _ in range(draw(st.integers(0, 3))):
        if world.next_member < len(member_names):
            m = member_names[world.next_member]
            world.next_member += 1
            world.members[m] = {
                "url": f"http://{m}:8083",
                "read": 0,
                "alloc": _empty(world) if draw(st.booleans()) else None,
                "completed": -1,
            }
    # JoinGroup order is the coordinator's, not the workers' arrival: sometimes shuffled
    if draw(st.booleans()):
        order = draw(st.permutations(list(world.members)))
        world.members = {m: world.members[m] for m in order}
    # time: nothing, half or exactly the last delay (and one either side), or anything
    near = st.sampled_from([0, last_delay, max(0, last_delay - 1), last_delay + 1, last_delay // 2])
    step = draw(st.one_of(near, near, st.integers(0, 700_000)))
    world.now_ms += step


def _empty(world: World) -> ConnectAssignment:
    """A non-null assignment holding nothing (e.g. after everything was revoked)."""
    return ConnectAssignment(world.protocol.version, 0, "gone", "http://gone:8083", 0)


def _round(draw, world: World) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The next rebalance: who reads which config entry, who leads, the generations."""
    latest = len(world.history) - 1
    for m in world.members.values():
        # most workers have read the whole config topic, some lag behind
        m["read"] = latest if draw(st.integers(0, 3)) else draw(st.integers(0, latest))
    ids = list(world.members)
    if world.leader not in world.members or draw(st.integers(0, 7)) == 0:
        world.leader = draw(st.sampled_from(ids))
    leader = world.members[world.leader]
    world.generation += draw(st.sampled_from([1, 1, 1, 2]))
    rnd: dict[str, Any] = {
        "leader": world.leader,
        "generation": world.generation,
        "last_completed_generation": leader["completed"],
        "now_ms": world.now_ms,
        # the leader's cached snapshot is the one it read when it sent JoinGroup
        "snapshot": _snap(world.history[leader["read"]]),
        "members": {m: world.subscription(m) for m in ids},
    }
    # a fresh read of the config topic sees at least as much, sometimes more than anyone
    fresh = draw(st.integers(leader["read"], latest))
    if fresh != leader["read"]:
        rnd["fresh_snapshot"] = _snap(world.history[fresh])
    return rnd


def _snap(entry: tuple[int, dict[str, int]]) -> dict[str, Any]:
    return {"offset": entry[0], "connectors": dict(entry[1])}


def _apply(draw, world: World, assignments: dict[str, bytes], generation: int) -> int:  # type: ignore[no-untyped-def]
    """Every worker applies its SyncGroup answer as ``WorkerCoordinator.onJoinComplete`` does,
    except those whose SyncGroup is lost (drawn). Returns the round's delay."""
    delay = 0
    for m, data in assignments.items():
        state = world.members[m]
        if draw(st.integers(0, 9)) == 0:
            continue  # SyncGroup answer lost: it keeps what it had, generation not completed
        new = decode_assignment_v1(data)
        delay = new.delay_ms
        old = state["alloc"]
        conns = list(new.connectors)
        tasks = list(new.tasks)
        if old is not None and not world.protocol.is_eager:
            gone_c = set(new.revoked_connectors)
            gone_t = set(new.revoked_tasks)
            conns += [c for c in old.connectors if c not in gone_c]
            tasks += [t for t in old.tasks if t not in gone_t]
        state["alloc"] = ConnectAssignment(
            world.protocol.version,
            new.error,
            new.leader,
            new.leader_url,
            new.config_offset,
            tuple(conns),
            tuple(tasks),
            new.revoked_connectors,
            new.revoked_tasks,
            new.delay_ms,
        )
        state["completed"] = generation
    return delay


# ------------------------------------------------------------------- full-path properties


def _check(kafka_oracle: KafkaOracle, case: dict[str, Any], label: str) -> None:
    compare_case(kafka_oracle, case)
    kafka_oracle.compared[label] += 1
    kafka_oracle.compared[f"{label} (rounds)"] += len(case["rounds"])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SLOW)
@given(case=cases("eager"))
def test_eager_full_path_matches_kafka(kafka_oracle: KafkaOracle, case: dict[str, Any]) -> None:
    _check(kafka_oracle, case, "connect eager full path")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SLOW)
@given(case=cases("incremental_cooperative"))
def test_incremental_full_path_matches_kafka(
    kafka_oracle: KafkaOracle, case: dict[str, Any]
) -> None:
    _check(kafka_oracle, case, "connect incremental full path")


def test_regression_cases(kafka_oracle: KafkaOracle) -> None:
    """Every kept case (``regressions/connect/*.json``: a disagreement once found, shrunk, or
    a hand-made case worth keeping) gives equal bytes on both sides."""
    paths = sorted(REGRESSIONS.glob("*.json"))
    assert paths, f"no case in {REGRESSIONS}"
    for path in paths:
        try:
            compare_case(kafka_oracle, json.loads(path.read_text()))
        except Mismatch as exc:
            raise Mismatch(f"{path.name}: {exc}") from None
        kafka_oracle.compared["connect regression cases"] += 1


def test_errors_match_kafka(kafka_oracle: KafkaOracle) -> None:
    """Inputs Kafka rejects are rejected by groupsim too: a leader that is not a member, and
    metadata cut off in the middle of a field (both assignors)."""
    full = encode_subscription(WorkerSubscription(2, "http://w1:8083", 3, None))
    v0 = encode_subscription(WorkerSubscription(0, "http://w1:8083", 3, None))
    rnd: dict[str, Any] = {
        "generation": 1,
        "last_completed_generation": -1,
        "now_ms": 0,
        "snapshot": {"offset": 3, "connectors": {"c": 1}},
    }
    for assignor, protocol, metadata in (
        ("eager", "default", v0),
        ("incremental_cooperative", "sessioned", full),
    ):
        case = {"assignor": assignor, "protocol": protocol, "max_delay_ms": 0}
        for leader, members in (
            ("w9", [("w1", metadata)]),  # the leader is not among the members
            ("w1", [("w1", metadata[:-3])]),  # config offset cut short
        ):
            bad = dict(rnd, leader=leader)
            ours = run_groupsim_round({}, case, bad, members)
            kafka = run_kafka_round(kafka_oracle, "errors", case, bad, members)
            assert ours.error is not None, f"groupsim accepted {members} led by {leader}"
            assert kafka.error is not None, f"Kafka accepted {members} led by {leader}"
            kafka_oracle.compared["connect error cases"] += 1
    kafka_oracle.call("connect.reset", session="errors")


# ------------------------------------------------------------- planted bug is caught


def test_a_planted_bug_is_caught(
    kafka_oracle: KafkaOracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """groupsim's incremental assignor with one revoked task too few per worker: the
    differential check fails on the first round that revokes, and says which member and how."""
    case = {
        "assignor": "incremental_cooperative",
        "protocol": "sessioned",
        "max_delay_ms": 0,
        "rounds": [],
    }
    # two workers hold 4 tasks between them; a third joins empty: one task must move to it
    alloc = ConnectAssignment(
        2, 0, "w1", "http://w1:8083", 5, ("c",), tuple(ConnectorTaskId("c", i) for i in range(3))
    )
    alloc2 = ConnectAssignment(2, 0, "w1", "http://w1:8083", 5, (), (ConnectorTaskId("c", 3),))
    members = {
        "w1": subscription_to_json(WorkerSubscription(2, "http://w1:8083", 5, alloc)),
        "w2": subscription_to_json(WorkerSubscription(2, "http://w2:8083", 5, alloc2)),
        "w3": subscription_to_json(WorkerSubscription(2, "http://w3:8083", 5, None)),
    }
    case["rounds"] = [
        {
            "leader": "w1",
            "generation": 2,
            "last_completed_generation": 1,
            "now_ms": 0,
            "snapshot": {"offset": 5, "connectors": {"c": 4}},
            "members": members,
        }
    ]
    compare_case(kafka_oracle, case)  # the real assignor agrees

    real = IncrementalCooperativeAssignor.perform_task_assignment

    def one_too_few(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        result = real(self, *args, **kwargs)
        for worker, revoked in result.newly_revoked_tasks.items():
            if revoked:  # planted: each worker keeps its last revoked task
                result.all_assigned_tasks[worker].append(revoked.pop())
        return result

    monkeypatch.setattr(IncrementalCooperativeAssignor, "perform_task_assignment", one_too_few)
    with pytest.raises(Mismatch, match=r"differ in round 0[\s\S]*member 'w1'[\s\S]*revoked_tasks"):
        compare_case(kafka_oracle, case)

    # ... and the generated cases find it on their own (no shrinking, to stay quick)
    @settings(
        max_examples=300,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=_SLOW,
    )
    @given(drawn=cases("incremental_cooperative"))
    def property_(drawn: dict[str, Any]) -> None:
        compare_case(kafka_oracle, drawn)

    with pytest.raises(Mismatch, match=r"differ in round \d+[\s\S]*revoked_tasks"):
        property_()


def test_a_planted_ignored_delay_is_caught(
    kafka_oracle: KafkaOracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """groupsim's incremental assignor reassigning lost tasks at once instead of waiting for
    the scheduled delay (monkeypatched): caught on the round where a worker went away."""
    alloc1 = ConnectAssignment(2, 0, "w1", "http://w1:8083", 5, ("c",), (ConnectorTaskId("c", 0),))
    alloc2 = ConnectAssignment(2, 0, "w1", "http://w1:8083", 5, (), (ConnectorTaskId("c", 1),))
    both = {
        "w1": subscription_to_json(WorkerSubscription(2, "http://w1:8083", 5, alloc1)),
        "w2": subscription_to_json(WorkerSubscription(2, "http://w2:8083", 5, alloc2)),
    }
    snap = {"offset": 5, "connectors": {"c": 2}}
    case = {
        "assignor": "incremental_cooperative",
        "protocol": "sessioned",
        "max_delay_ms": 300_000,
        "rounds": [
            {
                "leader": "w1",
                "generation": 2,
                "last_completed_generation": 1,
                "now_ms": 0,
                "snapshot": snap,
                "members": both,
            },
            {
                "leader": "w1",
                "generation": 3,
                "last_completed_generation": 2,
                "now_ms": 10,
                "snapshot": snap,
                "members": {"w1": both["w1"]},
            },
        ],
    }
    compare_case(kafka_oracle, case)  # the real assignor agrees (it waits)
    original_init = IncrementalCooperativeAssignor.__init__

    def no_delay(self, max_delay_ms: int = 300_000) -> None:  # type: ignore[no-untyped-def]
        original_init(self, 0)

    monkeypatch.setattr(IncrementalCooperativeAssignor, "__init__", no_delay)
    with pytest.raises(Mismatch, match=r"differ in round 1[\s\S]*member 'w1'"):
        compare_case(kafka_oracle, case)


# ------------------------------------------------------------------------ codec bytes

_small_names = st.text(_ID_CHARS + _WIDE_CHARS, max_size=6)
_tasks = st.lists(st.builds(ConnectorTaskId, _small_names, st.integers(0, 2**31 - 1)), max_size=8)


@st.composite
def assignments(draw: st.DrawFn, version: int) -> ConnectAssignment:
    """Any assignment Kafka's writer accepts (connector lists may hold duplicates)."""
    conns = draw(st.lists(_small_names, max_size=14))
    return ConnectAssignment(
        version,
        draw(st.sampled_from([0, 1])),
        draw(_small_names),
        draw(_small_names),
        draw(st.integers(-(2**63), 2**63 - 1)),
        tuple(conns),
        tuple(draw(_tasks)),
        tuple(draw(st.lists(_small_names, max_size=5))) if version else (),
        tuple(draw(_tasks)) if version else (),
        draw(st.integers(-(2**31), 2**31 - 1)) if version else 0,
    )


def _to_driver(a: ConnectAssignment) -> dict[str, Any]:
    return {
        "error": a.error,
        "leader": a.leader,
        "leader_url": a.leader_url,
        "offset": a.config_offset,
        "connectors": list(a.connectors),
        "tasks": [list(t) for t in a.tasks],
        "revoked_connectors": list(a.revoked_connectors),
        "revoked_tasks": [list(t) for t in a.revoked_tasks],
        "delay": a.delay_ms,
    }


def _from_driver(doc: dict[str, Any], version: int) -> dict[str, Any]:
    """Kafka's decoded assignment as ``groupsim codec`` JSON."""
    a = ConnectAssignment(
        version,
        doc["error"],
        doc["leader"],
        doc["leader_url"],
        doc["offset"],
        tuple(doc["connectors"]),
        tuple(ConnectorTaskId(c, n) for c, n in doc["tasks"]),
        tuple(doc.get("revoked_connectors", ())),
        tuple(ConnectorTaskId(c, n) for c, n in doc.get("revoked_tasks", ())),
        doc.get("delay", 0),
    )
    return assignment_to_json(a)


@settings(max_examples=max(300, _PROFILE_EXAMPLES), deadline=None)
@given(data=st.data(), version=st.sampled_from([0, 1, 2]))
def test_assignment_codec_bytes_match_kafka(
    kafka_oracle: KafkaOracle, data: st.DataObject, version: int
) -> None:
    a = data.draw(assignments(version))
    ours = encode_assignment(a, version)
    theirs = unb64(
        kafka_oracle.call("connect.serialize_assignment", version=version, **_to_driver(a))
    )
    assert ours == theirs, f"v{version} assignment bytes differ for {a}"
    reader, decode = ("v0", decode_assignment_v0) if version == 0 else ("v1", decode_assignment_v1)
    kafka_read = kafka_oracle.call("connect.deserialize_assignment", bytes=b64(ours), reader=reader)
    assert assignment_to_json(decode(ours)) == _from_driver(kafka_read, version)
    kafka_oracle.compared[f"connect codec assignment v{version}"] += 1


@settings(max_examples=max(300, _PROFILE_EXAMPLES), deadline=None)
@given(data=st.data(), version=st.sampled_from([0, 1, 2]), reader=st.sampled_from(["v0", "v1"]))
def test_metadata_codec_bytes_match_kafka(
    kafka_oracle: KafkaOracle, data: st.DataObject, version: int, reader: str
) -> None:
    url = data.draw(_small_names)
    offset = data.draw(st.integers(-(2**63), 2**63 - 1))
    alloc = data.draw(st.none() | assignments(version)) if version else None
    sub = WorkerSubscription(version, url, offset, alloc)
    ours = encode_subscription(sub, version)
    fields: dict[str, Any] = {"version": version, "url": url, "offset": offset}
    if alloc is not None:
        fields["allocation"] = _to_driver(alloc)
    theirs = unb64(kafka_oracle.call("connect.serialize_metadata", **fields))
    assert ours == theirs, f"v{version} metadata bytes differ for {sub}"
    got = kafka_oracle.call("connect.deserialize_metadata", bytes=b64(ours), reader=reader)
    mine = (decode_subscription_v0 if reader == "v0" else decode_subscription_v1)(ours)
    assert (mine.url, mine.config_offset) == (got["url"], got["offset"])
    if reader == "v1":
        theirs_alloc = got["allocation"]
        if theirs_alloc is None:
            assert mine.allocation is None
        else:
            assert mine.allocation is not None
            assert assignment_to_json(mine.allocation) == _from_driver(
                theirs_alloc, theirs_alloc["version"]
            )
    kafka_oracle.compared[f"connect codec metadata v{version} ({reader} reader)"] += 1
