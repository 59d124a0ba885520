"""The coordinator referee: every answer of a run's coordinator replayed through Kafka's
``GroupMetadataManager`` (the classic group coordinator).

A run that logs its coordinator's traffic (``coordinator_opened``, ``coordinator_request``,
``coordinator_timer``, ``coordinator_response``: :mod:`scenarios.sim.coordinator_io`; chaos
with ``--referee kafka`` logs it) is replayed, in one batch, through the oracle harness's
coordinator driver (``GroupsimCoordinatorDriver``, area ``coordinator``, the driver the
differential tests use): a manager with the run's settings, on a virtual clock, receives
every request at the virtual time it reached groupsim's coordinator, and each answer Kafka
completes must equal groupsim's answer to the same request, field by field: the time it was
sent, error code, generation, member id, leader, protocol type and name, skip-assignment,
the member list (ids, instance ids, metadata, in order), the SyncGroup assignment bytes and
the per-member LeaveGroup answers. A request Kafka answered that groupsim did not (or the
reverse) is a disagreement too.

**Member ids.** Kafka names a new member ``<client id or instance id>-<UUID.randomUUID()>``
(``ClassicGroup#generateMemberId``). Each ``coordinator_request`` carries the UUIDs groupsim's
coordinator drew while handling it, and the driver hands them to ``UUID.randomUUID()``; the
part before the UUID is Kafka's own. So both sides have the same ids, and every order that
follows ``String.hashCode`` of member ids (member lists, leader fallback) is comparable as
lists.

**Timers.** As in the differential tests, Kafka's timers run on exact deadlines (the driver's
``advance_ms``, ties by arming order). When a request and a coordinator timer fall on the
same millisecond, Kafka's runtime may run either first (its timer wheel and the request
queue are not ordered against each other); the replay takes the order groupsim's run took:
before a request, timers due *strictly* earlier fire (``mode: "before"``), and a timer
groupsim fired is matched by advancing to its time. Each request handled while a Kafka timer
was due at its own millisecond is counted in :attr:`RefereeVerdict.notes`
(``same_ms_timer``), never silently.

**Failovers.** A ``coordinator_failover`` fault is replayed as Kafka moves a group: at the
fault's time the driver's manager gives the partition up (``GroupMetadataManager
#onUnloaded``: parked JoinGroups and SyncGroups answered NOT_COORDINATOR, compared with the
answers groupsim's :meth:`coordinator.group.GroupCoordinator.unload` sent; its timers go),
and at the run's ``group_loaded`` a fresh manager on the same clock replays every group
metadata record Kafka's own managers wrote in this run (``GroupMetadataManager#replay``, the
last record of the group wins) and runs ``onLoaded()`` (each member's heartbeat rescheduled,
an over-capacity group rebalanced), as ``CoordinatorLoaderImpl`` does. Kafka's loaded group
(generation, state, protocol, leader, members in iteration order) must equal groupsim's
``group_loaded``; every later answer is judged as before (counted in
:attr:`RefereeVerdict.notes` as ``after_failover``). Committed records: Kafka's runtime
answers a write only once its records are committed (``CoordinatorRuntime`` completes the
deferred response at the high watermark) and a new leader loads only committed records;
groupsim's coordinator stores its record at once and its writes never fail, and the driver
completes every append future at once, so every record written before the failover is
loaded. While the group is down the engine answers NOT_COORDINATOR itself (unlogged, not
judged). A failover before the first request needs nothing: both coordinators are empty.

A run whose
settings Kafka cannot take (``groupsim.new.member.join.timeout.ms`` other than Kafka's fixed
300 s, or the ``first_listed`` protocol tie-break) is not judged (``skipped``). Only the
first disagreement of a run is reported: past it the two coordinators hold different
groups, and every later answer may differ for that one reason.
"""

from __future__ import annotations

from itertools import count
from typing import Any

from protocol.group import ErrorCode
from scenarios.referee.harness import KafkaOracle, OracleError
from scenarios.referee.verdict import (
    REFEREE_INVARIANT,
    Judged,
    RefereeVerdict,
    Round,
    replay,
)

__all__ = ["REFEREE_INVARIANT", "FIELDS", "judge_coordinator"]

#: The compared fields of an answer, in the order a difference is reported (the first one
#: that differs is the violation's ``differs``).
FIELDS = (
    "error_code",
    "generation_id",
    "member_id",
    "leader",
    "protocol_type",
    "protocol_name",
    "skip_assignment",
    "members",
    "assignment",
)
#: Kafka's new-member join timeout (``GroupMetadataManager``, KAFKA-7610: not configurable).
KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
_IO = ("coordinator_request", "coordinator_timer", "coordinator_response")
_API_NAME = {
    "join": "JoinGroup",
    "sync": "SyncGroup",
    "heartbeat": "Heartbeat",
    "leave": "LeaveGroup",
}

_sessions = count(1)


def _error(code: Any) -> str:
    try:
        return ErrorCode(int(code)).name
    except ValueError:
        return str(code)


def _member(source: str) -> str:
    """The member name of a connection address (``w1#2/3`` → ``w1``)."""
    return source.partition("#")[0]


class _Replay:
    """One run's steps and, after the batch, the pairing of answers."""

    def __init__(self, records: list[dict[str, Any]], verdict: RefereeVerdict) -> None:
        self.verdict = verdict
        self.session = f"coordinator-referee-{next(_sessions)}"
        self.rounds: list[Round] = []
        self.responses: list[dict[str, Any]] = []
        self.requests: dict[int, dict[str, Any]] = {}
        self.config: dict[str, Any] = {}
        self.failover_ms = 0  # the run's first coordinator failover (0: none)
        self._now = 0
        self._build(records)

    def _step(self, rec: dict[str, Any], step: dict[str, Any]) -> None:
        self.rounds.append((rec, ("coordinator.step", {"session": self.session, "step": step})))

    def _advance(self, rec: dict[str, Any], to_ms: int, mode: str) -> None:
        if to_ms > self._now or mode == "each":
            self._step(rec, {"advance_ms": to_ms - self._now, "mode": mode, "brief": True})
            self._now = to_ms

    def _build(self, records: list[dict[str, Any]]) -> None:
        last: dict[str, Any] | None = None
        for rec in records:
            kind = rec.get("kind")
            if kind == "coordinator_opened":
                self.config = rec
            elif not self.config:
                continue  # no request yet: a failover now moves an empty coordinator
            elif kind == "fault" and rec.get("fault") == "coordinator_failover":
                self._advance(rec, int(rec["t_ms"]), "before")
                self._step(rec, {"unload": True, "brief": True})
                self.failover_ms = self.failover_ms or int(rec["t_ms"])
            elif kind == "group_loaded":
                self._advance(rec, int(rec["t_ms"]), "each")
                self._step(rec, {"load": {"group": self.config["group"]}, "brief": True})
            elif kind == "coordinator_request":
                self._advance(rec, int(rec["t_ms"]), "before")
                step = {
                    "handle": rec["handle"],
                    "api": rec["api"],
                    "version": rec["version"],
                    "client_id": rec["client_id"],
                    "body": rec["body"],
                    "brief": True,
                }
                if rec.get("member_uuids"):
                    step["member_uuids"] = rec["member_uuids"]
                self._step(rec, step)
                self.requests[int(rec["handle"])] = rec
            elif kind == "coordinator_timer":
                self._advance(rec, int(rec["t_ms"]), "each")
            elif kind == "coordinator_response":
                self.responses.append(rec)
            elif kind == "run_end":
                last = rec
        if last is not None and self.rounds:
            # to the run's end (timers due there fired in groupsim's run)
            self._advance(last, int(last["t_ms"]), "each")

    def regroup(self, rounds: list[Round], answers: list[Any]) -> list[Judged]:
        """Kafka's completions matched to groupsim's answers by request handle."""
        kafka: dict[int, tuple[int, dict[str, Any]] | OracleError] = {}
        failed: list[Judged] = []
        judged_loads: list[tuple[tuple[int, int], Judged]] = []
        for (rec, (_, fields)), answer in zip(rounds, answers, strict=False):
            if isinstance(answer, OracleError):
                failed.append((rec, fields, answer))
                continue
            step = fields["step"]
            if "load" in step:
                judged_loads.append(((rec["t_ms"], rec["seq"]), (rec, fields, answer)))
                continue
            if step.get("mode") == "before" and any(
                a["deadline_ms"] == answer["now_ms"] for a in answer["armed"]
            ):
                self.verdict.notes["same_ms_timer"] += 1
            for done in answer["completions"]:
                if "response" in done:
                    kafka[int(done["handle"])] = (int(done["at_ms"]), done["response"])
                else:
                    kafka[int(done["handle"])] = OracleError(
                        "coordinator.step", done.get("exception", "no response"), ""
                    )
        judged: list[tuple[tuple[int, int], Judged]] = judged_loads
        answered: set[int] = set()
        for rec in self.responses:
            handle = rec.get("handle")
            if handle is None:
                judged.append(((rec["t_ms"], rec["seq"]), (rec, {}, None)))
                continue
            answered.add(int(handle))
            request = self.requests.get(int(handle), {})
            judged.append(((rec["t_ms"], rec["seq"]), (rec, request, kafka.get(int(handle)))))
        for handle, theirs in kafka.items():
            if handle in answered:
                continue
            request = self.requests[handle]
            at = theirs[0] if isinstance(theirs, tuple) else request["t_ms"]
            judged.append(((at, request["seq"]), (request, request, theirs)))
        judged.sort(key=lambda j: j[0])
        if self.failover_ms:
            self.verdict.notes["after_failover"] += sum(
                1
                for (at, _), (rec, _, _) in judged
                if at >= self.failover_ms and rec.get("kind") != "group_loaded"
            )
        return failed + [j for _, j in judged]


def _differences(rec: dict[str, Any], request: dict[str, Any], answer: Any) -> list[str]:
    """How Kafka's answer differs from groupsim's (``rec``: groupsim's
    ``coordinator_response``, or the request Kafka answered and groupsim did not)."""
    if isinstance(answer, OracleError):
        return [f"Kafka raised {answer.java_class}: {answer.message}"]
    if rec.get("kind") == "group_loaded":
        return _load_differences(rec, answer)
    if rec.get("kind") == "coordinator_request":
        _differs[rec["seq"]] = "answer"
        at, theirs = answer
        return [
            f"groupsim sent no answer to handle {rec['handle']}, Kafka answered at {at} ms "
            f"with {_error(theirs['error_code'])}"
        ]
    if not request:
        _differs[rec["seq"]] = "answer"
        return [f"groupsim answered {rec['source']} with no {rec['api']} request waiting"]
    if answer is None:
        _differs[rec["seq"]] = "answer"
        return [
            f"Kafka sent no answer to handle {rec['handle']} (groupsim did, at {rec['t_ms']} ms)"
        ]
    at, theirs = answer
    ours = rec["response"]
    out: list[str] = []
    for name in FIELDS:
        if name not in ours:
            continue
        a, b = ours[name], theirs.get(name)
        if name == "members" and b is not None:
            last = "error_code" if rec["api"] == "leave" else "metadata"
            b = [[m["member_id"], m["group_instance_id"], m[last]] for m in b]
        if name == "assignment" or (name == "protocol_name" and rec["api"] == "join"):
            b = b or ""  # JoinGroupResponseData's protocolName may be null: "" as groupsim's
        if a != b:
            _differs.setdefault(rec["seq"], name)
            if name == "error_code":
                a, b = _error(a), _error(b)
            out.append(f"{name}: groupsim {a!r}, Kafka {b!r}")
    if not out and at != rec["t_ms"]:
        _differs[rec["seq"]] = "time"
        out.append(f"sent at: groupsim {rec['t_ms']} ms, Kafka {at} ms")
    return out


#: The compared fields of a loaded group (``group_loaded`` and the driver's ``loaded``).
LOAD_FIELDS = ("generation", "state", "protocol", "leader_id", "member_ids")


def _load_differences(rec: dict[str, Any], answer: dict[str, Any]) -> list[str]:
    """How the group Kafka's new manager loaded differs from groupsim's ``group_loaded``
    (an absent group is Kafka's ``null``: groupsim logs generation 0, Empty, no members)."""
    theirs = answer.get("loaded") or {
        "generation": 0,
        "state": "Empty",
        "protocol": None,
        "leader_id": None,
        "member_ids": [],
    }
    out: list[str] = []
    for name in LOAD_FIELDS:
        a, b = rec.get(name), theirs.get(name)
        if a != b:
            _differs.setdefault(rec["seq"], name)
            out.append(f"loaded {name}: groupsim {a!r}, Kafka {b!r}")
    return out


#: The first differing field of the record being judged (``seq`` → field), for ``extra``.
_differs: dict[int, str] = {}


def _extra(rec: dict[str, Any]) -> dict[str, Any]:
    if rec.get("kind") == "group_loaded":
        return {
            "referee": "coordinator",
            "api": "load",
            "differs": _differs.pop(rec["seq"], "answer"),
            "generation": rec.get("generation"),
        }
    request_like = rec.get("kind") == "coordinator_request"
    body = rec.get("body", {}) if request_like else {}
    response = rec.get("response", {})
    fields: dict[str, Any] = {
        "referee": "coordinator",
        "api": rec["api"],
        "differs": _differs.pop(rec["seq"], "answer"),
        "member": _member(str(rec["source"])),
    }
    member_id = response.get("member_id") or body.get("member_id")
    if member_id:
        fields["member_id"] = member_id
    generation = response.get("generation_id", body.get("generation_id"))
    fields["generation"] = generation
    return fields


def _subject(rec: dict[str, Any]) -> str:
    if rec.get("kind") == "group_loaded":
        return "the group the new coordinator loaded after a failover"
    return (
        f"the coordinator's {_API_NAME.get(rec['api'], rec['api'])} answer to "
        f"{_member(str(rec['source']))} (handle {rec.get('handle')})"
    )


def judge_coordinator(oracle: KafkaOracle, records: list[dict[str, Any]]) -> RefereeVerdict:
    """Replays the coordinator traffic of ``records`` through Kafka (one batch) and returns
    the verdict (``answers``: groupsim answers compared; at most one violation).

    Raises:
        scenarios.referee.harness.OracleUnavailable: the JVM died.
    """
    verdict = RefereeVerdict(kafka=oracle.version)
    run = _Replay(records, verdict)
    config = run.config
    if not config:
        return verdict
    if config["new_member_join_timeout_ms"] != KAFKA_NEW_MEMBER_JOIN_TIMEOUT_MS:
        verdict.skipped["new_member_join_timeout"] += len(run.requests)
        return verdict
    if config["protocol_tie_break"] != "java":
        verdict.skipped["protocol_tie_break"] += len(run.requests)
        return verdict
    opened = {
        "session": run.session,
        "start_ms": 0,
        "config": {
            "initial_rebalance_delay_ms": config["initial_rebalance_delay_ms"],
            "min_session_timeout_ms": config["min_session_timeout_ms"],
            "max_session_timeout_ms": config["max_session_timeout_ms"],
            "max_size": config["max_size"],
        },
    }
    replay(
        oracle,
        verdict,
        run.rounds,
        _differences,
        lambda rec: "GroupMetadataManager",
        extra=_extra,
        before=[("coordinator.open", opened)],
        after=[("coordinator.close", {"session": run.session})],
        regroup=run.regroup,
        subject=_subject,
        first_only=True,
    )
    _differs.clear()
    verdict.answers, verdict.compared = verdict.compared, 0
    return verdict
