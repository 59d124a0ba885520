"""What reaches and leaves the simulated coordinator, logged for the Kafka referee.

With ``coordinator_io`` on (:func:`scenarios.sim.runner.simulate`; ``groupsim chaos
--referee kafka`` turns it on), the engine logs, besides its usual records:

* ``coordinator_opened`` (once, before the first request): the group id and the
  coordinator's settings (:class:`coordinator.config.CoordinatorConfig`);
* ``coordinator_request``: each JoinGroup, SyncGroup, Heartbeat and LeaveGroup as it reaches
  the coordinator (after the network, faults and ``delay_request`` holds), with a ``handle``
  (its number in the run), the sender's connection address, the API, its version, the
  header client id, the whole request body as the harness's coordinator driver reads it
  (``GroupsimCoordinatorDriver``: snake_case fields, bytes base64), and ``member_uuids``:
  the UUIDs of the member ids the coordinator drew while handling it (the run's seeded
  random choice, which the replay hands to Kafka's ``ClassicGroup#generateMemberId``);
* ``coordinator_timer``: a coordinator timer fired (``key`` as groupsim names it);
* ``coordinator_response``: each answer the coordinator sent, with the ``handle`` of the
  request it answers (a connection's requests of one API are answered in the order they
  came), and the compared fields.

A coordinator failover is logged by its ``fault`` record and the reload's ``group_loaded``;
the old coordinator's NOT_COORDINATOR answers to parked requests are ``coordinator_response``
records (the engine passes its ``unload`` effects to :meth:`CoordinatorIO.answers`), and the
reloaded coordinator draws member ids through :meth:`CoordinatorIO.drawing` too, so the
referee replays past a failover (``docs/chaos.md``). Heartbeats are many, so the option
also turns off the engine's quiet skipping (a skipped heartbeat is one Kafka's coordinator
would miss); the other records of the run are the same with and without it.
"""

from __future__ import annotations

import base64
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

from coordinator.config import CoordinatorConfig
from protocol.effects import Effect, Send
from protocol.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from scenarios.eventlog import EventLog

__all__ = ["API_VERSIONS", "CoordinatorIO", "request_body", "response_fields"]

#: API versions logged for requests that carry none (JoinGroup carries its own): those of
#: the clients groupsim models (Kafka 4.0's ``SyncGroup`` v5, ``Heartbeat`` v4,
#: ``LeaveGroup`` v5; the driver turns a member-id list into a v3+ batch, as the broker does).
API_VERSIONS = {"sync": 5, "heartbeat": 4, "leave": 5}

_API: dict[type, str] = {
    JoinGroupRequest: "join",
    SyncGroupRequest: "sync",
    HeartbeatRequest: "heartbeat",
    LeaveGroupRequest: "leave",
}
_ANSWER: dict[type, str] = {
    JoinGroupResponse: "join",
    SyncGroupResponse: "sync",
    HeartbeatResponse: "heartbeat",
    LeaveGroupResponse: "leave",
}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def request_body(request: Any, member_key: Callable[[str], str] = str) -> dict[str, Any]:
    """A group request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) as the driver's ``body``
    (``GroupsimCoordinatorDriver`` javadoc); ``member_key`` maps each member id (a replay
    that renames members passes its mapping)."""
    if isinstance(request, JoinGroupRequest):
        return {
            "group_id": request.group_id,
            "member_id": member_key(request.member_id),
            "group_instance_id": request.group_instance_id,
            "protocol_type": request.protocol_type,
            "protocols": [{"name": n, "metadata": _b64(m)} for n, m in request.protocols],
            "session_timeout_ms": request.session_timeout_ms,
            "rebalance_timeout_ms": request.rebalance_timeout_ms,
            "reason": request.reason,
        }
    if isinstance(request, SyncGroupRequest):
        return {
            "group_id": request.group_id,
            "member_id": member_key(request.member_id),
            "generation_id": request.generation_id,
            "group_instance_id": request.group_instance_id,
            "protocol_type": request.protocol_type,
            "protocol_name": request.protocol_name,
            "assignments": [
                {"member_id": member_key(mid), "assignment": _b64(data)}
                for mid, data in request.assignments
            ],
        }
    if isinstance(request, HeartbeatRequest):
        return {
            "group_id": request.group_id,
            "member_id": member_key(request.member_id),
            "generation_id": request.generation_id,
            "group_instance_id": request.group_instance_id,
        }
    return {
        "group_id": request.group_id,
        "members": [
            {
                "member_id": member_key(m.member_id),
                "group_instance_id": m.group_instance_id,
                "reason": m.reason,
            }
            for m in request.identities()
        ],
    }


def response_fields(message: Any) -> dict[str, Any]:
    """An answer's compared fields, in the driver's response shape (a JoinGroup's unset
    protocol name as ``""``, ``JoinGroupResponseData``'s default; bytes base64)."""
    if isinstance(message, JoinGroupResponse):
        return {
            "error_code": int(message.error),
            "generation_id": message.generation_id,
            "protocol_type": message.protocol_type,
            "protocol_name": message.protocol_name or "",
            "leader": message.leader,
            "member_id": message.member_id,
            "skip_assignment": message.skip_assignment,
            "members": [
                [m.member_id, m.group_instance_id, _b64(m.metadata)] for m in message.members
            ],
        }
    if isinstance(message, SyncGroupResponse):
        return {
            "error_code": int(message.error),
            "protocol_type": message.protocol_type,
            "protocol_name": message.protocol_name,
            "assignment": _b64(message.assignment),
        }
    if isinstance(message, HeartbeatResponse):
        return {"error_code": int(message.error)}
    return {
        "error_code": int(message.error),
        "members": [[m.member_id, m.group_instance_id, int(m.error)] for m in message.members],
    }


class CoordinatorIO:
    """The engine's tap on its coordinator (one per run); see the module docstring.

    Args:
        log: the run's event log.
        group_id: the group the coordinator holds.
        loaded: the loaded scenario (its ``coordinator_config``).
    """

    def __init__(self, log: EventLog, group_id: str, loaded: Any) -> None:
        self.log = log
        self._group_id = group_id
        self._config: CoordinatorConfig = loaded.coordinator_config
        self._opened = False
        self._handles = 0
        self._open: defaultdict[tuple[str, str], deque[int]] = defaultdict(deque)
        self._drawn: list[str] = []

    def drawing(self, new_member_id: Callable[[str], str]) -> Callable[[str], str]:
        """``new_member_id`` (the coordinator's member-id callback), noting each id it draws
        (``member_uuids`` of the request being handled)."""

        def draw(client_id: str) -> str:
            member_id = new_member_id(client_id)
            self._drawn.append(member_id[len(client_id) + 1 :])
            return member_id

        return draw

    def opened(self, now_ms: int) -> None:
        """Log the coordinator's settings (``coordinator_opened``) once."""
        self._opened = True
        group_id, config = self._group_id, self._config
        self.log.emit(
            now_ms,
            "coordinator_opened",
            group=group_id,
            initial_rebalance_delay_ms=config.initial_rebalance_delay_ms,
            min_session_timeout_ms=config.min_session_timeout_ms,
            max_session_timeout_ms=config.max_session_timeout_ms,
            max_size=config.max_size,
            new_member_join_timeout_ms=config.new_member_join_timeout_ms,
            protocol_tie_break=config.protocol_tie_break,
        )

    def request(self, now_ms: int, source: str, request: Any) -> int | None:
        """Note a request reaching the coordinator; returns its handle (None if not a group
        request or the tap stopped). Call :meth:`handled` after the coordinator handled it."""
        api = _API.get(type(request))
        if api is None:
            return None
        if not self._opened:
            self.opened(now_ms)
        self._handles += 1
        self._drawn = []
        self._open[(source, api)].append(self._handles)
        return self._handles

    def handled(
        self, now_ms: int, handle: int | None, source: str, request: Any, effects: list[Effect]
    ) -> None:
        """Log the request of ``handle`` (with the member ids drawn meanwhile) and the
        answers among ``effects``."""
        if handle is None:
            return
        api = _API[type(request)]
        fields: dict[str, Any] = {
            "handle": handle,
            "source": source,
            "api": api,
            "version": request.api_version if api == "join" else API_VERSIONS[api],
            "client_id": request.client_id if api == "join" else source,
            "body": request_body(request),
        }
        if self._drawn:
            fields["member_uuids"] = self._drawn
            self._drawn = []
        self.log.emit(now_ms, "coordinator_request", **fields)
        self.answers(now_ms, effects)

    def timer(self, now_ms: int, key: str, effects: list[Effect]) -> None:
        """Log a coordinator timer that fired and the answers it sent."""
        self.log.emit(now_ms, "coordinator_timer", key=key)
        self.answers(now_ms, effects)

    def answers(self, now_ms: int, effects: list[Effect]) -> None:
        """Log each answer among the coordinator's ``effects`` with its request's handle."""
        for effect in effects:
            if type(effect) is not Send:
                continue
            api = _ANSWER.get(type(effect.message))
            if api is None:
                continue
            waiting = self._open.get((effect.dest, api))
            handle = waiting.popleft() if waiting else None
            self.log.emit(
                now_ms,
                "coordinator_response",
                handle=handle,
                source=effect.dest,
                api=api,
                response=response_fields(effect.message),
            )
