"""Replays one sequence of group requests through groupsim's coordinator and through Kafka's.

The Kafka side is ``GroupsimCoordinatorDriver`` (``tests/kafka_oracle/src/main/java/org/apache/
kafka/coordinator/group/``), which runs Kafka's ``GroupMetadataManager`` on a virtual clock; its
JSON contract is in that class's javadoc. The groupsim side is
:class:`~coordinator.group.GroupCoordinator` driven by the test harness
(:class:`tests.coordinator.harness.CoordinatorContext`).

A sequence is a list of steps (:data:`Step`):

* :class:`Call` — one request from a network address: a ``protocol.group`` request Struct
  (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) or :class:`DescribeGroups` / :class:`ListGroups`,
  optionally at a virtual time (the clock advances to it first) and with an API version;
* :class:`Advance` — the clock moves by ``ms`` and due timers fire.

:class:`Differential` runs the steps in lockstep through both and compares, step by step, the
normalised :class:`Outcome` of each: the responses completed (by the handle of the request they
answer, so a parked JoinGroup answered later is matched to its request), the group records
written, the timers fired and the timer table left armed. Kafka names new members with random
UUIDs; ids are compared modulo a bijection (:class:`IdBijection`) built at first sight. By
default groupsim is also *handed* Kafka's new ids (``share_member_ids``), so that everything
ordered by ``String.hashCode`` of member ids (member lists, leader fallback) is the same order
on both sides and can be compared as lists; without it those lists compare as sets.

What is left out of the comparison, and why, is listed in docs/coordinator-fidelity.md
("Kafka as the oracle"): ``clientHost`` (groupsim stores the network address), throttle time,
heartbeat correlation ids, error messages, and timers *scheduled* and *cancelled* (a redundant
re-arm is not observable; the armed table after each step and the timers fired are compared).

Public API (stable; the translated Kafka tests replay through it too):
:class:`Call`, :class:`Advance`, :class:`DescribeGroups`, :class:`ListGroups`,
:class:`Outcome`, :class:`IdBijection`, :class:`Mismatch`, :class:`GroupsimSide`,
:class:`KafkaSide`, :class:`Differential`, :func:`replay`, :func:`steps_to_json`,
:func:`steps_from_json`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from coordinator import CoordinatorConfig, GroupCoordinator
from coordinator.group import IllegalGroupState
from protocol.effects import Effect
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
from scenarios.sim.coordinator_io import request_body
from tests.coordinator.harness import CoordinatorContext, seeded_member_ids
from tests.kafka_oracle.oracle import KafkaOracle, unb64

__all__ = [
    "Advance",
    "Call",
    "DescribeGroups",
    "Differential",
    "GroupsimSide",
    "IdBijection",
    "KafkaSide",
    "ListGroups",
    "Mismatch",
    "Outcome",
    "Step",
    "DEFAULT_VERSIONS",
    "replay",
    "steps_from_json",
    "steps_to_json",
]


class DescribeGroups(msgspec.Struct, frozen=True, tag=True):
    """DescribeGroups for ``group_ids`` (groupsim has no such request: its answer is built
    from the coordinator's read-only views, see :meth:`GroupsimSide.describe`)."""

    group_ids: tuple[str, ...]


class ListGroups(msgspec.Struct, frozen=True, tag=True):
    """ListGroups, optionally filtered by state names and group types (Kafka's filters)."""

    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


Request = JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest
AnyRequest = Request | DescribeGroups | ListGroups

#: API versions used when a :class:`Call` names none (JoinGroup: the request's ``api_version``).
#: LeaveGroup always goes as a v3+ batch (the broker turns a v0-2 member id into one).
DEFAULT_VERSIONS: dict[str, int] = {
    "join": 9,
    "sync": 5,
    "heartbeat": 4,
    "leave": 5,
    "describe": 5,
    "list": 4,
}

_API: dict[type, str] = {
    JoinGroupRequest: "join",
    SyncGroupRequest: "sync",
    HeartbeatRequest: "heartbeat",
    LeaveGroupRequest: "leave",
    DescribeGroups: "describe",
    ListGroups: "list",
}


@dataclass(frozen=True)
class Call:
    """One request from network address ``source``.

    Attributes:
        source: the sender's address (a member name such as ``"c1"``); also the JoinGroup
            ``client_id`` Kafka sees for the other APIs.
        request: the request Struct.
        at_ms: virtual time to send it at (the clock advances there first, firing timers);
            ``None`` sends it at the current time. Must not be in the past.
        api_version: the request's API version; ``None`` uses the JoinGroup's
            ``api_version`` or :data:`DEFAULT_VERSIONS`.
    """

    source: str
    request: AnyRequest
    at_ms: int | None = None
    api_version: int | None = None

    @property
    def api(self) -> str:
        return _API[type(self.request)]

    @property
    def version(self) -> int:
        if self.api_version is not None:
            return self.api_version
        if isinstance(self.request, JoinGroupRequest):
            return self.request.api_version
        return DEFAULT_VERSIONS[self.api]


@dataclass(frozen=True)
class Advance:
    """The clock moves by ``ms`` virtual ms; due timers fire by (deadline, arming order)."""

    ms: int


Step = Call | Advance


# --------------------------------------------------------------------------- outcomes


@dataclass
class Outcome:
    """What one step did, normalised so both sides compare with ``==`` (after id mapping).

    Attributes:
        now_ms: the clock after the step.
        responses: ``{handle: (api, fields)}`` of every request answered during the step;
            ``fields`` is a dict of the response's compared fields (bytes as bytes).
        records: group metadata records written, in order: dicts with ``generation``,
            ``protocol_type``, ``protocol``, ``leader``, ``members`` (tuples of member id,
            instance id, client id, rebalance and session timeout, subscription, assignment)
            and ``written_ms`` (Kafka's ``currentStateTimestamp``), or ``None`` (tombstone).
        fired: ``(key, at_ms)`` of each timer that fired, keys as groupsim names them
            (``heartbeat:<member id>``, ``join``, ``sync``).
        armed: ``{key: deadline_ms}``, the timer table after the step.
        exception: the step's request was rejected as a client bug (groupsim
            :class:`~coordinator.group.IllegalGroupState`, Kafka ``IllegalStateException``).
    """

    now_ms: int
    responses: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    records: list[dict[str, Any] | None] = field(default_factory=list)
    fired: list[tuple[str, int]] = field(default_factory=list)
    armed: dict[str, int] = field(default_factory=dict)
    exception: bool = False


class Mismatch(AssertionError):
    """groupsim and Kafka disagree at step ``index``: ``field`` names what, ``groupsim`` and
    ``kafka`` are the two values (groupsim's with ids mapped to Kafka's)."""

    def __init__(self, index: int, step: Step, what: str, groupsim: Any, kafka: Any) -> None:
        super().__init__(
            f"step {index} ({step}): {what} differs\n"
            f"  groupsim: {groupsim!r}\n  kafka:    {kafka!r}"
        )
        self.index = index
        self.step = step
        self.what = what
        self.groupsim = groupsim
        self.kafka = kafka


_UUID = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class IdBijection:
    """groupsim member id ↔ Kafka member id, learned at first sight.

    Both sides name a member ``<client id or instance id>-<uuid>``; a pair is accepted only if
    the parts before the UUID agree. Ids that neither side generated (``""``, made-up unknown
    ids) map to themselves.
    """

    def __init__(self) -> None:
        self.to_kafka: dict[str, str] = {}
        self.to_groupsim: dict[str, str] = {}

    def pair(self, gs: str, kafka: str) -> bool:
        """Record or check ``gs`` ↔ ``kafka``; False if it contradicts what is known."""
        if gs in self.to_kafka or kafka in self.to_groupsim:
            return self.to_kafka.get(gs) == kafka and self.to_groupsim.get(kafka) == gs
        if gs == kafka:
            return True
        gs_m, k_m = _UUID.search(gs), _UUID.search(kafka)
        if gs_m is None or k_m is None or gs[: gs_m.start()] != kafka[: k_m.start()]:
            return False
        self.to_kafka[gs] = kafka
        self.to_groupsim[kafka] = gs
        return True

    def kafka_id(self, gs: str) -> str:
        """The Kafka id of a groupsim id (itself if never paired)."""
        return self.to_kafka.get(gs, gs)


# --------------------------------------------------------------------------- groupsim side


class _Context(CoordinatorContext):
    """The harness context, also noting each group record written (by identity of
    ``stored_record()`` after each handle/fire) and able to sleep Kafka-test style."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.written: list[Any] = []
        self._last_record: Any = None

    def apply(self, effects: list[Effect]) -> None:
        super().apply(effects)
        record = self.coordinator.stored_record()
        if record is not None and record is not self._last_record:
            self.written.append(record)
        self._last_record = record

    def sleep_poll(self, ms: int) -> None:
        """``MockTime.sleep`` + ``MockCoordinatorTimer.poll``: every due timer fires at the end."""
        self.now_ms += ms
        while self.timers:
            key, (deadline, _) = min(self.timers.items(), key=lambda kv: kv[1])
            if deadline > self.now_ms:
                break
            del self.timers[key]
            self.fired.append((self.now_ms, key))
            self.apply(self.coordinator.fire(key, self.now_ms))


class GroupsimSide:
    """groupsim's coordinator for ``group_id`` in the harness, one address per request.

    Each :class:`Call` is sent from the address ``"<source>/<handle>"`` so a parked request's
    answer is matched to its own handle. ``member_ids`` is the ``new_member_id`` callback
    (default: the harness's seeded UUIDs); :class:`Differential` hands it Kafka's ids.
    """

    def __init__(
        self,
        config: CoordinatorConfig,
        group_id: str,
        member_ids: Callable[[str], str] | None = None,
        start_ms: int = 0,
        mode: str = "each",
    ) -> None:
        self.ctx = _Context(config, member_ids=member_ids or seeded_member_ids(), group_id=group_id)
        self.ctx.now_ms = start_ms
        self.mode = mode
        self.group_id = group_id

    @property
    def coordinator(self) -> GroupCoordinator:
        return self.ctx.coordinator

    def step(self, step: Step, handle: int) -> Outcome:
        """Run one step (``handle`` names a :class:`Call`) and return its outcome."""
        ctx = self.ctx
        sent, fired, written = len(ctx.sent), len(ctx.fired), len(ctx.written)
        exception = False
        own: dict[str, Any] | None = None
        if isinstance(step, Advance):
            self._advance(step.ms)
        else:
            if step.at_ms is not None:
                assert step.at_ms >= ctx.now_ms, f"{step} is in the past ({ctx.now_ms})"
                self._advance(step.at_ms - ctx.now_ms)
            request = step.request
            if isinstance(request, DescribeGroups):
                own = self.describe(request, step.version)
            elif isinstance(request, ListGroups):
                own = self.list(request)
            else:
                try:
                    ctx.send(f"{step.source}/{handle}", request)
                except IllegalGroupState:
                    exception = True
        outcome = Outcome(now_ms=ctx.now_ms, exception=exception)
        if own is not None:
            assert isinstance(step, Call)
            outcome.responses[handle] = (step.api, own)
        for _, dest, message in ctx.sent[sent:]:
            outcome.responses[int(dest.rsplit("/", 1)[1])] = _groupsim_response(message)
        outcome.records = [_groupsim_record(r) for r in ctx.written[written:]]
        outcome.fired = [(key, at) for at, key in ctx.fired[fired:]]
        outcome.armed = {key: deadline for key, (deadline, _) in ctx.timers.items()}
        return outcome

    def _advance(self, ms: int) -> None:
        if self.mode == "poll":
            self.ctx.sleep_poll(ms)
        else:
            self.ctx.sleep(ms)

    def describe(self, request: DescribeGroups, version: int) -> dict[str, Any]:
        """DescribeGroups from the coordinator's views (``GroupMetadataManager
        #describeGroups``): metadata only when Stable, assignments always; a group the
        coordinator does not hold is Dead (GROUP_ID_NOT_FOUND from v6 on)."""
        c = self.coordinator
        groups: list[tuple[Any, ...]] = []
        for gid in request.group_ids:
            if gid != self.group_id or not c.group.exists:
                error = 69 if version >= 6 else 0  # GROUP_ID_NOT_FOUND
                groups.append((gid, error, "Dead", "", "", ()))
                continue
            stable = c.state.value == "Stable"
            protocol = c.protocol_name if stable else None
            members = tuple(
                (
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    dict(m.protocols)[protocol] if protocol is not None else b"",
                    m.assignment,  # describeNoMetadata keeps the assignment
                )
                for m in c.members()
            )
            groups.append((gid, 0, c.state.value, c.protocol_type or "", protocol or "", members))
        return {"groups": tuple(groups)}

    def list(self, request: ListGroups) -> dict[str, Any]:
        """ListGroups (``ClassicGroup#asListedGroup``) for the one group, if it exists and
        passes the filters (states case-insensitive, as Kafka compares them)."""
        c = self.coordinator
        groups: list[tuple[str, str, str, str]] = []
        states = {s.lower() for s in request.states_filter}
        types = {t.lower() for t in request.types_filter}
        if (
            c.group.exists
            and (not states or c.state.value.lower() in states)
            and (not types or "classic" in types)
        ):
            groups.append((self.group_id, c.protocol_type or "", c.state.value, "classic"))
        return {"groups": tuple(groups)}


def _groupsim_response(message: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(message, JoinGroupResponse):
        return "join", {
            "error_code": int(message.error),
            "generation_id": message.generation_id,
            "protocol_type": message.protocol_type,
            # groupsim leaves an unset name None, Kafka "" (JoinGroupResponseData's default).
            "protocol_name": message.protocol_name or "",
            "leader": message.leader,
            "member_id": message.member_id,
            "skip_assignment": message.skip_assignment,
            "members": tuple(
                (m.member_id, m.group_instance_id, m.metadata) for m in message.members
            ),
        }
    if isinstance(message, SyncGroupResponse):
        return "sync", {
            "error_code": int(message.error),
            "protocol_type": message.protocol_type,
            "protocol_name": message.protocol_name,
            "assignment": message.assignment,
        }
    if isinstance(message, HeartbeatResponse):
        return "heartbeat", {"error_code": int(message.error)}
    if isinstance(message, LeaveGroupResponse):
        return "leave", {
            "error_code": int(message.error),
            "members": tuple(
                (m.member_id, m.group_instance_id, int(m.error)) for m in message.members
            ),
        }
    raise TypeError(message)


def _groupsim_record(record: Any) -> dict[str, Any]:
    return {
        "generation": record.generation,
        "protocol_type": record.protocol_type or "",
        "protocol": record.protocol,
        "leader": record.leader,
        "members": tuple(
            (
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.subscription,
                m.assignment,
            )
            for m in record.members
        ),
        "written_ms": record.written_ms,
    }


# --------------------------------------------------------------------------- Kafka side


class KafkaSide:
    """Kafka's ``GroupMetadataManager`` behind the oracle, one driver session.

    The driver's JSON (full contract in ``GroupsimCoordinatorDriver``'s javadoc):
    ``coordinator.open {session, config{initial_rebalance_delay_ms, min_session_timeout_ms,
    max_session_timeout_ms, max_size}, start_ms}``; ``coordinator.step {session, step}`` with
    a step ``{advance_ms, mode}`` or ``{handle, api, version, client_id, body}`` (api join /
    sync / heartbeat / leave / describe / list, body fields in snake_case, bytes base64);
    the result ``{now_ms, completions[{handle, api, at_ms, response}], records[{type, at_ms,
    key, value}], scheduled[{key, deadline_ms}], cancelled[key], fired[{key, at_ms}],
    armed[{key, deadline_ms}], exception}``; ``coordinator.run {session, steps}`` runs a
    list; ``coordinator.close {session}``.

    :meth:`step` takes ``to_kafka``, which turns a groupsim member id in a request into
    Kafka's; :meth:`outcome` normalises a result into an :class:`Outcome`.
    """

    def __init__(
        self,
        oracle: KafkaOracle,
        config: CoordinatorConfig,
        group_id: str,
        session: str = "replay",
        start_ms: int = 0,
        mode: str = "each",
    ) -> None:
        self.oracle = oracle
        self.session = session
        self.group_id = group_id
        self.mode = mode
        self.now_ms = start_ms
        oracle.call(
            "coordinator.open",
            session=session,
            start_ms=start_ms,
            config={
                "initial_rebalance_delay_ms": config.initial_rebalance_delay_ms,
                "min_session_timeout_ms": config.min_session_timeout_ms,
                "max_session_timeout_ms": config.max_session_timeout_ms,
                "max_size": config.max_size,
            },
        )

    def close(self) -> None:
        self.oracle.call("coordinator.close", session=self.session)

    def step_json(self, step: Step, handle: int, to_kafka: Callable[[str], str]) -> list[dict]:
        """The driver steps for one step (a Call at a later time is an advance, then it)."""
        if isinstance(step, Advance):
            return [{"advance_ms": step.ms, "mode": self.mode}]
        out: list[dict] = []
        if step.at_ms is not None and step.at_ms > self.now_ms:
            out.append({"advance_ms": step.at_ms - self.now_ms, "mode": self.mode})
        out.append(
            {
                "handle": handle,
                "api": step.api,
                "version": step.version,
                "client_id": _client_id(step),
                "body": _body(step.request, to_kafka),
            }
        )
        return out

    def step(self, step: Step, handle: int, to_kafka: Callable[[str], str]) -> dict[str, Any]:
        """Run one step; returns the driver's results merged into one (raw JSON shape)."""
        results = [
            self.oracle.call("coordinator.step", session=self.session, step=s)
            for s in self.step_json(step, handle, to_kafka)
        ]
        merged = results[-1]
        for key in ("completions", "records", "scheduled", "cancelled", "fired"):
            merged[key] = [x for r in results for x in r[key]]
        merged["exception"] = next((r["exception"] for r in results if r["exception"]), None)
        self.now_ms = merged["now_ms"]
        return merged

    def outcome(self, raw: dict[str, Any], handle: int) -> Outcome:
        """Normalise a driver result into an :class:`Outcome` (Kafka's ids, groupsim's keys)."""
        outcome = Outcome(now_ms=raw["now_ms"])
        for c in raw["completions"]:
            response = _kafka_response(c["api"], c["response"])
            if raw["exception"] and c["handle"] == handle:
                outcome.exception = True  # answered UNKNOWN_SERVER_ERROR: compared as a flag
                continue
            outcome.responses[c["handle"]] = response
        outcome.records = [_kafka_record(r) for r in raw["records"] if r["type"] == "GroupMetadata"]
        outcome.fired = [(self._key(f["key"]), f["at_ms"]) for f in raw["fired"]]
        outcome.armed = {self._key(a["key"]): a["deadline_ms"] for a in raw["armed"]}
        return outcome

    def _key(self, key: str) -> str:
        group = self.group_id
        if key == f"join-{group}":
            return "join"
        if key == f"sync-{group}":
            return "sync"
        prefix = f"heartbeat-{group}-"
        if key.startswith(prefix):
            return "heartbeat:" + key[len(prefix) :]
        return key


def _client_id(step: Call) -> str:
    if isinstance(step.request, JoinGroupRequest) and step.request.client_id:
        return step.request.client_id
    return step.source


def _body(request: AnyRequest, k: Callable[[str], str]) -> dict[str, Any]:
    if not isinstance(request, (DescribeGroups, ListGroups)):
        return request_body(request, k)
    if isinstance(request, DescribeGroups):
        return {"groups": list(request.group_ids)}
    return {
        "states_filter": list(request.states_filter),
        "types_filter": list(request.types_filter),
    }


def _kafka_response(api: str, r: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if api == "join":
        return api, {
            "error_code": r["error_code"],
            "generation_id": r["generation_id"],
            "protocol_type": r["protocol_type"],
            "protocol_name": r["protocol_name"] or "",
            "leader": r["leader"],
            "member_id": r["member_id"],
            "skip_assignment": r["skip_assignment"],
            "members": tuple(
                (m["member_id"], m["group_instance_id"], unb64(m["metadata"])) for m in r["members"]
            ),
        }
    if api == "sync":
        return api, {
            "error_code": r["error_code"],
            "protocol_type": r["protocol_type"],
            "protocol_name": r["protocol_name"],
            "assignment": unb64(r["assignment"] or ""),
        }
    if api == "heartbeat":
        return api, {"error_code": r["error_code"]}
    if api == "leave":
        return api, {
            "error_code": r["error_code"],
            "members": tuple(
                (m["member_id"], m["group_instance_id"], m["error_code"]) for m in r["members"]
            ),
        }
    if api == "describe":
        return api, {
            "groups": tuple(
                (
                    g["group_id"],
                    g["error_code"],
                    g["group_state"],
                    g["protocol_type"],
                    g["protocol_data"],
                    tuple(
                        (
                            m["member_id"],
                            m["group_instance_id"],
                            m["client_id"],
                            unb64(m["member_metadata"] or ""),
                            unb64(m["member_assignment"] or ""),
                        )
                        for m in g["members"]
                    ),
                )
                for g in r["groups"]
            )
        }
    return api, {
        "groups": tuple(
            (g["group_id"], g["protocol_type"], g["group_state"], g["group_type"].lower())
            for g in r["groups"]
        )
    }


def _kafka_record(r: dict[str, Any]) -> dict[str, Any] | None:
    v = r["value"]
    if v is None:
        return None
    return {
        "generation": v["generation"],
        "protocol_type": v["protocolType"] or "",
        "protocol": v["protocol"],
        "leader": v["leader"],
        "members": tuple(
            (
                m["memberId"],
                m["groupInstanceId"],
                m["clientId"],
                m["rebalanceTimeout"],
                m["sessionTimeout"],
                unb64(m["subscription"] or ""),
                unb64(m["assignment"] or ""),
            )
            for m in v["members"]
        ),
        "written_ms": v["currentStateTimestamp"],
    }


# --------------------------------------------------------------------------- the differential


def _ids_in(outcome: Outcome) -> list[str]:
    """Every member id in an outcome, in a canonical walk (for learning the bijection)."""
    ids: list[str] = []
    for handle in sorted(outcome.responses):
        api, f = outcome.responses[handle]
        if api == "join":
            ids += [f["member_id"], f["leader"], *(m[0] for m in f["members"])]
        elif api == "leave":
            ids += [m[0] for m in f["members"]]
        elif api == "describe":
            ids += [m[0] for g in f["groups"] for m in g[5]]
    for rec in outcome.records:
        if rec is not None:
            ids += [rec["leader"] or "", *(m[0] for m in rec["members"])]
    ids += [k.split(":", 1)[1] for k, _ in outcome.fired if k.startswith("heartbeat:")]
    ids += [k.split(":", 1)[1] for k in sorted(outcome.armed) if k.startswith("heartbeat:")]
    return ids


def _map(value: Any, m: Callable[[str], str]) -> Any:
    """``value`` with every member id replaced through ``m`` (ids sit at known places)."""
    if isinstance(value, Outcome):
        return Outcome(
            now_ms=value.now_ms,
            responses={
                h: (api, _map_response(api, f, m)) for h, (api, f) in value.responses.items()
            },
            records=[None if r is None else _map_record(r, m) for r in value.records],
            fired=[(_map_key(k, m), at) for k, at in value.fired],
            armed={_map_key(k, m): d for k, d in value.armed.items()},
            exception=value.exception,
        )
    raise TypeError(value)


def _map_key(key: str, m: Callable[[str], str]) -> str:
    if key.startswith("heartbeat:"):
        return "heartbeat:" + m(key.split(":", 1)[1])
    return key


def _map_response(api: str, f: dict[str, Any], m: Callable[[str], str]) -> dict[str, Any]:
    f = dict(f)
    if api == "join":
        f["member_id"] = m(f["member_id"])
        f["leader"] = m(f["leader"])
        f["members"] = tuple((m(i), g, d) for i, g, d in f["members"])
    elif api == "leave":
        f["members"] = tuple((m(i), g, e) for i, g, e in f["members"])
    elif api == "describe":
        f["groups"] = tuple((*g[:5], tuple((m(x[0]), *x[1:]) for x in g[5])) for g in f["groups"])
    return f


def _map_record(r: dict[str, Any], m: Callable[[str], str]) -> dict[str, Any]:
    r = dict(r)
    r["leader"] = None if r["leader"] is None else m(r["leader"])
    r["members"] = tuple((m(x[0]), *x[1:]) for x in r["members"])
    return r


def _unordered(outcome: Outcome) -> Outcome:
    """Member lists as sorted tuples (when ids differ, their hash orders differ too)."""
    responses = {}
    for h, (api, f) in outcome.responses.items():
        f = dict(f)
        if api in ("join",):
            f["members"] = tuple(sorted(f["members"], key=repr))
        if api == "describe":
            f["groups"] = tuple((*g[:5], tuple(sorted(g[5], key=repr))) for g in f["groups"])
        responses[h] = (api, f)
    records = [
        None if r is None else {**r, "members": tuple(sorted(r["members"], key=repr))}
        for r in outcome.records
    ]
    return Outcome(
        outcome.now_ms, responses, records, outcome.fired, outcome.armed, outcome.exception
    )


class Differential:
    """Runs steps through groupsim and Kafka in lockstep and compares each step's outcome.

    Args:
        oracle: the session's :class:`~tests.kafka_oracle.oracle.KafkaOracle`.
        config: the coordinator settings both sides get (Kafka takes the initial delay,
            session-timeout bounds and max size; its new-member join timeout is fixed at
            300000 ms, so ``config.new_member_join_timeout_ms`` must keep that default).
        group_id: the group groupsim's coordinator owns.
        session: the driver session name (one Kafka manager per name).
        start_ms: virtual time both clocks start at.
        mode: ``"each"`` (timers fire at their own deadlines, as the runtimes do) or
            ``"poll"`` (Kafka's tests: the clock moves to the end, then due timers fire).
        share_member_ids: groupsim's ``new_member_id`` hands out the id Kafka generated in the
            same step (so member order by ``String.hashCode`` agrees); False lets groupsim
            draw its own seeded UUIDs and compares member lists as sets.

    Use :meth:`step` per step (it raises :class:`Mismatch`) or :func:`replay` for a whole
    sequence. :attr:`ids` is the bijection; :attr:`groupsim` / :attr:`kafka` the two sides.
    """

    def __init__(
        self,
        oracle: KafkaOracle,
        config: CoordinatorConfig,
        group_id: str,
        session: str = "differential",
        start_ms: int = 0,
        mode: str = "each",
        share_member_ids: bool = True,
    ) -> None:
        self.ids = IdBijection()
        self.share_member_ids = share_member_ids
        self._offered: list[str] = []
        self._fallback = seeded_member_ids()
        self.groupsim = GroupsimSide(
            config, group_id, self._new_member_id if share_member_ids else None, start_ms, mode
        )
        self.kafka = KafkaSide(oracle, config, group_id, session, start_ms, mode)
        self._handle = 0
        self.index = 0
        self._seen_kafka: set[str] = set()

    def _new_member_id(self, client_id: str) -> str:
        for i, kid in enumerate(self._offered):
            if kid.startswith(client_id + "-"):
                del self._offered[i]
                return kid
        return self._fallback(client_id)

    def step(self, step: Step) -> tuple[Outcome, Outcome]:
        """Run ``step`` through both; return (groupsim outcome mapped to Kafka ids, Kafka
        outcome). Raises :class:`Mismatch` on the first field that differs."""
        self._handle += 1
        handle = self._handle
        raw = self.kafka.step(step, handle, self.ids.kafka_id)
        kafka = self.kafka.outcome(raw, handle)
        prefix = f"heartbeat-{self.kafka.group_id}-"
        kafka_ids = _ids_in(kafka) + [
            s["key"][len(prefix) :] for s in raw["scheduled"] if s["key"].startswith(prefix)
        ]
        new = [i for i in dict.fromkeys(kafka_ids) if i and i not in self._seen_kafka]
        self._seen_kafka.update(new)
        if self.share_member_ids:
            self._offered = [i for i in new if _UUID.search(i)]
        groupsim = self.groupsim.step(step, handle)
        self._offered = []
        index = self.index
        self.index += 1
        gs_ids, k_ids = _ids_in(groupsim), _ids_in(kafka)
        if len(gs_ids) == len(k_ids):
            for a, b in zip(gs_ids, k_ids, strict=True):
                if a and b and not self.ids.pair(a, b):
                    break
        mapped = _map(groupsim, self.ids.kafka_id)
        left, right = (
            (mapped, kafka) if self.share_member_ids else (_unordered(mapped), _unordered(kafka))
        )
        _compare(index, step, left, right)
        return mapped, kafka

    def close(self) -> None:
        """Drop the driver session."""
        self.kafka.close()


def _compare(index: int, step: Step, gs: Outcome, kafka: Outcome) -> None:
    if gs.exception != kafka.exception:
        raise Mismatch(index, step, "exception", gs.exception, kafka.exception)
    if sorted(gs.responses) != sorted(kafka.responses):
        raise Mismatch(
            index, step, "answered handles", sorted(gs.responses), sorted(kafka.responses)
        )
    for h in sorted(gs.responses):
        if gs.responses[h] != kafka.responses[h]:
            api, a = gs.responses[h]
            _, b = kafka.responses[h]
            for key in a:
                if a[key] != b.get(key):
                    raise Mismatch(index, step, f"{api} response {h}: {key}", a[key], b.get(key))
            raise Mismatch(index, step, f"{api} response {h}", a, b)
    for what in ("records", "fired", "armed", "now_ms"):
        if getattr(gs, what) != getattr(kafka, what):
            raise Mismatch(index, step, what, getattr(gs, what), getattr(kafka, what))


def replay(
    oracle: KafkaOracle,
    steps: Iterable[Step],
    config: CoordinatorConfig,
    group_id: str,
    **options: Any,
) -> list[tuple[Outcome, Outcome]]:
    """Run a whole sequence through :class:`Differential` (options are its keyword
    arguments) and return each step's (groupsim, Kafka) outcomes; raises :class:`Mismatch`
    at the first difference. The driver session is closed either way."""
    diff = Differential(oracle, config, group_id, **options)
    try:
        return [diff.step(s) for s in steps]
    finally:
        diff.close()


# --------------------------------------------------------------------------- plain data


_ENCODER = msgspec.json.Encoder()


def steps_to_json(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """Steps as plain JSON data (for regression files): ``{"advance_ms": n}`` or
    ``{"source", "at_ms", "api_version", "request": {"type": <Struct name>, ...}}``."""
    out: list[dict[str, Any]] = []
    for s in steps:
        if isinstance(s, Advance):
            out.append({"advance_ms": s.ms})
        else:
            request = msgspec.json.decode(_ENCODER.encode(s.request))
            out.append(
                {
                    "source": s.source,
                    "at_ms": s.at_ms,
                    "api_version": s.api_version,
                    "request": request,
                }
            )
    return out


_TYPES = {
    t.__name__: t
    for t in (
        JoinGroupRequest,
        SyncGroupRequest,
        HeartbeatRequest,
        LeaveGroupRequest,
        DescribeGroups,
        ListGroups,
    )
}


def steps_from_json(data: Sequence[dict[str, Any]]) -> list[Step]:
    """The inverse of :func:`steps_to_json`."""
    steps: list[Step] = []
    for d in data:
        if "advance_ms" in d:
            steps.append(Advance(d["advance_ms"]))
            continue
        raw = d["request"]
        cls = _TYPES[raw["type"]]
        request: Any = msgspec.json.decode(msgspec.json.encode(raw), type=cls)
        steps.append(Call(d["source"], request, d.get("at_ms"), d.get("api_version")))
    return steps


# MemberIdentity is re-exported for sequence builders (LeaveGroup v3+ batches).
__all__ += ["MemberIdentity"]
