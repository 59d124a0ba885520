"""Every translated Kafka coordinator test, replayed through Kafka's real coordinator.

The translations in ``tests/coordinator/kafka/`` port ``GroupMetadataManagerTest`` /
``ClassicGroupTest`` onto groupsim; each :class:`~tests.coordinator.kafka.context.KafkaContext`
keeps a transcript of what its test did (requests with their network address and virtual time,
sleeps) and saw (responses, group records written, timers fired). Here each test runs with
:func:`~tests.coordinator.kafka.context.recording` on, and each context's transcript is
replayed, step by step, through :class:`tests.kafka_oracle.coordinator_replay.Differential`
(Kafka's ``GroupMetadataManager`` in the oracle JVM beside a fresh groupsim coordinator, timers
fired as Kafka's tests fire them, ``mode="poll"``). Two things are required at every step:

1. Kafka and groupsim agree (``Differential`` raises ``Mismatch``): responses, records written,
   timers fired and the timer table, modulo Kafka's random member ids.
2. The translation saw what that groupsim run saw: the same answers (to the same requests), the
   same records and the same timers fired (member ids mapped through the pairs learned from
   the JoinGroup answers).

So a translation and Kafka cannot drift apart: a changed translation, a changed coordinator or
another Kafka release shows up here.

What cannot be replayed, and why (the replay stops there and says so in the test id's
outcome counter; nothing after that point is compared):

* Back doors Kafka's tests use to reach into ``ClassicGroup`` and that the oracle driver has no
  step for: ``group.transitionTo`` (``force_state``), ``prepareRebalance``, replaying a record
  (``load``) and ``onUnloaded`` (``unload``). The requests before the first of them are
  replayed.
* ``createClassicGroup`` has no request either. It only makes the group exist before the first
  JoinGroup, so the replay omits it and accepts the one difference that follows: the empty
  group record Kafka (and groupsim) write when that JoinGroup creates the group.
* Tests listed in :data:`_NOT_REPLAYABLE` change the coordinator through its internals; they
  are not replayed at all.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from protocol.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.coordinator.kafka.context import (
    GROUP_ID,
    KafkaContext,
    join_request,
    recording,
    to_protocols,
)
from tests.kafka_oracle.coordinator_replay import (
    Advance,
    Call,
    DescribeGroups,
    Differential,
    Outcome,
    _groupsim_record,
    _groupsim_response,
    _map_key,
    _map_record,
    _map_response,
)

pytestmark = pytest.mark.kafka

_TRANSLATIONS = Path(__file__).resolve().parent.parent / "coordinator" / "kafka"

#: Steps of Kafka's tests that reach into ``ClassicGroup``; the oracle driver has no such step.
_BACK_DOORS = {"force_state", "prepare_rebalance", "load", "unload"}

#: Translations that change the coordinator through its internals (Kafka's ``ClassicGroupTest``
#: drives ``ClassicGroup`` methods no request reaches); test name -> why.
_NOT_REPLAYABLE = {
    "test_replace_group_instance": "parks a SyncGroup and replaces the member by hand",
    "test_complete_join_future": "completes a parked JoinGroup by hand",
    "test_complete_sync_future": "completes a parked SyncGroup by hand",
}

_REQUESTS: dict[str, type] = {
    "JoinGroup": JoinGroupRequest,
    "SyncGroup": SyncGroupRequest,
    "Heartbeat": HeartbeatRequest,
    "LeaveGroup": LeaveGroupRequest,
}
_RESPONSES: dict[str, type] = {
    "JoinGroup": JoinGroupResponse,
    "SyncGroup": SyncGroupResponse,
    "Heartbeat": HeartbeatResponse,
    "LeaveGroup": LeaveGroupResponse,
}


# --------------------------------------------------------------------------- collecting tests


def _cases() -> Iterator[Any]:
    """One pytest param per translated test case (parametrized tests expanded)."""
    for path in sorted(_TRANSLATIONS.glob("test_*.py")):
        module = importlib.import_module(f"tests.coordinator.kafka.{path.stem}")
        for name, func in inspect.getmembers(module, inspect.isfunction):
            if not name.startswith("test_") or func.__module__ != module.__name__:
                continue
            for label, kwargs in _expand(func):
                yield pytest.param(func, kwargs, id=f"{path.stem}::{name}{label}")


def _expand(func: Callable[..., None]) -> Iterator[tuple[str, dict[str, Any]]]:
    marks = [m for m in getattr(func, "pytestmark", []) if m.name == "parametrize"]
    axes = []
    for mark in marks:
        names = (
            [n.strip() for n in mark.args[0].split(",")]
            if isinstance(mark.args[0], str)
            else list(mark.args[0])
        )
        rows = []
        for i, value in enumerate(mark.args[1]):
            label = getattr(value, "id", None)
            values = value.values if hasattr(value, "values") else value
            if len(names) == 1 and not hasattr(value, "values"):
                values = (value,)
            rows.append((label or f"{i}", dict(zip(names, values, strict=True))))
        axes.append(rows)
    for combo in itertools.product(*axes):
        labels = [label for label, _ in combo]
        kwargs: dict[str, Any] = {}
        for _, part in combo:
            kwargs.update(part)
        yield (f"[{'-'.join(labels)}]" if labels else ""), kwargs


# --------------------------------------------------------------------------- the replay


class _Replay:
    """Replays one context's transcript; ``ids`` maps the translation's member ids to
    Kafka's (the fresh groupsim run is handed Kafka's ids, see ``Differential``)."""

    def __init__(self, diff: Differential, ctx: KafkaContext) -> None:
        self.diff = diff
        self.ctx = ctx
        self.ids: dict[str, str] = {}
        self.handles: dict[str, int] = {}  # translation source -> Differential handle
        self.created = False  # createClassicGroup was omitted; not yet compensated
        self.steps = 0
        self.id_order_steps = 0

    def k(self, member_id: str) -> str:
        return self.ids.get(member_id, member_id)

    def run(self) -> str | None:
        """Replay up to the end or the first back door; return that back door's name."""
        events = self.ctx.transcript
        i = 0
        while i < len(events):
            event = events[i]
            op = event["op"]
            if op in _BACK_DOORS:
                return op
            j = i + 1
            while j < len(events) and events[j]["op"] in (
                "response",
                "timer_set",
                "timer_cancel",
                "expired",
            ):
                j += 1
            seen = events[i:j]
            if op == "create_group":
                self.created = True
            elif op == "request":
                self._request(event, seen)
            elif op == "sleep":
                self._sleep(event, seen)
            elif op == "describe":
                self._describe(event)
            else:  # pragma: no cover - a new transcript op must be handled here
                raise AssertionError(f"unknown transcript op {op!r}")
            i = j
        return None

    # ----------------------------------------------------------------- steps

    def _request(self, event: dict[str, Any], seen: list[dict[str, Any]]) -> None:
        request = msgspec.convert(event["request"], _REQUESTS[event["api"]])
        call = Call(event["source"], self._map_request(request))
        handle = self.diff._handle + 1
        self.handles[event["source"]] = handle
        gs, _ = self.diff.step(call)
        self.steps += 1
        if "exception" in event:  # the translation expected the request to be refused
            assert gs.exception, "groupsim/Kafka accepted a request the translation refused"
            return
        records = [_groupsim_record(r) for r in self._records(event["records"])]
        if self.created and isinstance(request, JoinGroupRequest):
            # The group did not exist before this JoinGroup on the replay's side: its
            # creation record (empty, generation 0) comes first there.
            self.created = False
            if gs.records[:1] and not gs.records[0]["members"] and not records:
                gs.records = gs.records[1:]
        self._compare(gs, seen, records)

    def _sleep(self, event: dict[str, Any], seen: list[dict[str, Any]]) -> None:
        gs, _ = self.diff.step(Advance(event["ms"]))
        self.steps += 1
        records = [
            _groupsim_record(r)
            for e in seen
            if e["op"] == "expired"
            for r in self._records(e["records"])
        ]
        self._compare(gs, seen, records)

    def _describe(self, event: dict[str, Any]) -> None:
        gs, _ = self.diff.step(Call("describer", DescribeGroups((event["group_id"],))))
        self.steps += 1
        ((_, answer),) = gs.responses.values()
        (group,) = answer["groups"]
        seen = event["described"]
        assert (seen["state"], seen["protocol_type"], seen["protocol"]) == group[2:5]
        assert len(seen["members"]) == len(group[5])

    # ----------------------------------------------------------------- comparing

    def _compare(
        self, gs: Outcome, seen: list[dict[str, Any]], records: list[dict[str, Any]]
    ) -> None:
        answered: dict[int, tuple[str, dict[str, Any]]] = {}
        for e in seen:
            if e["op"] != "response":
                continue
            message = msgspec.convert(e["response"], _RESPONSES[e["api"]])
            answered[self.handles[e["dest"]]] = _groupsim_response(message)
        assert sorted(answered) == sorted(gs.responses), (
            f"the translation was answered for {sorted(answered)}, "
            f"groupsim/Kafka for {sorted(gs.responses)}"
        )
        for handle, (api, fields) in answered.items():
            self._learn(api, fields, gs.responses[handle][1])
        mine: dict[int, dict[str, Any]] = {}
        theirs: dict[int, dict[str, Any]] = {}
        for handle, (api, fields) in answered.items():
            mapped = _map_response(api, fields, self.k)
            other = gs.responses[handle][1]
            if api == "join":  # member order follows the ids' hash codes: compare as sets
                mapped["members"] = frozenset(mapped["members"])
                other = {**other, "members": frozenset(other["members"])}
                mine[handle], theirs[handle] = mapped, other
            else:
                assert mapped == other, f"{api} answer {handle}: {mapped} != {other}"
        if mine != theirs:
            self._compare_joins(mine, theirs)
        mapped_records = [_map_record(r, self.k) for r in records]
        assert _as_sets(mapped_records) == _as_sets(gs.records), "records written differ"
        fired = [_map_key(e["key"], self.k) for e in seen if e["op"] == "expired"]
        theirs = [key for key, _ in gs.fired]
        self._learn_heartbeats(fired, theirs)
        fired = [_map_key(e["key"], self.k) for e in seen if e["op"] == "expired"]
        if sorted(fired) != sorted(theirs):
            # Timers due at the same time fire in arming order, and members are armed in the
            # order of their ids' hash codes, which differ between the translation's ids and
            # Kafka's: a heartbeat expiration can then come before or after the join
            # completion that would have re-armed it. Such an expiration is a no-op (the
            # answers and records of the step, compared above, are the same); the join and
            # sync timers must still agree.
            assert [k for k in fired if not k.startswith("heartbeat:")] == [
                k for k in theirs if not k.startswith("heartbeat:")
            ], f"timers fired differ: {fired} != {theirs}"
            self.id_order_steps += 1

    def _compare_joins(
        self, mine: dict[int, dict[str, Any]], theirs: dict[int, dict[str, Any]]
    ) -> None:
        """JoinGroup answers that differ must differ only in who leads: when the leader did
        not rejoin, Kafka elects the first rejoined member in the order of the ids' hash codes
        (``ClassicGroup#maybeElectNewJoinedLeader``), and the translation's ids are not
        Kafka's. Everything else must agree, all answers must name one leader on each side,
        and that leader's answer alone lists the same members."""
        drop = ("leader", "members")
        for handle in mine:
            a = {k: v for k, v in mine[handle].items() if k not in drop}
            b = {k: v for k, v in theirs[handle].items() if k not in drop}
            assert a == b, f"join answer {handle}: {mine[handle]} != {theirs[handle]}"
        for side in (mine, theirs):
            leaders = {f["leader"] for f in side.values()}
            assert len(leaders) == 1, f"join answers name several leaders: {leaders}"
            listing = [f for f in side.values() if f["members"]]
            assert all(f["member_id"] in leaders for f in listing), side
        assert {f["members"] for f in mine.values()} == {f["members"] for f in theirs.values()}
        self.id_order_steps += 1

    def _learn_heartbeats(self, mine: list[str], theirs: list[str]) -> None:
        """Pair the one translation id and the one Kafka id that only appear as expired
        heartbeats (a member never answered, e.g. one removed while its JoinGroup parked)."""
        unknown_mine = [k for k in mine if k.startswith("heartbeat:") and k[10:] not in self.ids]
        known = set(self.ids.values())
        unknown_theirs = [k for k in theirs if k.startswith("heartbeat:") and k[10:] not in known]
        if len(unknown_mine) == 1 and len(unknown_theirs) == 1:
            self.ids[unknown_mine[0][10:]] = unknown_theirs[0][10:]

    def _learn(self, api: str, mine: dict[str, Any], theirs: dict[str, Any]) -> None:
        if api != "join":
            return
        for key in ("member_id", "leader"):
            if mine[key] and theirs[key] and mine[key] not in self.ids:
                self.ids[mine[key]] = theirs[key]

    def _records(self, data: list[Any]) -> list[Any]:
        from coordinator import GroupRecord

        return [msgspec.convert(r, GroupRecord) for r in data]

    def _map_request(self, request: Any) -> Any:
        k = self.k
        if isinstance(request, JoinGroupRequest | HeartbeatRequest):
            return msgspec.structs.replace(request, member_id=k(request.member_id))
        if isinstance(request, SyncGroupRequest):
            return msgspec.structs.replace(
                request,
                member_id=k(request.member_id),
                assignments=tuple((k(mid), data) for mid, data in request.assignments),
            )
        assert isinstance(request, LeaveGroupRequest)
        return msgspec.structs.replace(
            request,
            member_ids=tuple(k(mid) for mid in request.member_ids),
            members=tuple(
                MemberIdentity(k(m.member_id), m.group_instance_id, m.reason)
                for m in request.members
            ),
        )


def _as_sets(records: list[dict[str, Any] | None]) -> list[Any]:
    return [r if r is None else {**r, "members": frozenset(r["members"])} for r in records]


def _differential(oracle: Any, ctx: KafkaContext, session: str) -> Differential:
    """A ``Differential`` for one context whose groupsim side answers DescribeGroups with
    :meth:`~coordinator.group.GroupCoordinator.describe` (``GroupsimSide.describe`` rebuilds
    the answer from member views and blanks a rebalancing group's assignments, which Kafka
    keeps: adapted around here rather than changed in coordinator_replay)."""
    diff = Differential(oracle, ctx.config, GROUP_ID, session=session, mode="poll")
    side = diff.groupsim

    def describe(request: DescribeGroups, version: int) -> dict[str, Any]:
        groups = []
        for gid in request.group_ids:
            described = side.coordinator.describe()
            if gid != GROUP_ID or described.state == "Dead":
                groups.append((gid, 69 if version >= 6 else 0, "Dead", "", "", ()))
                continue
            members = tuple(
                (m.member_id, m.group_instance_id, m.client_id, m.metadata, m.assignment)
                for m in described.members
            )
            groups.append(
                (gid, 0, described.state, described.protocol_type, described.protocol, members)
            )
        return {"groups": tuple(groups)}

    side.describe = describe  # type: ignore[method-assign]
    return diff


def test_describe_of_a_rebalancing_group_keeps_assignments_as_kafka(kafka_oracle: Any) -> None:
    """``GroupMetadataManagerTest.testDescribeGroupRebalancing`` through requests only (the
    translation loads a record, which the driver cannot): a Stable member with an assignment,
    a second member joins (PreparingRebalance), DescribeGroups shows the first member's
    assignment, as Kafka's ``describeNoMetadata`` does."""
    ctx = KafkaContext()
    diff = _differential(kafka_oracle, ctx, "describe-rebalancing")
    try:
        join = msgspec.structs.replace(
            join_request(protocols=to_protocols("range"), session_timeout_ms=10_000),
            api_version=3,
        )
        diff.step(Call("a", join))
        diff.step(Advance(ctx.initial_rebalance_delay_ms))
        member_id = diff.groupsim.coordinator.leader_id
        assert member_id is not None
        assignment = ((member_id, b"x"),)
        diff.step(Call("a", SyncGroupRequest(GROUP_ID, member_id, 1, assignments=assignment)))
        diff.step(Call("b", join))
        gs, _ = diff.step(Call("c", DescribeGroups((GROUP_ID,))))
    finally:
        diff.close()
    ((_, described),) = gs.responses.values()
    (group,) = described["groups"]
    assert group[2] == "PreparingRebalance"
    assert (member_id, None, "client", b"", b"x") in group[5]
    kafka_oracle.compared["DescribeGroups of a rebalancing group"] += 1


@pytest.mark.parametrize(("test", "kwargs"), list(_cases()))
def test_translation_replays_through_kafka(
    kafka_oracle: Any, test: Callable[..., None], kwargs: dict[str, Any]
) -> None:
    """The translated test passes, and each of its contexts' transcripts replays through
    Kafka's coordinator with the answers, records and timers the translation saw."""
    if test.__name__ in _NOT_REPLAYABLE:
        pytest.skip(f"not replayable: {_NOT_REPLAYABLE[test.__name__]}")
    with recording() as made:
        test(**kwargs)
    stopped = []
    for n, ctx in enumerate(made):
        diff = _differential(kafka_oracle, ctx, f"translated-{n}")
        try:
            replay = _Replay(diff, ctx)
            back_door = replay.run()
        finally:
            diff.close()
        if back_door is not None:
            stopped.append(back_door)
        label = "whole" if back_door is None else "up to a back door"
        kafka_oracle.compared[f"translated-test contexts replayed {label}"] += 1
        kafka_oracle.compared["translated-test steps equal to Kafka"] += replay.steps
        kafka_oracle.compared[
            "translated-test steps where a leader or no-op heartbeat follows member-id order"
        ] += replay.id_order_steps
