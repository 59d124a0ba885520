"""The ``delay_request`` fault in the engine: a member's requests held out of their link's
FIFO order, and their late arrival at the coordinator.

A held request keeps its normal arrival slot on the link (later messages do not queue behind
it) and arrives ``delay_ms`` after it. When it arrives it is handled like any request, and a
``late_request`` record tells what the coordinator answered: that is how a request of an
older generation reaching the coordinator shows in the log (``stale_generation_accepted``,
:mod:`scenarios.check.protocol_checkers`). The answer goes back to the member unless the
member no longer waits for it — it sent another JoinGroup, SyncGroup or LeaveGroup since, it
dropped the connection the request came on, or its process stopped: Kafka's ``NetworkClient``
has failed that request and closed the connection, so its answer never arrives
(``AbstractCoordinator`` keeps one JoinGroup/SyncGroup in flight; Heartbeats go every
interval, and each is answered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from members.group_client import COORDINATOR_ADDRESS
from protocol.effects import Send
from protocol.group import (
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from scenarios.sim import wire_tap
from scenarios.sim.events import LateDeliver
from scenarios.sim.network import member_name

if TYPE_CHECKING:
    from scenarios.sim.engine import Engine

__all__ = ["REQUEST_NAME", "hold", "deliver", "not_coordinator"]

#: A ``delay_request``'s name of each group request.
REQUEST_NAME: dict[type, str] = {
    HeartbeatRequest: "heartbeat",
    SyncGroupRequest: "sync_group",
    JoinGroupRequest: "join_group",
    LeaveGroupRequest: "leave_group",
}
#: The response that answers each request; what a broker that is no longer the coordinator
#: answers it with.
_RESPONSE_OF: dict[type, type] = {
    HeartbeatRequest: HeartbeatResponse,
    SyncGroupRequest: SyncGroupResponse,
    JoinGroupRequest: JoinGroupResponse,
    LeaveGroupRequest: LeaveGroupResponse,
}
_NOT_COORDINATOR: dict[type, Any] = {
    SyncGroupRequest: SyncGroupResponse(error=ErrorCode.NOT_COORDINATOR),
    JoinGroupRequest: JoinGroupResponse(error=ErrorCode.NOT_COORDINATOR),
    LeaveGroupRequest: LeaveGroupResponse(error=ErrorCode.NOT_COORDINATOR),
}


def not_coordinator(request: Any) -> Any:
    """What a broker that is not (or no longer) the coordinator answers ``request`` with
    (``None`` for anything but a group request); a Heartbeat's answer echoes its correlation
    id."""
    if type(request) is HeartbeatRequest:
        return HeartbeatResponse(ErrorCode.NOT_COORDINATOR, request.correlation_id)
    return _NOT_COORDINATOR.get(type(request))


def hold(engine: Engine, owner: str, message: Any, at: int | None) -> bool:
    """Member connection ``owner`` (``Send.via``) sends ``message`` to the coordinator, due at
    ``at`` (``None``: lost).

    Marks the member's held requests of the same type as superseded; if a ``delay_request``
    of the member covers this request now, schedules its late arrival and returns True (the
    caller then does not deliver it)."""
    kind = type(message)
    name = REQUEST_NAME.get(kind)
    if name is None:
        return False
    key = (owner.partition("/")[0], kind)  # the member's, over all its connections
    if kind is not HeartbeatRequest:  # heartbeats go every interval, each one answered
        for late in engine._held.get(key, ()):
            late.superseded = True
    delay = engine.network.request_delay(member_name(owner), name, engine.now_ms)
    if delay is None or at is None:
        return False
    late = LateDeliver(
        owner, message, engine.now_ms, delay, coordinator_epoch=engine.coordinator_epoch
    )
    engine._held.setdefault(key, []).append(late)
    engine.push(at + delay, late)
    return True


def deliver(engine: Engine, late: LateDeliver) -> None:
    """A held request reaches the coordinator: handle it, log a ``late_request`` record
    (``error``: the immediate answer, ``null`` while the request is parked; ``dropped``: the
    member no longer waits for it), then carry out the coordinator's effects."""
    source, message = late.source, late.message
    kind = type(message)
    key = (source.partition("/")[0], kind)
    held = engine._held.get(key, [])
    if late in held:
        held.remove(late)
    if not held:
        engine._held.pop(key, None)
    if engine.coordinator_up and late.coordinator_epoch == engine.coordinator_epoch:
        effects = wire_tap.answered(
            engine.coordinator, engine.log, source, message, engine.now_ms, engine.io
        )
    else:  # sent to a broker that no longer hosts the group (a failover since): it answers
        effects = [Send(source, not_coordinator(message))]
    response = _RESPONSE_OF[kind]
    answer = next(
        (
            e
            for e in effects
            if isinstance(e, Send) and e.dest == source and type(e.message) is response
        ),
        None,
    )
    dropped = answer is not None and (late.superseded or engine.member_at(source) is None)
    if dropped:
        effects = [e for e in effects if e is not answer]
    fields: dict[str, Any] = {"member": member_name(source), "request": REQUEST_NAME[kind]}
    generation = getattr(message, "generation_id", None)
    if generation is not None:
        fields["generation"] = generation
    fields.update(
        sent_ms=late.sent_ms,
        delay_ms=late.delay_ms,
        error=answer.message.error.name if answer is not None else None,
        dropped=dropped,
    )
    engine.log.emit(engine.now_ms, "late_request", **fields)
    engine.apply(COORDINATOR_ADDRESS, effects)
