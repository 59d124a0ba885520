"""Request sequences for the coordinator differential, as plain data.

An *action* is a short JSON-able list naming what a client does (``["join", "c1", {...}]``,
``["advance", 300]``...); :class:`SequenceRunner` resolves each against what groupsim's clients
know so far (their member ids and generations, learned from the responses) into a concrete
:class:`~tests.kafka_oracle.coordinator_replay.Step` and runs it through a
:class:`~tests.kafka_oracle.coordinator_replay.Differential`. Shrunk failing sequences are kept
as such plain data (``tests/kafka_oracle/regressions/coordinator/*.json``: ``{"config": {...},
"actions": [...]}``) and replayed by a test, since concrete member ids are Kafka's random
UUIDs and differ from run to run.

Clients: ``c1``..``c4`` are dynamic, ``s1``/``s2`` static (group instance ids ``i1``/``i2``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from coordinator import CoordinatorConfig
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
)
from tests.kafka_oracle.coordinator_replay import (
    Advance,
    Call,
    DescribeGroups,
    Differential,
    ListGroups,
    Step,
)
from tests.kafka_oracle.oracle import KafkaOracle

GROUP = "g"
DYNAMIC = ("c1", "c2", "c3", "c4")
STATIC = ("s1", "s2")
CLIENTS = DYNAMIC + STATIC
INSTANCE = {"s1": "i1", "s2": "i2"}
#: Protocol lists (several protocols, overlapping and not, so votes are contested).
PROTOCOLS: tuple[tuple[tuple[str, bytes], ...], ...] = (
    (("range", b"r-1"), ("roundrobin", b"rr-1")),
    (("roundrobin", b"rr-2"), ("range", b"r-2")),
    (("range", b"r-3"),),
    (("sticky", b"s-4"), ("roundrobin", b"rr-4")),
    (("range", b"r-1"), ("roundrobin", b"rr-1"), ("sticky", b"s-1")),
)
SESSION_TIMEOUTS = (5, 200, 500, 1_000, 20_000)  # 5 and 20 000 are outside the bounds
REBALANCE_TIMEOUTS = (100, 500, 1_500)
ADVANCES = (1, 50, 100, 250, 500, 1_000, 2_500)
MIN_SESSION_MS, MAX_SESSION_MS = 10, 10_000


def config_of(data: dict[str, Any]) -> CoordinatorConfig:
    """The coordinator settings of a sequence (``initial_rebalance_delay_ms``, ``max_size``)."""
    return CoordinatorConfig(
        initial_rebalance_delay_ms=data["initial_rebalance_delay_ms"],
        min_session_timeout_ms=MIN_SESSION_MS,
        max_session_timeout_ms=MAX_SESSION_MS,
        max_size=data["max_size"],
    )


configs = st.fixed_dictionaries(
    {
        "initial_rebalance_delay_ms": st.sampled_from((0, 100, 300)),
        "max_size": st.sampled_from((2, 3, 100)),
    }
)

clients = st.sampled_from(CLIENTS)
_member = st.sampled_from(("known", "known", "known", "none", "unknown", "other"))
_generation = st.sampled_from(("current", "current", "current", "stale", "next"))

#: A client doing what a well-behaved client does next (see ``SequenceRunner._proper``), so
#: sequences get through KIP-394, the join, the leader's SyncGroup and into Stable.
_proper = st.tuples(
    st.just("proper"),
    clients,
    st.fixed_dictionaries(
        {
            "version": st.sampled_from((4, 5, 9, 9)),
            "protocols": st.integers(0, len(PROTOCOLS) - 1),
            "session": st.sampled_from((500, 1_000)),
            "rebalance": st.sampled_from(REBALANCE_TIMEOUTS),
        }
    ),
)

_join = st.tuples(
    st.just("join"),
    clients,
    st.fixed_dictionaries(
        {
            "member": _member,
            "version": st.sampled_from((3, 4, 5, 7, 9, 9)),
            "protocols": st.integers(0, len(PROTOCOLS) - 1),
            "session": st.sampled_from(SESSION_TIMEOUTS[1:] * 4 + SESSION_TIMEOUTS),
            "rebalance": st.sampled_from(REBALANCE_TIMEOUTS),
            "type": st.sampled_from(("consumer",) * 9 + ("connect",)),
        }
    ),
)
_sync = st.tuples(
    st.just("sync"),
    clients,
    st.fixed_dictionaries(
        {
            "member": _member,
            "generation": _generation,
            "assign": st.booleans(),
            "protocol": st.sampled_from(("none", "none", "match", "other")),
        }
    ),
)
_heartbeat = st.tuples(
    st.just("heartbeat"),
    clients,
    st.fixed_dictionaries({"member": _member, "generation": _generation}),
)
_leave = st.tuples(
    st.just("leave"),
    st.lists(clients, min_size=1, max_size=3, unique=True),
    st.fixed_dictionaries({"member": _member, "by_instance": st.booleans(), "v3": st.booleans()}),
)
_advance = st.tuples(st.just("advance"), st.sampled_from(ADVANCES))

#: Weighted: about half the actions are what a well-behaved client does next, the rest are
#: arbitrary requests (any id, generation, protocol), time advances and admin requests.
actions = st.one_of(
    *[_proper] * 8,
    _join,
    _sync,
    _heartbeat,
    _leave,
    *[_advance] * 3,
    st.tuples(st.just("describe"), st.booleans()),
    st.tuples(st.just("list"), st.booleans()),
).map(list)

#: At least 20 requests a sequence (advances come on top).
sequences = st.lists(actions, min_size=24, max_size=40).filter(
    lambda acts: sum(a[0] != "advance" for a in acts) >= 20
)


@dataclass
class Known:
    """What one client has learned from its answers."""

    member_id: str = ""
    generation: int = -1
    protocols: int = 0
    #: must (re)join before anything else: no id yet, MEMBER_ID_REQUIRED, or a rebalance
    needs_join: bool = True
    synced: bool = False
    leader: bool = False
    #: handle of its JoinGroup/SyncGroup still parked at the coordinator (a client waits)
    waiting: int | None = None


@dataclass
class SequenceRunner:
    """Resolves actions against the clients' knowledge and runs them through ``diff``."""

    diff: Differential
    known: dict[str, Known] = field(default_factory=lambda: {c: Known() for c in CLIENTS})
    steps: list[Step] = field(default_factory=list)

    @classmethod
    def start(cls, oracle: KafkaOracle, config: dict[str, Any]) -> SequenceRunner:
        diff = Differential(oracle, config_of(config), GROUP, session="coordinator-diff")
        return cls(diff)

    def run(self, actions: list[list[Any]]) -> None:
        """Resolve and run each action; raises ``Mismatch`` at the first difference."""
        for action in actions:
            step = self.resolve(action)
            self.steps.append(step)
            gs, _ = self.diff.step(step)
            self._learn(gs)

    def _learn(self, outcome: Any) -> None:
        back = self.diff.ids.to_groupsim
        for handle in outcome.responses:
            for k in self.known.values():
                if k.waiting == handle:
                    k.waiting = None
        for handle, (api, f) in outcome.responses.items():
            if api != "join":
                continue
            step = self.steps[handle - 1]
            assert isinstance(step, Call)
            k = self.known[step.source]
            error = f["error_code"]
            if error in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED) and f["member_id"]:
                k.member_id = back.get(f["member_id"], f["member_id"])
            if error == ErrorCode.NONE:
                k.generation = f["generation_id"]
                k.needs_join, k.synced = False, False
                k.leader = f["leader"] == f["member_id"]
            elif error == ErrorCode.UNKNOWN_MEMBER_ID or error == ErrorCode.FENCED_INSTANCE_ID:
                k.member_id, k.needs_join = "", True
        for handle, (api, f) in outcome.responses.items():
            step = self.steps[handle - 1]
            if api not in ("sync", "heartbeat") or not isinstance(step, Call):
                continue
            k = self.known[step.source]
            error = f["error_code"]
            if error == ErrorCode.NONE and api == "sync":
                k.synced = True
            elif error in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION):
                k.needs_join = True
            elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                k.member_id, k.needs_join = "", True

    def _member(self, client: str, how: str) -> str:
        if how == "none":
            return ""
        if how == "unknown":
            return f"{client}-00000000-0000-4000-8000-000000000000"
        if how == "other":
            others = [k.member_id for c, k in self.known.items() if c != client and k.member_id]
            return others[0] if others else ""
        return self.known[client].member_id

    def _generation(self, client: str, how: str) -> int:
        current = self.known[client].generation
        if how == "stale":
            return current - 1
        if how == "next":
            return current + 1
        return current

    def resolve(self, action: list[Any]) -> Step:
        kind = action[0]
        if kind == "advance":
            return Advance(action[1])
        if kind == "describe":
            ids = (GROUP, "other-group") if action[1] else (GROUP,)
            return Call("admin", DescribeGroups(ids), api_version=6 if action[1] else 5)
        if kind == "list":
            states = ("Stable", "Empty") if action[1] else ()
            return Call("admin", ListGroups(states_filter=states))
        if kind == "leave":
            names, opts = action[1], action[2]
            identities = []
            for c in names:
                iid = INSTANCE.get(c)
                mid = "" if opts["by_instance"] and iid else self._member(c, opts["member"])
                identities.append(MemberIdentity(mid, iid))
            if not opts["v3"] and len(identities) == 1 and identities[0].group_instance_id is None:
                only = (identities[0].member_id,)
                return Call(names[0], LeaveGroupRequest(GROUP, member_ids=only))
            return Call(names[0], LeaveGroupRequest(GROUP, members=tuple(identities)))
        client, opts = action[1], action[2]
        iid = INSTANCE.get(client)
        if kind == "proper":
            return self._proper(client, opts)
        if kind == "join":
            self.known[client].protocols = opts["protocols"]
            return Call(
                client,
                JoinGroupRequest(
                    group_id=GROUP,
                    member_id=self._member(client, opts["member"]),
                    protocol_type=opts["type"],
                    protocols=PROTOCOLS[opts["protocols"]],
                    session_timeout_ms=opts["session"],
                    rebalance_timeout_ms=opts["rebalance"],
                    client_id=client,
                    group_instance_id=iid,
                    api_version=opts["version"],
                ),
            )
        member = self._member(client, opts["member"])
        generation = self._generation(client, opts["generation"])
        if kind == "heartbeat":
            return Call(client, HeartbeatRequest(GROUP, member, generation, group_instance_id=iid))
        assert kind == "sync", action
        assignments: tuple[tuple[str, bytes], ...] = ()
        if opts["assign"]:
            mine = [k.member_id for k in self.known.values() if k.member_id]
            assignments = tuple((m, f"A{i}:{generation}".encode()) for i, m in enumerate(mine))
        protocol_type = protocol_name = None
        if opts["protocol"] == "match":
            protocol_type, protocol_name = "consumer", PROTOCOLS[self.known[client].protocols][0][0]
        elif opts["protocol"] == "other":
            protocol_type, protocol_name = "connect", "sticky"
        return Call(
            client,
            SyncGroupRequest(
                GROUP,
                member,
                generation,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=assignments,
                group_instance_id=iid,
            ),
        )

    def _proper(self, client: str, opts: dict[str, Any]) -> Step:
        """The request a well-behaved client sends next: JoinGroup (with its id once it has
        one) while it must join, then SyncGroup (the leader with an assignment for every
        member it was told of), then Heartbeats."""
        k = self.known[client]
        iid = INSTANCE.get(client)
        if k.waiting is not None:
            return Advance(50)  # its request is parked: time passes
        k.waiting = len(self.steps) + 1  # the handle this step will get
        if k.needs_join or not k.member_id:
            if not k.member_id:
                k.protocols = opts["protocols"]
            return Call(
                client,
                JoinGroupRequest(
                    group_id=GROUP,
                    member_id=k.member_id,
                    protocol_type="consumer",
                    protocols=PROTOCOLS[k.protocols],
                    session_timeout_ms=opts["session"],
                    rebalance_timeout_ms=opts["rebalance"],
                    client_id=client,
                    group_instance_id=iid,
                    api_version=opts["version"],
                ),
            )
        if not k.synced:
            assignments: tuple[tuple[str, bytes], ...] = ()
            if k.leader:
                members = [c.member_id for c in self.known.values() if c.member_id]
                assignments = tuple((m, f"{m[:2]}@{k.generation}".encode()) for m in members)
            return Call(
                client,
                SyncGroupRequest(
                    GROUP, k.member_id, k.generation, assignments=assignments, group_instance_id=iid
                ),
            )
        return Call(
            client, HeartbeatRequest(GROUP, k.member_id, k.generation, group_instance_id=iid)
        )
