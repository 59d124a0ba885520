"""The Connect leader's assignor run: ``WorkerCoordinator.onLeaderElected`` hands the JoinGroup
members to the assignor of the elected protocol (``eager``, ``incremental_cooperative`` for
``compatible``/``sessioned``, KIP-987's ``static``), whose instance lives as long as the worker
(its leader state spans rounds, KIP-415), and the ``assignor`` record that lets Kafka's assignor
replay the round (``scenarios/referee``).

Plain composition: :class:`members.worker.ConnectWorker` owns one :class:`LeaderAssignors` and
logs the record it returns.
"""

from __future__ import annotations

import base64
from typing import Any

from members.assignors import create_assignor
from members.assignors.base import ConfigSnapshot
from protocol.connect import ConnectorTaskId, ConnectProtocol
from protocol.group import JoinGroupResponse

__all__ = ["ASSIGNOR_BY_PROTOCOL", "LeaderAssignors", "LeaderRound"]

#: The assignor a leader runs for each elected protocol (WorkerCoordinator.onLeaderElected;
#: ``static`` is KIP-987's leader algorithm).
ASSIGNOR_BY_PROTOCOL = {
    ConnectProtocol.EAGER: "eager",
    ConnectProtocol.COMPATIBLE: "incremental_cooperative",
    ConnectProtocol.SESSIONED: "incremental_cooperative",
    ConnectProtocol.STATIC: "static",
}


def _items(connectors: tuple[str, ...], tasks: tuple[ConnectorTaskId, ...]) -> dict[str, object]:
    """One member's connectors and tasks as the ``assignor`` record logs them (its
    ``assigned`` or ``revoked`` half of a ``ConnectAssignment``): names in wire order and
    ``ConnectorTaskId`` strings (``connector-N``)."""
    return {"connectors": list(connectors), "tasks": [str(t) for t in tasks]}


class LeaderRound:
    """One leader round's outcome.

    Attributes:
        assignments: (member id, SyncGroup assignment bytes) per member, in the assignor's
            order.
        record: the fields of the ``assignor`` log record, in the order they are logged.
    """

    __slots__ = ("assignments", "record")

    def __init__(
        self, assignments: tuple[tuple[str, bytes], ...], record: dict[str, object]
    ) -> None:
        self.assignments = assignments
        self.record = record


class LeaderAssignors:
    """The assignor instances of one worker, one per assignor name, each made on first use
    (``WorkerCoordinator`` keeps its assignors for the worker's lifetime)."""

    def __init__(self) -> None:
        self._by_name: dict[str, Any] = {}

    def run(
        self,
        response: JoinGroupResponse,
        *,
        leader_id: str,
        generation: int,
        last_completed_generation: int,
        snapshot: ConfigSnapshot,
        fresh: ConfigSnapshot,
        max_delay_ms: int,
        now_ms: int,
    ) -> LeaderRound:
        """``WorkerCoordinator.onLeaderElected``: run the elected protocol's assignor.

        Args:
            response: the leader's JoinGroup response (protocol name and members' metadata).
            leader_id: this worker's member id.
            generation: the generation being assigned.
            last_completed_generation: the worker's last completed generation.
            snapshot: the config the worker advertised at JoinGroup time.
            fresh: the config the worker reads now (``refresh_snapshot``).
            max_delay_ms: ``scheduled.rebalance.max.delay.ms`` (virtual ms), for an assignor
                made now.
            now_ms: virtual time.

        Raises:
            members.assignors.base.AssignorInputError, protocol.primitives.DecodeError: the
                assignor cannot assign from these members (the worker's join fails).
        """
        protocol = ConnectProtocol.from_protocol_name(response.protocol_name or "default")
        name = ASSIGNOR_BY_PROTOCOL[protocol]
        assignor = self._by_name.get(name)
        if assignor is None:
            assignor = create_assignor(name, max_delay_ms=max_delay_ms)
            self._by_name[name] = assignor
        members = [(m.member_id, m.metadata) for m in response.members]
        # what the assignor reads, logged so that Kafka's assignor can replay the round
        # (scenarios/referee): the members' metadata bytes cannot be rebuilt from the other
        # records (a member's embedded allocation is its merged snapshot at join time)
        inputs: dict[str, object] = {
            "leader_id": leader_id,
            "members": [[m, base64.b64encode(md).decode("ascii")] for m, md in members],
            "snapshot": {"offset": snapshot.offset, "connectors": dict(snapshot.connectors)},
        }
        if fresh != snapshot:
            inputs["fresh_snapshot"] = {
                "offset": fresh.offset,
                "connectors": dict(fresh.connectors),
            }
        inputs["last_completed_generation"] = last_completed_generation
        inputs["max_delay_ms"] = max_delay_ms
        result = assignor.perform_assignment(
            leader_id=leader_id,
            protocol=protocol,
            members=members,
            snapshot=snapshot,
            refresh_snapshot=lambda: fresh,
            last_completed_generation=last_completed_generation,
            generation=generation,
            now_ms=now_ms,
        )
        extra: dict[str, object] = {}
        placements = getattr(result, "static_placements", None)
        if placements is not None:
            # KIP-987: where each static job went, and which static jobs have nowhere to go.
            extra["static_placements"] = [p.to_json() for p in placements]
            connectors, tasks = getattr(result, "unassigned_static_jobs", ((), ()))
            extra["unassigned_static_jobs"] = {
                "connectors": list(connectors),
                "tasks": [str(ConnectorTaskId(*t)) for t in tasks],
            }
        lost = getattr(getattr(assignor, "wildcard", assignor), "last_lost", None)
        if lost is not None and result.error == 0:
            # KIP-415: what the leader found lost this round (the scheduled_delay checker
            # judges whether it was postponed or handed out)
            extra["lost"] = {
                "connectors": list(lost[0]),
                "tasks": [str(ConnectorTaskId(*t)) for t in lost[1]],
            }
            extra["previous_members_present"] = lost[2]
            if lost[3]:
                # the workers that came back empty during the delay: lost work handed out at
                # its expiry goes to them (KIP-415; the lost_work_not_returned checker)
                extra["candidates"] = lost[3]
        record: dict[str, object] = {
            "generation": generation,
            "protocol": protocol.protocol_name,
            "assignor": name,
            "error": result.error,
            "delay_ms": result.delay_ms,
            "config_offset": result.config_offset,
            "assigned": {
                member_id: _items(a.connectors, a.tasks)
                for member_id, a in result.decoded.items()
                if a.connectors or a.tasks
            },
            "revoked": {
                member_id: _items(a.revoked_connectors, a.revoked_tasks)
                for member_id, a in result.decoded.items()
                if a.revoked_connectors or a.revoked_tasks
            },
            **extra,
            "inputs": inputs,
        }
        return LeaderRound(tuple(result.assignments.items()), record)
