"""The engine of ``groupsim assign``: run one Connect assignor over one or more rounds.

Input (JSON object; keys outside these are rejected)::

    {"assignor": "incremental_cooperative" | "eager" | "static",
     "protocol": "sessioned",            # optional: "eager", "compatible", "sessioned",
                                         # "static"; default "sessioned" (incremental),
                                         # "eager" (eager), "static" (static, its only one)
     "config": {"scheduled.rebalance.max.delay.ms": 300000},          # optional
     "rounds": [
       {"time_ms": 0,                    # optional, default 0 (virtual ms, never decreasing)
        "generation": 1001,              # optional, default previous + 1 (first: 1)
        "last_completed_generation": 1000,   # optional, default generation - 1
        "leader": "worker1",             # optional, default the first member
        "config_offset": 620,            # the leader's config snapshot offset, default 0
        "connectors": {"connector1": 4}, # the leader's snapshot: connector -> task count
        "members": {                     # JoinGroup order; each member's current allocation
          "worker1": {"url": "http://worker1:8083", "config_offset": 620,
                      "connectors": ["connector1"], "tasks": ["connector1-0"]},
          "worker2": {},                 # no connectors/tasks keys: a null allocation
          "worker3": {"static_connectors": ["connector1"],   # static assignor only
                      "static_tasks": ["connector1-0"]}}}]}  # (KIP-987 static.* settings)

Every worker has its own assignor (Kafka's ``WorkerCoordinator`` builds one per worker), so
each round runs the assignor of that round's leader: a worker leading for the first time
starts clean (no previous assignment, no scheduled delay — Kafka's
``IncrementalCooperativeAssignorTest.testTaskAssignmentWhenLeaderLeavesPermanently``), and a
worker that leads again resumes the state it left.
Each round builds every member's JoinGroup metadata at the protocol's version (eager: v0, no
allocation; otherwise the allocation is embedded with the same header; ``static``: v3, which
also carries the member's ``static_connectors`` / ``static_tasks``, absent = none, i.e. a
wildcard worker) and runs the assignor with the leader's snapshot; a fresh read of the config
topic gives the same snapshot. Members' lists are used in the given order (Kafka revokes "the
first items"), never re-sorted.

Output::

    {"rounds": [{"members": {"worker1": {"error": 0, "connectors": [...], "tasks": [...],
       "revoked_connectors": [...], "revoked_tasks": [...], "delay_ms": 0,
       "assignment_hex": "..."}}}]}

listing what each member decodes from its SyncGroup bytes (v1 reader, wire order, tasks as
``"<connector>-<n>"``) and the exact bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from members.assignors import ConfigSnapshot, UnknownAssignorError, create_assignor
from protocol.connect import (
    ConfigError,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_codec import decode_assignment, encode_subscription
from protocol.errors import InputError
from scenarios.input.assign_schema import ConnectAssignInput, ConnectMemberInput
from scenarios.input.json_input import decode_json_input

__all__ = ["AssignInputError", "run_assign"]

_INT32_MAX = 2**31 - 1
_STATIC_KEYS = ("static_connectors", "static_tasks")


class AssignInputError(InputError):
    """Bad ``groupsim assign`` input; the message starts with the key path, e.g.
    ``rounds[1].members.worker3.tasks[0]: ...``."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}" if path else detail)
        self.path = path
        self.detail = detail


def _tasks(value: list[str], path: str) -> list[ConnectorTaskId]:
    out = []
    for i, text in enumerate(value):
        item_path = f"{path}[{i}]"
        try:
            out.append(ConnectorTaskId.parse(text))
        except ValueError as exc:
            raise AssignInputError(item_path, str(exc)) from None
        if out[-1].task > _INT32_MAX:
            raise AssignInputError(item_path, f"task number must be <= {_INT32_MAX}")
    return out


def _protocol(doc: ConnectAssignInput, assignor: str) -> ConnectProtocol:
    if doc.protocol is UNSET:
        if assignor == "static":
            return ConnectProtocol.STATIC
        return ConnectProtocol.EAGER if assignor == "eager" else ConnectProtocol.SESSIONED
    text = doc.protocol
    try:
        # Either the connect.protocol setting (eager) or the JoinGroup name (default).
        proto = (
            ConnectProtocol.EAGER
            if text.lower() == "default"
            else ConnectProtocol.from_setting(text)
        )
    except ConfigError:
        raise AssignInputError(
            "protocol",
            f"unknown protocol {text!r} (expected default/eager, compatible, sessioned or static)",
        ) from None
    if (proto is ConnectProtocol.STATIC) != (assignor == "static"):
        if assignor == "static":
            raise AssignInputError("protocol", "the static assignor runs only under 'static'")
        raise AssignInputError("protocol", "'static' needs the static assignor")
    if assignor == "eager" and not proto.is_eager:
        raise AssignInputError("protocol", "the eager assignor runs only under 'eager'")
    if assignor != "eager" and proto.is_eager:
        raise AssignInputError("protocol", f"the {assignor} assignor does not run under 'eager'")
    return proto


def _or_empty(items: list[str] | object) -> list[str]:
    return items if isinstance(items, list) else []


def _no_static_jobs(member: ConnectMemberInput, path: str, assignor: str) -> None:
    """KIP-987's ``static_*`` settings are read only under the static assignor."""
    for key in _STATIC_KEYS:
        if getattr(member, key) is not UNSET:
            raise AssignInputError(
                f"{path}.{key}",
                f"static assignments are read only by the static assignor "
                f"(this input runs {assignor!r})",
            )


def _task_str(t: tuple[str, int]) -> str:
    return f"{t[0]}-{t[1]}"


def run_assign(doc: dict) -> dict:
    """Run ``groupsim assign`` on a decoded JSON document (shape in the module docstring).

    Returns:
        ``{"rounds": [{"members": {member: {...}}}]}`` as described above.

    Raises:
        AssignInputError: unknown assignor, unknown keys, wrong types, negative delays, task
            counts or offsets, malformed task ids (``static_tasks`` included), empty member
            maps, a leader that is not a member, time going backwards, a protocol the assignor
            does not run, or ``static_connectors`` / ``static_tasks`` for an assignor other
            than ``static``; the message names the key path.
    """
    typed = decode_json_input(doc, ConnectAssignInput, AssignInputError)
    name = typed.assignor
    max_delay = typed.config.scheduled_rebalance_max_delay_ms
    try:
        create_assignor(name, max_delay_ms=max_delay)
    except UnknownAssignorError as exc:
        raise AssignInputError("assignor", str(exc)) from None
    assignors: dict[str, Any] = {}  # leader id -> that worker's own assignor
    proto = _protocol(typed, name)
    rounds = typed.rounds
    if not rounds:
        raise AssignInputError("rounds", "must hold at least one round")

    out_rounds = []
    prev_time = 0
    prev_generation = 0
    for ri, rnd in enumerate(rounds):
        path = f"rounds[{ri}]"
        time_ms = prev_time if rnd.time_ms is UNSET else rnd.time_ms
        if time_ms < prev_time:
            raise AssignInputError(
                f"{path}.time_ms", f"time must not go backwards (previous round at {prev_time})"
            )
        generation = prev_generation + 1 if rnd.generation is UNSET else rnd.generation
        last_completed = (
            generation - 1
            if rnd.last_completed_generation is UNSET
            else rnd.last_completed_generation
        )
        offset = rnd.config_offset
        connectors = dict(rnd.connectors)
        if "" in connectors:
            raise AssignInputError(f"{path}.connectors", "connector names must not be empty")
        members_raw = rnd.members
        if not members_raw:
            raise AssignInputError(f"{path}.members", "must hold at least one member")
        leader = next(iter(members_raw)) if rnd.leader is UNSET else rnd.leader
        if leader not in members_raw:
            raise AssignInputError(f"{path}.leader", f"{leader!r} is not one of the members")

        parsed = []
        for mid, member in members_raw.items():
            mpath = f"{path}.members.{mid}"
            if not mid:
                raise AssignInputError(f"{path}.members", "member ids must not be empty")
            if proto is not ConnectProtocol.STATIC:
                _no_static_jobs(member, mpath, name)
            url = f"http://{mid}:8083" if member.url is UNSET else member.url
            moff = member.config_offset
            has_alloc = member.connectors is not UNSET or member.tasks is not UNSET
            mconns = _or_empty(member.connectors)
            mtasks = _tasks(_or_empty(member.tasks), f"{mpath}.tasks")
            sconns = _or_empty(member.static_connectors)
            stasks = _tasks(_or_empty(member.static_tasks), f"{mpath}.static_tasks")
            parsed.append((mid, url, moff, has_alloc, mconns, mtasks, sconns, stasks))
        leader_url = next(p[1] for p in parsed if p[0] == leader)

        members = []
        for mid, url, moff, has_alloc, mconns, mtasks, sconns, stasks in parsed:
            allocation = None
            if has_alloc and not proto.is_eager:
                allocation = ConnectAssignment(
                    proto.version, 0, leader, leader_url, moff, tuple(mconns), tuple(mtasks)
                )
            sub = WorkerSubscription(
                proto.version, url, moff, allocation, tuple(sconns), tuple(stasks)
            )
            members.append((mid, encode_subscription(sub, proto.version)))

        snapshot = ConfigSnapshot(offset, connectors)
        assignor = assignors.get(leader)
        if assignor is None:
            assignor = assignors[leader] = create_assignor(name, max_delay_ms=max_delay)
        result = assignor.perform_assignment(
            leader_id=leader,
            protocol=proto,
            members=members,
            snapshot=snapshot,
            refresh_snapshot=_constant(snapshot),
            last_completed_generation=last_completed,
            generation=generation,
            now_ms=time_ms,
        )
        out_members = {}
        for mid, data in result.assignments.items():
            dec = decode_assignment(data)
            out_members[mid] = {
                "error": dec.error,
                "connectors": list(dec.connectors),
                "tasks": [_task_str(t) for t in dec.tasks],
                "revoked_connectors": list(dec.revoked_connectors),
                "revoked_tasks": [_task_str(t) for t in dec.revoked_tasks],
                "delay_ms": dec.delay_ms,
                "assignment_hex": data.hex(),
            }
        out_rounds.append({"members": out_members})
        prev_time = time_ms
        prev_generation = generation
    return {"rounds": out_rounds}


def _constant(snapshot: ConfigSnapshot) -> Callable[[], ConfigSnapshot]:
    """The leader's fresh read of its config topic: here the round's own snapshot."""
    return lambda: snapshot
