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

from collections.abc import Callable, Iterator
from typing import Any

from members.assignors import ConfigSnapshot, UnknownAssignorError, create_assignor
from protocol.connect import (
    ConfigError,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_codec import decode_assignment, encode_subscription
from scenarios.json_input import check_keys, require_object, type_name

__all__ = ["AssignInputError", "run_assign"]

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_DELAY_KEY = "scheduled.rebalance.max.delay.ms"
_TOP_KEYS = {"assignor", "protocol", "config", "rounds"}
_ROUND_KEYS = {
    "time_ms",
    "generation",
    "last_completed_generation",
    "leader",
    "config_offset",
    "connectors",
    "members",
}
_MEMBER_KEYS = {"url", "config_offset", "connectors", "tasks"}
_STATIC_KEYS = ("static_connectors", "static_tasks")


class AssignInputError(ValueError):
    """Bad ``groupsim assign`` input; the message starts with the key path, e.g.
    ``rounds[1].members.worker3.tasks[0]: ...``."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}" if path else detail)
        self.path = path
        self.detail = detail


def _obj(value: object, path: str) -> dict[str, Any]:
    return require_object(value, path, AssignInputError)


def _check_keys(obj: dict[str, Any], allowed: set[str], path: str) -> None:
    check_keys(obj, allowed, path, AssignInputError)


def _int(value: object, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AssignInputError(path, f"expected an integer, got {type_name(value)}")
    if value < low:
        raise AssignInputError(path, f"must be >= {low}, got {value}")
    if value > high:
        raise AssignInputError(path, f"must be <= {high}, got {value}")
    return value


def _str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise AssignInputError(path, f"expected a string, got {type_name(value)}")
    return value


def _string_items(value: object, path: str) -> Iterator[tuple[str, str]]:
    """``(path of the item, item)`` for each item of the array ``value``, checked to be a
    string as it comes (one at a time, so the first bad item is the one reported)."""
    if not isinstance(value, list):
        raise AssignInputError(path, f"expected an array, got {type_name(value)}")
    for i, item in enumerate(value):
        item_path = f"{path}[{i}]"
        yield item_path, _str(item, item_path)


def _strings(value: object, path: str) -> list[str]:
    out = []
    for item_path, name in _string_items(value, path):
        if not name:
            raise AssignInputError(item_path, "must not be empty")
        out.append(name)
    return out


def _tasks(value: object, path: str) -> list[ConnectorTaskId]:
    out = []
    for item_path, text in _string_items(value, path):
        try:
            out.append(ConnectorTaskId.parse(text))
        except ValueError as exc:
            raise AssignInputError(item_path, str(exc)) from None
        if out[-1].task > _INT32_MAX:
            raise AssignInputError(item_path, f"task number must be <= {_INT32_MAX}")
    return out


def _protocol(doc: dict[str, Any], assignor: str) -> ConnectProtocol:
    if "protocol" not in doc:
        if assignor == "static":
            return ConnectProtocol.STATIC
        return ConnectProtocol.EAGER if assignor == "eager" else ConnectProtocol.SESSIONED
    text = _str(doc["protocol"], "protocol")
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


def _max_delay(doc: dict[str, Any]) -> int:
    if "config" not in doc:
        return 300_000
    config = _obj(doc["config"], "config")
    _check_keys(config, {_DELAY_KEY}, "config")
    if _DELAY_KEY not in config:
        return 300_000
    return _int(config[_DELAY_KEY], f"config.{_DELAY_KEY}", 0, _INT32_MAX)


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
    doc = _obj(doc, "")
    _check_keys(doc, _TOP_KEYS, "")
    if "assignor" not in doc:
        raise AssignInputError("assignor", "missing")
    name = _str(doc["assignor"], "assignor")
    max_delay = _max_delay(doc)
    try:
        create_assignor(name, max_delay_ms=max_delay)
    except UnknownAssignorError as exc:
        raise AssignInputError("assignor", str(exc)) from None
    assignors: dict[str, Any] = {}  # leader id -> that worker's own assignor
    proto = _protocol(doc, name)
    if "rounds" not in doc:
        raise AssignInputError("rounds", "missing")
    rounds = doc["rounds"]
    if not isinstance(rounds, list):
        raise AssignInputError("rounds", f"expected an array, got {type_name(rounds)}")
    if not rounds:
        raise AssignInputError("rounds", "must hold at least one round")

    out_rounds = []
    prev_time = 0
    prev_generation = 0
    for ri, raw_round in enumerate(rounds):
        path = f"rounds[{ri}]"
        rnd = _obj(raw_round, path)
        _check_keys(rnd, _ROUND_KEYS, path)
        time_ms = _int(rnd.get("time_ms", prev_time), f"{path}.time_ms", 0, _INT64_MAX)
        if time_ms < prev_time:
            raise AssignInputError(
                f"{path}.time_ms", f"time must not go backwards (previous round at {prev_time})"
            )
        generation = _int(
            rnd.get("generation", prev_generation + 1), f"{path}.generation", -1, _INT32_MAX
        )
        last_completed = _int(
            rnd.get("last_completed_generation", generation - 1),
            f"{path}.last_completed_generation",
            -1,
            _INT32_MAX,
        )
        offset = _int(rnd.get("config_offset", 0), f"{path}.config_offset", 0, _INT64_MAX)
        conns_raw = _obj(rnd.get("connectors", {}), f"{path}.connectors")
        connectors: dict[str, int] = {}
        for cname, count in conns_raw.items():
            if not cname:
                raise AssignInputError(f"{path}.connectors", "connector names must not be empty")
            connectors[cname] = _int(count, f"{path}.connectors.{cname}", 0, _INT32_MAX)
        if "members" not in rnd:
            raise AssignInputError(f"{path}.members", "missing")
        members_raw = _obj(rnd["members"], f"{path}.members")
        if not members_raw:
            raise AssignInputError(f"{path}.members", "must hold at least one member")
        leader = _str(rnd.get("leader", next(iter(members_raw))), f"{path}.leader")
        if leader not in members_raw:
            raise AssignInputError(f"{path}.leader", f"{leader!r} is not one of the members")

        parsed = []
        for mid, raw_member in members_raw.items():
            mpath = f"{path}.members.{mid}"
            if not mid:
                raise AssignInputError(f"{path}.members", "member ids must not be empty")
            member = _obj(raw_member, mpath)
            if proto is ConnectProtocol.STATIC:
                _check_keys(member, _MEMBER_KEYS | set(_STATIC_KEYS), mpath)
            else:
                for key in _STATIC_KEYS:
                    if key in member:
                        raise AssignInputError(
                            f"{mpath}.{key}",
                            f"static assignments are read only by the static assignor "
                            f"(this input runs {name!r})",
                        )
                _check_keys(member, _MEMBER_KEYS, mpath)
            url = _str(member.get("url", f"http://{mid}:8083"), f"{mpath}.url")
            moff = _int(member.get("config_offset", 0), f"{mpath}.config_offset", 0, _INT64_MAX)
            has_alloc = "connectors" in member or "tasks" in member
            mconns = _strings(member.get("connectors", []), f"{mpath}.connectors")
            mtasks = _tasks(member.get("tasks", []), f"{mpath}.tasks")
            sconns = _strings(member.get("static_connectors", []), f"{mpath}.static_connectors")
            stasks = _tasks(member.get("static_tasks", []), f"{mpath}.static_tasks")
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
