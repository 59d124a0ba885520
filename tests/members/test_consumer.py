"""members.consumer: ConsumerCoordinator behaviour of a plain consumer group, driven against the
real coordinator (coordinator.group) in a small deterministic loop, and the ownership rules of
scenarios.check.consumer_ownership over what it logs."""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import pytest

from coordinator import CoordinatorConfig, GroupCoordinator
from members.consumer import (
    ConsumerClient,
    ConsumerClientConfig,
    RebalanceProtocol,
    Subscribe,
    UnknownAssignorError,
    rebalance_protocol,
)
from members.group_client import COORDINATOR_ADDRESS
from members.member_state import MemberState, PollStall
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from scenarios.check.consumer_ownership import ownership_violations
from scenarios.eventlog.records import LogRecord, decode_log

LATENCY_MS = 2
CLUSTER = {"orders": ((None,),) * 6, "payments": ((None,),) * 3}


#: the record kinds :func:`ownership_violations` reads
_OWNERSHIP_KINDS = {
    "consumer_assignment",
    "join_group_response",
    "partitions_revoked",
    "partitions_lost",
    "member_stop",
    "member_crash",
    "member_fatal",
    "member_removed",
}


def _typed(records: list[dict[str, Any]]) -> list[LogRecord]:
    """The loop's records that the ownership rules read, numbered and decoded as a log's."""
    mine = [r for r in records if r["kind"] in _OWNERSHIP_KINDS]
    return decode_log({"seq": i, **r} for i, r in enumerate(mine))


class Loop:
    """One coordinator and consumers; messages take ``LATENCY_MS``; timers by (time, arming)."""

    def __init__(self) -> None:
        ids = itertools.count()
        self.coordinator = GroupCoordinator(
            "g", CoordinatorConfig(), lambda client: f"{client}-{next(ids)}"
        )
        self.now = 0
        self.seq = itertools.count()
        self.queue: list[tuple[int, int, tuple[Any, ...]]] = []
        self.timers: dict[tuple[str, str], int] = {}
        self.members: dict[str, ConsumerClient] = {}
        self.records: list[dict[str, Any]] = []

    def push(self, at: int, event: tuple[Any, ...]) -> None:
        heapq.heappush(self.queue, (at, next(self.seq), event))

    def apply(self, owner: str, effects: list[Effect]) -> None:
        for e in effects:
            if isinstance(e, Send):
                self.push(self.now + LATENCY_MS, ("deliver", e.dest, e.via or owner, e.message))
            elif isinstance(e, SetTimer):
                token = next(self.seq)
                self.timers[(owner, e.key)] = token
                self.push(e.at_ms, ("timer", owner, e.key, token))
            elif isinstance(e, CancelTimer):
                self.timers.pop((owner, e.key), None)
            elif isinstance(e, Log):
                self.records.append({"t_ms": self.now, "kind": e.kind, "member": owner, **e.fields})

    def start(self, name: str, strategies: tuple[str, ...], **extra: Any) -> ConsumerClient:
        config = ConsumerClientConfig(("orders", "payments"), strategies, **extra)
        old = self.members.get(name)
        n = 0 if old is None else int(old.address.rsplit("#", 1)[-1]) + 1
        member = ConsumerClient(name, config, CLUSTER, group_id="g", address=f"{name}#{n}")
        self.members[name] = member
        self.apply(name, member.start(self.now))
        return member

    def stop(self, name: str) -> None:
        self.apply(name, self.members[name].shutdown(self.now))

    def crash(self, name: str) -> None:
        self.apply(name, self.members[name].crash(self.now))

    def run(self, until: int) -> None:
        while self.queue and self.queue[0][0] <= until:
            at, _, event = heapq.heappop(self.queue)
            self.now = at
            if event[0] == "timer":
                _, owner, key, token = event
                if self.timers.get((owner, key)) != token:
                    continue
                del self.timers[(owner, key)]
                if owner == COORDINATOR_ADDRESS:
                    self.apply(owner, self.coordinator.fire(key, at))
                else:
                    self.apply(owner, self.members[owner].fire(key, at))
                continue
            _, dest, source, message = event
            if dest == COORDINATOR_ADDRESS:
                self.apply(COORDINATOR_ADDRESS, self.coordinator.handle(source, message, at))
                continue
            for name, m in self.members.items():
                if m.connection_address == dest:
                    self.apply(name, m.handle(message, at))
        self.now = until

    def owned(self) -> dict[str, list[str]]:
        return {
            n: [f"{tp.topic}-{tp.partition}" for tp in m.owned]
            for n, m in self.members.items()
            if m.state is not MemberState.STOPPED
        }

    def of(self, kind: str, member: str | None = None) -> list[dict[str, Any]]:
        return [
            r
            for r in self.records
            if r["kind"] == kind and (member is None or r["member"] == member)
        ]


def _group(strategies: tuple[str, ...], n: int = 3) -> Loop:
    loop = Loop()
    for i in range(n):
        loop.start(f"c{i}", strategies)
    loop.run(10_000)
    return loop


def _all_partitions(loop: Loop) -> list[str]:
    return sorted(p for parts in loop.owned().values() for p in parts)


EVERY = sorted([f"orders-{p}" for p in range(6)] + [f"payments-{p}" for p in range(3)])


# ------------------------------------------------------------------------------ protocol


@pytest.mark.parametrize(
    ("strategies", "expected"),
    [
        (("range",), RebalanceProtocol.EAGER),
        (("range", "cooperative-sticky"), RebalanceProtocol.EAGER),
        (("cooperative-sticky",), RebalanceProtocol.COOPERATIVE),
        (("sticky", "roundrobin"), RebalanceProtocol.EAGER),
    ],
)
def test_rebalance_protocol_is_the_highest_every_assignor_supports(
    strategies: tuple[str, ...], expected: RebalanceProtocol
) -> None:
    assert rebalance_protocol(strategies) is expected


def test_an_unknown_strategy_is_refused() -> None:
    with pytest.raises(UnknownAssignorError, match="nope"):
        rebalance_protocol(["range", "nope"])


# ------------------------------------------------------------------------------ eager


def test_eager_members_revoke_everything_before_rejoining() -> None:
    loop = _group(("range",))
    assert _all_partitions(loop) == EVERY
    assert {r["protocol"] for r in loop.of("consumer_assignment")} == {"range"}
    before = loop.owned()["c0"]
    loop.start("c3", ("range",))
    loop.run(20_000)
    revoked = loop.of("partitions_revoked", "c0")
    assert revoked and revoked[0]["partitions"] == before
    assert revoked[0]["reason"].startswith("eager")
    # the revocation comes before c0's next JoinGroup
    rejoin = [r["t_ms"] for r in loop.of("join_group_request", "c0") if r["t_ms"] >= 10_000]
    assert rejoin and revoked[0]["t_ms"] <= rejoin[0]
    assert _all_partitions(loop) == EVERY
    assert ownership_violations(_typed(loop.records)) == []


# ------------------------------------------------------------------------------ cooperative


def test_cooperative_join_moves_partitions_in_two_rebalances() -> None:
    """KIP-429: the first rebalance only takes partitions away (their owners revoke and rejoin);
    the follow-up rebalance gives them to the new member."""
    loop = _group(("cooperative-sticky",))
    generation = max(r["generation"] for r in loop.of("consumer_assignment"))
    loop.start("c3", ("cooperative-sticky",))
    loop.run(30_000)
    new = [r for r in loop.of("consumer_assignment", "c3")]
    assert new[0]["assigned"] == []  # generation g+1: nothing yet
    assert new[-1]["assigned"]  # the follow-up rebalance hands them over
    assert new[-1]["generation"] == new[0]["generation"] + 1 == generation + 2
    revoked = [r for r in loop.of("partitions_revoked") if r["member"] != "c3"]
    assert revoked and all(r["reason"] == "no longer assigned" for r in revoked)
    assert not [r for r in loop.of("partitions_revoked") if r["reason"].startswith("eager")]
    assert _all_partitions(loop) == EVERY
    assert sorted(len(p) for p in loop.owned().values()) == [2, 2, 2, 3]
    assert ownership_violations(_typed(loop.records)) == []


def test_the_ownership_rule_catches_a_leader_that_moves_partitions_in_one_rebalance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planted bug: a cooperative-sticky leader that skips ``adjustAssignment`` hands a
    partition to its new owner in the rebalance that takes it from the old one."""
    import members.consumer as consumer_mod

    monkeypatch.setattr(
        consumer_mod, "cooperative_adjust", lambda members, result: result.assignment
    )
    loop = _group(("cooperative-sticky",))
    loop.start("c3", ("cooperative-sticky",))
    loop.run(30_000)
    rules = {v.rule for v in ownership_violations(_typed(loop.records))}
    assert "cooperative_move_without_revocation" in rules


def test_the_ownership_rule_catches_a_member_that_keeps_a_revoked_partition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Planted bug: a cooperative member whose onPartitionsRevoked does nothing keeps
    consuming what the assignment took away while reporting only its assignment as owned."""
    monkeypatch.setattr(ConsumerClient, "_revoke", lambda self, partitions, reason: None)
    real = ConsumerClient._subscription

    def reports_assignment_only(self: ConsumerClient, assignor: str) -> Any:
        kept, self.owned = self.owned, [tp for tp in self.owned if tp in self._last_assigned]
        try:
            return real(self, assignor)
        finally:
            self.owned = kept

    monkeypatch.setattr(ConsumerClient, "_subscription", reports_assignment_only)
    loop = _group(("cooperative-sticky",))
    loop.start("c3", ("cooperative-sticky",))
    loop.run(30_000)
    rules = {v.rule for v in ownership_violations(_typed(loop.records))}
    assert "double_ownership" in rules or "cooperative_move_without_revocation" in rules


# ------------------------------------------------------------------------------ KIP-429 upgrade


def _bounce(loop: Loop, strategies: tuple[str, ...], start: int) -> int:
    t = start
    for name in sorted(loop.members):
        loop.run(t)
        loop.stop(name)
        loop.start(name, strategies)
        t += 30_000
    loop.run(t)
    return t


def test_two_bounce_upgrade_from_range_to_cooperative_sticky() -> None:
    loop = _group(("range",))
    t = _bounce(loop, ("range", "cooperative-sticky"), 20_000)
    # first bounce: everyone also offers cooperative-sticky, but range still wins the vote
    # and every member is still EAGER
    assert loop.of("consumer_assignment")[-1]["protocol"] == "range"
    assert {m.protocol for m in loop.members.values()} == {RebalanceProtocol.EAGER}
    _bounce(loop, ("cooperative-sticky",), t + 30_000)
    last = loop.of("consumer_assignment")[-1]
    assert last["protocol"] == "cooperative-sticky"
    assert {m.protocol for m in loop.members.values()} == {RebalanceProtocol.COOPERATIVE}
    assert _all_partitions(loop) == EVERY
    assert not loop.of("member_fatal")
    assert ownership_violations(_typed(loop.records)) == []


def test_one_bounce_upgrade_straight_to_cooperative_sticky_is_refused() -> None:
    """``[range]`` members and a ``[cooperative-sticky]`` member share no protocol: the
    coordinator answers INCONSISTENT_GROUP_PROTOCOL and the new consumer's poll throws."""
    loop = _group(("range",))
    loop.stop("c0")
    loop.start("c0", ("cooperative-sticky",))
    loop.run(30_000)
    responses = loop.of("join_group_response", "c0")
    assert responses[-1]["error"] == "INCONSISTENT_GROUP_PROTOCOL"
    assert [r["error"] for r in loop.of("member_fatal", "c0")] == ["INCONSISTENT_GROUP_PROTOCOL"]
    assert sorted(loop.owned()) == ["c1", "c2"]
    assert _all_partitions(loop) == EVERY


# ------------------------------------------------------------------------------ crash


@pytest.mark.parametrize("strategies", [("range",), ("cooperative-sticky",)])
def test_a_crashed_member_is_replaced_after_its_session_times_out(
    strategies: tuple[str, ...],
) -> None:
    loop = _group(strategies)
    loop.run(15_000)
    loop.crash("c1")
    loop.run(15_000 + 40_000)  # the session runs 45 s from the last heartbeat (>= 12 s)
    assert len([p for n, ps in loop.owned().items() for p in ps]) < len(EVERY)
    loop.run(120_000)
    removed = loop.of("member_removed")
    assert removed and removed[0]["member_id"].startswith("c1")
    assert _all_partitions(loop) == EVERY
    assert sorted(loop.owned()) == ["c0", "c2"]
    assert ownership_violations(_typed(loop.records)) == []


def test_a_static_member_closing_sends_no_leave_group() -> None:
    loop = Loop()
    loop.start("c0", ("range",), group_instance_id="i0")
    loop.start("c1", ("range",))
    loop.run(10_000)
    loop.stop("c0")
    loop.stop("c1")
    assert [r["member"] for r in loop.of("leave_group")] == ["c1"]


class _SendLog(Loop):
    """A :class:`Loop` that also keeps every request a member sends: (ms, member, type)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[int, str, str]] = []

    def apply(self, owner: str, effects: list[Effect]) -> None:
        for e in effects:
            if isinstance(e, Send) and owner != COORDINATOR_ADDRESS:
                self.sent.append((self.now, owner, type(e.message).__name__))
        super().apply(owner, effects)


def _stalled_pair(stall_ms: int, *, rejoin_first: bool) -> _SendLog:
    """Two eager consumers (session 10 s, max.poll.interval.ms 60 s), stable at 20 s; then
    c1 stalls for ``stall_ms``, right after sending a JoinGroup if ``rejoin_first``."""
    loop = _SendLog()
    for name in ("c0", "c1"):
        loop.start(
            name,
            ("range",),
            session_timeout_ms=10_000,
            heartbeat_interval_ms=3_000,
            max_poll_interval_ms=60_000,
        )
    loop.run(20_000)
    c1 = loop.members["c1"]
    if rejoin_first:
        loop.apply("c1", c1.handle(Subscribe(("orders",)), loop.now))
        assert c1.state is MemberState.PREPARING_REBALANCE
    loop.apply("c1", c1.handle(PollStall(stall_ms), loop.now))
    loop.run(20_000 + stall_ms + 40_000)
    return loop


def test_a_consumer_stalled_mid_join_is_evicted_and_rejoins_when_the_stall_ends() -> None:
    """KIP-62 with a JoinGroup in flight: the heartbeat thread is disabled
    (``MemberState#hasNotJoinedGroup``) and nobody polls the network client, so the JoinGroup
    answer waits for the next poll(): no SyncGroup and no Heartbeat during the stall, the
    coordinator evicts the member by its session timeout, and when the stall ends the member
    handles the stale answer, hears UNKNOWN_MEMBER_ID to its SyncGroup and joins again."""
    loop = _stalled_pair(30_000, rejoin_first=True)
    during = [(t, kind) for t, m, kind in loop.sent if m == "c1" and 20_000 < t < 50_000]
    assert during == []
    (removed,) = [r for r in loop.of("member_removed") if r["member_id"] == "c1-1"]
    assert removed["reason"] == "session_timeout" and removed["t_ms"] < 50_000
    answers = loop.of("join_group_response", "c1")
    assert answers[-1]["error"] == "NONE" and answers[-1]["t_ms"] > 50_000
    stale = [r for r in answers if r["t_ms"] == 50_000]
    assert stale and stale[0]["member_id"] == "c1-1"
    (sync,) = [r for r in loop.of("sync_group_response", "c1") if 50_000 <= r["t_ms"] <= 50_010]
    assert sync["error"] == "UNKNOWN_MEMBER_ID"
    assert not loop.of("poll_timeout") and not loop.of("leave_group")
    assert sorted(p for owned in loop.owned().values() for p in owned) == sorted(
        ["orders-0", "orders-1", "orders-2", "orders-3", "orders-4", "orders-5"]
        + ["payments-0", "payments-1", "payments-2"]
    )


def test_a_consumer_stalled_in_its_generation_leaves_at_the_poll_deadline() -> None:
    """A stall in STABLE: the heartbeat thread runs, keeps the session alive and leaves when
    max.poll.interval.ms has passed since the last poll (HeartbeatThread.run →
    handlePollTimeoutExpiry → maybeLeaveGroup)."""
    loop = _stalled_pair(70_000, rejoin_first=False)
    (expired,) = loop.of("poll_timeout", "c1")
    assert (expired["t_ms"], expired["last_poll_ms"], expired["in_group"]) == (80_000, 20_000, True)
    (leave,) = loop.of("leave_group", "c1")
    assert (leave["t_ms"], leave["reason"]) == (80_000, "poll timeout expired")
    beats = [t for t, m, kind in loop.sent if m == "c1" and kind == "HeartbeatRequest"]
    assert any(20_000 < t < 80_000 for t in beats)
