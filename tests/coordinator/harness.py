"""A deterministic test context for the group coordinator, without trio.

Shaped like Kafka's ``GroupMetadataManagerTestContext`` + ``MockCoordinatorTimer``: it owns a
:class:`~coordinator.group.GroupCoordinator`, a virtual clock and a keyed timer table, sends
requests, carries out the effects, and collects responses into :class:`Reply` slots.

Timer order: due timers fire by (deadline, arming sequence); re-arming a key gives it a new
sequence number (the runtime's rule too).
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from coordinator import CoordinatorConfig, GroupCoordinator, GroupRecord, GroupState
from protocol.effects import CancelTimer, Effect, Log, Send, SetTimer
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
)

GROUP = "connect-cluster"
SESSIONED = (("sessioned", b"S"), ("compatible", b"C"), ("default", b"D"))
COMPATIBLE = (("compatible", b"C"), ("default", b"D"))
EAGER = (("default", b"D"),)


class Reply:
    """The response slot of one request (Kafka tests' ``CompletableFuture``)."""

    def __init__(self, source: str, request: Any, sent_ms: int) -> None:
        self.source = source
        self.request = request
        self.sent_ms = sent_ms
        self.response: Any = None
        self.answered_ms: int | None = None
        # Group records written while the request was handled (Kafka's CoordinatorResult
        # records); filled by contexts that track writes (tests/coordinator/kafka/context.py).
        self.records: list[GroupRecord] = []

    @property
    def done(self) -> bool:
        return self.response is not None

    @property
    def error(self) -> ErrorCode:
        assert self.response is not None, f"{self.request} not answered"
        return self.response.error

    def __repr__(self) -> str:
        return f"Reply({self.source}, {type(self.request).__name__}, {self.response})"


def seeded_member_ids(seed: int = 0) -> Callable[[str], str]:
    """``client_id -> "<client_id>-<uuid4>"`` from a seeded generator (the runtime's rule)."""
    rng = random.Random(seed)
    return lambda client_id: f"{client_id}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"


def listed_member_ids(ids: Iterable[str]) -> Callable[[str], str]:
    """Hand out exactly these member ids, in order (to construct Java hash orders)."""
    it = iter(ids)
    return lambda client_id: next(it)


class CoordinatorContext:
    """A coordinator plus virtual clock plus timer table.

    Args:
        config: coordinator settings, or keyword overrides of the defaults.
        member_ids: the ``new_member_id`` callback (default: seeded UUIDs).
    """

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        member_ids: Callable[[str], str] | None = None,
        group_id: str = GROUP,
        **overrides: Any,
    ) -> None:
        if config is None:
            config = CoordinatorConfig(**overrides)
        self.config = config
        self.group_id = group_id
        self.member_ids = member_ids or seeded_member_ids()
        self.coordinator = GroupCoordinator(group_id, config, self.member_ids)
        self.now_ms = 0
        self.timers: dict[str, tuple[int, int]] = {}  # key -> (deadline, arming seq)
        self._seq = itertools.count()
        self._outstanding: dict[tuple[str, type], list[Reply]] = {}
        self.sent: list[tuple[int, str, Response]] = []
        self.logs: list[tuple[int, Log]] = []
        self.fired: list[tuple[int, str]] = []

    # ----------------------------------------------------------------- views

    @property
    def state(self) -> GroupState:
        return self.coordinator.state

    @property
    def generation(self) -> int:
        return self.coordinator.generation_id

    def log_kinds(self, kind: str) -> list[dict[str, Any]]:
        return [log.fields for _, log in self.logs if log.kind == kind]

    def transitions(self) -> list[tuple[str, str]]:
        return [(f["from"], f["to"]) for f in self.log_kinds("group_state")]

    def removed(self) -> list[tuple[str, str]]:
        return [(f["member_id"], f["reason"]) for f in self.log_kinds("member_removed")]

    def outstanding(self) -> list[Reply]:
        return [r for replies in self._outstanding.values() for r in replies]

    # ----------------------------------------------------------------- driving

    def send(self, source: str, request: Any) -> Reply:
        reply = Reply(source, request, self.now_ms)
        self._outstanding.setdefault((source, _response_type(request)), []).append(reply)
        self.apply(self.coordinator.handle(source, request, self.now_ms))
        return reply

    def apply(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                self.sent.append((self.now_ms, effect.dest, effect.message))
                waiting = self._outstanding.get((effect.dest, type(effect.message)))
                assert waiting, f"response nobody waits for: {effect}"
                reply = waiting.pop()  # the latest request (older parked ones were replaced)
                reply.response = effect.message
                reply.answered_ms = self.now_ms
            elif isinstance(effect, SetTimer):
                assert effect.at_ms >= self.now_ms, effect
                self.timers[effect.key] = (effect.at_ms, next(self._seq))
            elif isinstance(effect, CancelTimer):
                self.timers.pop(effect.key, None)
            elif isinstance(effect, Log):
                self.logs.append((self.now_ms, effect))
            else:  # pragma: no cover
                raise AssertionError(effect)

    def sleep(self, ms: int) -> list[tuple[str, Response]]:
        """Advance the clock by ``ms``, firing due timers by (deadline, sequence).

        Returns the (dest, response) pairs delivered meanwhile."""
        target = self.now_ms + ms
        first = len(self.sent)
        while self.timers:
            key, (deadline, _) = min(self.timers.items(), key=lambda kv: kv[1])
            if deadline > target:
                break
            del self.timers[key]
            self.now_ms = deadline
            self.fired.append((deadline, key))
            self.apply(self.coordinator.fire(key, deadline))
        self.now_ms = target
        return [(dest, msg) for _, dest, msg in self.sent[first:]]

    def unload(self) -> None:
        self.apply(self.coordinator.unload(self.now_ms))

    def failover(self, config: CoordinatorConfig | None = None) -> GroupRecord | None:
        """The partition moves: the old coordinator unloads (its timer table goes with it),
        a new one loads the last stored record at the same virtual time, optionally with
        other settings. Returns the record loaded."""
        record = self.coordinator.stored_record()
        self.unload()
        self.timers.clear()
        if config is not None:
            self.config = config
        self.coordinator, effects = GroupCoordinator.load(
            self.group_id, self.config, self.member_ids, record, self.now_ms
        )
        self.apply(effects)
        return record

    # ----------------------------------------------------------------- requests

    def join(
        self,
        source: str,
        member_id: str = "",
        protocols: tuple[tuple[str, bytes], ...] = SESSIONED,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 60_000,
        protocol_type: str = "connect",
        api_version: int = 9,
        group_id: str | None = None,
    ) -> Reply:
        return self.send(
            source,
            JoinGroupRequest(
                group_id=self.group_id if group_id is None else group_id,
                member_id=member_id,
                protocol_type=protocol_type,
                protocols=protocols,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                client_id=source,
                api_version=api_version,
            ),
        )

    def join_new(self, source: str, **kwargs: Any) -> tuple[str, Reply]:
        """KIP-394: JoinGroup without id → MEMBER_ID_REQUIRED, then rejoin with that id.

        Returns (member id, the second JoinGroup's reply)."""
        first = self.join(source, **kwargs)
        assert first.done and first.error is ErrorCode.MEMBER_ID_REQUIRED, first
        member_id = first.response.member_id
        return member_id, self.join(source, member_id=member_id, **kwargs)

    def sync(
        self,
        source: str,
        member_id: str,
        generation_id: int | None = None,
        assignments: Iterable[tuple[str, bytes]] = (),
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        group_id: str | None = None,
    ) -> Reply:
        return self.send(
            source,
            SyncGroupRequest(
                group_id=self.group_id if group_id is None else group_id,
                member_id=member_id,
                generation_id=self.generation if generation_id is None else generation_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=tuple(assignments),
            ),
        )

    def heartbeat(
        self,
        source: str,
        member_id: str,
        generation_id: int | None = None,
        group_id: str | None = None,
    ) -> Reply:
        return self.send(
            source,
            HeartbeatRequest(
                group_id=self.group_id if group_id is None else group_id,
                member_id=member_id,
                generation_id=self.generation if generation_id is None else generation_id,
            ),
        )

    def leave(self, source: str, *member_ids: str, group_id: str | None = None) -> Reply:
        return self.send(
            source,
            LeaveGroupRequest(
                group_id=self.group_id if group_id is None else group_id,
                member_ids=tuple(member_ids),
            ),
        )

    # ----------------------------------------------------------------- scenarios

    def form_group(self, sources: Iterable[str], **join_kwargs: Any) -> dict[str, str]:
        """Bring the listed members into one generation (KIP-394 joins, initial delay, join
        completion); the group ends CompletingRebalance. Returns source → member id."""
        ids: dict[str, str] = {}
        replies = []
        for source in sources:
            ids[source], reply = self.join_new(source, **join_kwargs)
            replies.append(reply)
        self.sleep(self.config.initial_rebalance_delay_ms)
        # Keep sleeping while the initial-delay chain extends.
        while not all(r.done for r in replies):
            self.sleep(self.config.initial_rebalance_delay_ms)
        assert all(r.error is ErrorCode.NONE for r in replies), replies
        assert self.state is GroupState.COMPLETING_REBALANCE
        return ids

    def stable_group(self, sources: Iterable[str], **join_kwargs: Any) -> dict[str, str]:
        """:meth:`form_group`, then every member syncs (leader first, assignment
        ``b"A:<member_id>"`` each); the group ends Stable."""
        ids = self.form_group(sources, **join_kwargs)
        leader = self.coordinator.leader_id
        by_id = {mid: src for src, mid in ids.items()}
        assignments = [(mid, f"A:{mid}".encode()) for mid in ids.values()]
        lead = self.sync(by_id[leader], leader, assignments=assignments)
        assert lead.done and lead.error is ErrorCode.NONE, lead
        for source, mid in ids.items():
            if mid != leader:
                assert self.sync(source, mid).error is ErrorCode.NONE
        assert self.state is GroupState.STABLE
        return ids


_RESPONSE_TYPES: dict[type, type] = {
    JoinGroupRequest: JoinGroupResponse,
    SyncGroupRequest: SyncGroupResponse,
    HeartbeatRequest: HeartbeatResponse,
    LeaveGroupRequest: LeaveGroupResponse,
}


def _response_type(request: Any) -> type:
    return _RESPONSE_TYPES[type(request)]
