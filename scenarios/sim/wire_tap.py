"""What left the coordinator, logged where a checker needs it and a member's own records cannot
show it: a wire tap between the coordinator and the network, shared by the engine and
``groupsim serve``.

``rebalance_heartbeat`` — a Heartbeat that reached a group in PreparingRebalance, with the
answer the coordinator gave (Kafka answers REBALANCE_IN_PROGRESS unless the member or the
generation is invalid: ``GroupMetadataManager#classicGroupHeartbeatToClassicGroup``). Judged by
``heartbeat_not_rebalancing`` (:mod:`scenarios.check.contracts`). Heartbeats are otherwise
logged only with ``log_heartbeats``; those of a rebalance are few.

``completing_heartbeat`` — the same fields for a Heartbeat that reached a group in
CompletingRebalance (a member heartbeats while it waits for its SyncGroup answer, the
leader's assignment not in yet); Kafka answers it as in Stable: NONE, after the same
validations (``classicGroupHeartbeatToClassicGroup``). Judged by ``heartbeat_completing_refused``.

``completing_join`` — a JoinGroup of a known member that reached a group in
CompletingRebalance, with whether its protocols (names and metadata bytes) equal the ones the
coordinator holds for the member and the answer that left at once (none: parked for a new join
phase). Kafka answers a same-metadata rejoin (a member whose JoinGroup answer was lost) with
the current generation and starts no join phase; changed metadata starts one
(``GroupMetadataManager#classicGroupJoinExistingMember``, ``ClassicGroupMember#matches``). No
member record can tell the two apart (the bytes are not logged): judged by
``completing_rejoin_rebalanced`` and ``completing_rejoin_not_rebalanced``. Both the engine
and ``groupsim serve`` log it.

``bounded_join`` — a JoinGroup that reached a coordinator whose ``group.max.size`` or
``group.{min,max}.session.timeout.ms`` are not Kafka's defaults (so no log of a group with the
default settings changes), with the request's session timeout, the bounds, and what
``GroupMetadataManager#acceptJoiningMember`` reads (the group's state, its member count,
how many members await a JoinGroup answer, whether the sender is a member and already awaits
one), taken before it is handled, and the answer that left at once. Judged by
:mod:`scenarios.check.coordinator_config_contracts` (KIP-389's ``group.max.size``, the
session bounds of ``GroupCoordinatorService#joinGroup``).
"""

from __future__ import annotations

from typing import Any

from coordinator.config import CoordinatorConfig
from coordinator.group import GroupCoordinator
from coordinator.state import GroupState
from protocol.effects import Effect, Send
from protocol.group import HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse
from scenarios.eventlog import EventLog
from scenarios.sim.coordinator_io import CoordinatorIO
from scenarios.sim.network import member_name

__all__ = [
    "answered",
    "taps",
    "rebalance_heartbeat",
    "heartbeat_answer",
    "completing_join",
    "completing_join_answer",
    "bounded_join",
    "bounded_join_answer",
]

#: The record the tap writes for a Heartbeat reaching a group in each state it watches.
_TAPPED = {
    GroupState.PREPARING_REBALANCE: "rebalance_heartbeat",
    GroupState.COMPLETING_REBALANCE: "completing_heartbeat",
}


def answered(
    coordinator: GroupCoordinator,
    log: EventLog,
    source: str,
    request: Any,
    now_ms: int,
    io: CoordinatorIO | None = None,
) -> list[Effect]:
    """The coordinator's effects for one request from ``source`` (a simulated member's
    address), with what the tap sees written to ``log`` (and, with ``io``, the request and
    its answers: :mod:`scenarios.sim.coordinator_io`)."""
    tapped = taps(coordinator, request)
    rejoin = completing_join(coordinator, request)
    bounded = bounded_join(coordinator, request)
    if io is not None:
        handle = io.request(now_ms, source, request)
        effects = coordinator.handle(source, request, now_ms)
        io.handled(now_ms, handle, source, request, effects)
    else:
        effects = coordinator.handle(source, request, now_ms)
    if tapped:
        answer = heartbeat_answer(effects)
        fields = rebalance_heartbeat(coordinator, request, answer, member_name(source))
        log.emit(now_ms, tapped, **fields)
    if rejoin is not None:
        fields = completing_join_answer(rejoin, effects, source, member_name(source))
        log.emit(now_ms, "completing_join", **fields)
    if bounded is not None:
        fields = bounded_join_answer(bounded, effects, source, member_name(source))
        log.emit(now_ms, "bounded_join", **fields)
    return effects


def _join_answer(effects: list[Effect], source: str) -> JoinGroupResponse | None:
    """The JoinGroupResponse among ``effects`` that left for ``source`` at once, if any."""
    return next(
        (
            e.message
            for e in effects
            if isinstance(e, Send) and e.dest == source and type(e.message) is JoinGroupResponse
        ),
        None,
    )


#: The coordinator settings whose non-default values make the tap log ``bounded_join``.
_DEFAULTS = CoordinatorConfig()


def bounded_join(coordinator: GroupCoordinator, request: Any) -> dict[str, Any] | None:
    """For a JoinGroup about to reach ``coordinator`` when its ``group.max.size`` or session
    bounds differ from Kafka's defaults, the fields of the ``bounded_join`` record known
    before it is handled: ``member_id`` and ``session_timeout_ms`` (the request's, virtual
    ms), ``min_session_timeout_ms``, ``max_session_timeout_ms``, ``max_size`` (the
    coordinator's), ``state`` (the group's, as ``group_state`` names it), ``size`` (members),
    ``awaiting`` (members awaiting a JoinGroup answer), ``known`` (the member id is a member)
    and ``awaiting_member`` (that member already awaits one); ``None`` for any other request
    or a coordinator with the default settings."""
    cfg = coordinator.config
    if type(request) is not JoinGroupRequest or (
        cfg.max_size == _DEFAULTS.max_size
        and cfg.min_session_timeout_ms == _DEFAULTS.min_session_timeout_ms
        and cfg.max_session_timeout_ms == _DEFAULTS.max_session_timeout_ms
    ):
        return None
    size, awaiting = coordinator.join_counts()  # (no view of every member: O(1) allocations)
    held = coordinator.member(request.member_id) if request.member_id else None
    return {
        "member_id": request.member_id,
        "session_timeout_ms": request.session_timeout_ms,
        "min_session_timeout_ms": cfg.min_session_timeout_ms,
        "max_session_timeout_ms": cfg.max_session_timeout_ms,
        "max_size": cfg.max_size,
        "state": coordinator.state.value,
        "size": size,
        "awaiting": awaiting,
        "known": held is not None,
        "awaiting_member": held is not None and held.awaiting_join,
    }


def bounded_join_answer(
    bounded: dict[str, Any], effects: list[Effect], source: str, member: str
) -> dict[str, Any]:
    """The whole ``bounded_join`` record: ``bounded`` (from :func:`bounded_join`) with the
    ``error`` of the JoinGroup answer among ``effects`` that left for ``source`` at once
    (``None``: parked, the member was let in) and ``member``, the name the log gives it."""
    joined = _join_answer(effects, source)
    return {**bounded, "error": joined.error.name if joined is not None else None, "member": member}


def completing_join_answer(
    rejoin: dict[str, Any], effects: list[Effect], source: str, member: str
) -> dict[str, Any]:
    """The whole ``completing_join`` record: ``rejoin`` (from :func:`completing_join`, taken
    before the request was handled) with the answer among the coordinator's ``effects`` that
    left for ``source`` at once (``error``, ``generation``: ``None`` when the JoinGroup was
    parked for a new join phase) and ``member``, the name the log gives the member at
    ``source`` (the engine's member name; ``groupsim serve``'s ``<client.id>#<n>``)."""
    joined = _join_answer(effects, source)
    return {
        **rejoin,
        "error": joined.error.name if joined is not None else None,
        "generation": joined.generation_id if joined is not None else None,
        "member": member,
    }


def completing_join(coordinator: GroupCoordinator, request: Any) -> dict[str, Any] | None:
    """For a JoinGroup of a member the group knows (its member id, and its instance id mapped
    to that id) about to reach ``coordinator`` in CompletingRebalance, the fields of the
    ``completing_join`` record known before it is handled (``member_id``, ``same_metadata``,
    ``group_generation``); ``None`` for any other request."""
    if (
        type(request) is not JoinGroupRequest
        or coordinator.state is not GroupState.COMPLETING_REBALANCE
    ):
        return None
    held = coordinator.member(request.member_id)
    iid = request.group_instance_id
    if held is None or (iid is not None and coordinator.static_member_id(iid) != request.member_id):
        return None
    return {
        "member_id": request.member_id,
        "same_metadata": held.protocols == request.protocols,
        "group_generation": coordinator.generation_id,
    }


def taps(coordinator: GroupCoordinator, request: Any) -> str | None:
    """The record kind the tap logs for ``request``, about to reach ``coordinator``
    (``rebalance_heartbeat``, ``completing_heartbeat``), or ``None``."""
    if type(request) is not HeartbeatRequest:
        return None
    return _TAPPED.get(coordinator.state)


def heartbeat_answer(effects: list[Effect]) -> HeartbeatResponse | None:
    """The HeartbeatResponse among the coordinator's effects (None when it sent none)."""
    return next(
        (
            e.message
            for e in effects
            if isinstance(e, Send) and type(e.message) is HeartbeatResponse
        ),
        None,
    )


def rebalance_heartbeat(
    coordinator: GroupCoordinator,
    request: HeartbeatRequest,
    answer: HeartbeatResponse | None,
    member: str,
) -> dict[str, Any]:
    """The fields of a ``rebalance_heartbeat`` or ``completing_heartbeat`` record
    (``member``: the sender's name or address)."""
    return {
        "member_id": request.member_id,
        "generation": request.generation_id,
        "group_generation": coordinator.generation_id,
        "error": answer.error.name if answer is not None else None,
        "member": member,
    }
