"""Safety invariants, checked on every event-log record (docs/event-log.md).

:class:`InvariantChecker` is fed each record in ``seq`` order and returns the violations that
record causes (:class:`scenarios.check.violation.Violation`, ``cause_seq`` the offending
record's ``seq``); it ignores ``violation`` records and kinds it does not know. O(1) work per
record, except ``member_crash``/``_stop``/``_start``, which forget what the member owned.

Invariants (record kinds from ``docs/event-log.md``):

``double_ownership``
    A ``task_start``/``connector_start`` on member B while another member A still owns the
    instance. A member owns an instance from ``*_start`` until ``*_stopped`` on that member;
    ``member_crash``, ``member_stop`` and a new ``member_start`` of the member end all its
    ownership (a process that is gone runs nothing).
``stale_generation``
    An ``assignment`` whose ``generation`` is not the ``generation`` of the latest
    ``generation`` record; or a ``task_start``/``connector_start`` whose ``generation`` is not
    the generation of that member's latest applied ``assignment`` (or that member has applied
    none since it started).
``illegal_transition``
    A ``group_state`` whose ``from`` → ``to`` is not in Kafka's ``ClassicGroupState`` table, or
    whose ``from`` is not the previous ``group_state``'s ``to``.
``foreign_assignment``
    An ``assignment`` whose ``leader_id`` is not the ``leader_id`` of the latest ``generation``
    record (checked only once a ``generation`` record exists).

Kafka Streams records (``docs/streams.md``, never in Connect logs) are checked by it too:

``double_ownership`` (Streams)
    An ``active_task_start`` on client B while another client A still holds the task as
    active (from ``active_task_start`` until ``active_task_stopped``); the violation carries
    ``role: "active"``. Standbys may sit on any number of clients.
``active_and_standby``
    An ``active_task_start`` on a client that holds a standby of the task, or a
    ``standby_task_start`` on a client that holds it as active (Kafka's ``ClientState`` and
    ``TaskManager`` never allow both on one instance).
``stale_generation`` (Streams)
    An ``active_task_start`` whose ``generation`` is not the generation of that client's
    latest applied ``assignment``.

Known upstream behaviour is named, not hidden: a ``double_ownership`` carries ``known_issue:
"KAFKA-13816"`` ("Downgrading Connect rebalancing protocol from incremental to eager causes
duplicate task instances") while the group runs ``default`` (eager) and an existing owner
started the instance under a cooperative protocol and has not revoked it on an eager rejoin
(a ``revoke`` with reason ``eager_rejoin``) since — cooperative workers do not revoke before
their first eager join (``WorkerCoordinator#onJoinPrepare``) — or, whatever the protocol, when
every other owner runs it as a *leftover*: outside its assignment snapshot, which is all an
eager join revokes (:mod:`scenarios.check.snapshots`).

Two more windows are Kafka's own and named likewise: a worker the coordinator removed (its
session expired, e.g. behind a network partition) keeps its work until it has failed to
rediscover the coordinator for ``heartbeat.interval.ms`` (``KAFKA-9184``, whose fix is that
delay), so the group may already have handed that work to others; and a worker whose poll
timer expired (herder stalled past ``rebalance.timeout.ms``) leaves the group without revoking
anything (``KAFKA-16056``, unfixed at the Kafka commit groupsim follows). A double ownership in
which one owner is such a worker, before it has applied a new assignment, carries that name
— only inside the window of :mod:`scenarios.check.known_windows`: KAFKA-9184 opens when the
member was removed while a fault kept it from hearing the coordinator, and both close when
Kafka's client, by its own timers, would have given up (session, heartbeat, rebalance and
request timeouts of that member). Outside its window a double ownership is a new violation.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, convert

from scenarios.check.consumer_known import CONSUMER_KNOWN_ISSUES
from scenarios.check.invariant_state import MemberState, Zombie, feed_snapshots
from scenarios.check.known_windows import KnownIssueWindows
from scenarios.check.snapshots import SNAPSHOT_KINDS, SnapshotTracker
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k

__all__ = [
    "InvariantChecker",
    "VALID_PREVIOUS_STATES",
    "SAFETY_INVARIANTS",
    "KAFKA_13816",
    "KAFKA_9184",
    "KAFKA_16056",
    "KNOWN_ISSUES",
    "FAILOVER_PROTOCOL_REPLAY",
    "STREAMS_ZOMBIE",
    "DELETED_NOT_REVOKED",
    "STATIC_MEMBER_KEPT",
]

#: The upstream issue a downgrade to eager reproduces (docs/upgrades.md).
KAFKA_13816 = "KAFKA-13816"
#: A removed member's work runs until it gives up on the coordinator (zombie window).
KAFKA_9184 = "KAFKA-9184"
#: A worker whose poll timer expired leaves the group still running its work.
KAFKA_16056 = "KAFKA-16056"
#: After a coordinator failover the loaded group knows only each member's elected protocol
#: (Kafka stores just that one); a worker rejoining with another protocol list is refused with
#: INCONSISTENT_GROUP_PROTOCOL and its herder thread exits. Not a JIRA: Kafka's design.
FAILOVER_PROTOCOL_REPLAY = "failover-protocol-replay"
#: A Kafka Streams client the coordinator removed while it could not hear it keeps
#: processing its active tasks until it hears the coordinator again: its consumer keeps
#: fetching while the coordinator is unknown, and only the next Heartbeat's
#: UNKNOWN_MEMBER_ID makes ``ConsumerCoordinator`` call ``onPartitionsLost`` (the
#: StreamThread then closes its tasks dirty). Not a JIRA: Kafka's design — exactly-once
#: fences the zombie's producer (KIP-447), at-least-once may process records twice.
STREAMS_ZOMBIE = "streams-zombie"
#: A Connect leader whose view of the previous assignment is cleared neither revokes deleted
#: work a worker still owns nor leaves it out of that worker's load
#: (``IncrementalCooperativeAssignor``). Not a JIRA: Kafka's design (check/deleted_work.py).
DELETED_NOT_REVOKED = "deleted-not-revoked"
#: A gone KIP-345 static Streams client stays a member while rebalances follow each other
#: faster than its session timeout (``completeClassicGroupJoin`` reschedules every member's
#: session) and keeps being assigned tasks. Not a JIRA: Kafka's design (docs/chaos.md).
STATIC_MEMBER_KEPT = "static-member-kept"
KNOWN_ISSUES = (
    *(KAFKA_13816, KAFKA_9184, KAFKA_16056, FAILOVER_PROTOCOL_REPLAY, STREAMS_ZOMBIE),
    *(DELETED_NOT_REVOKED, STATIC_MEMBER_KEPT),
) + CONSUMER_KNOWN_ISSUES  # scenarios.check.consumer_known

SAFETY_INVARIANTS = (
    *("double_ownership", "stale_generation", "illegal_transition", "foreign_assignment"),
    "active_and_standby",
)

#: Kafka ``ClassicGroupState``: state → the states it may be entered from.
VALID_PREVIOUS_STATES: dict[str, frozenset[str]] = {
    "Empty": frozenset({"PreparingRebalance"}),
    "PreparingRebalance": frozenset({"Stable", "CompletingRebalance", "Empty"}),
    "CompletingRebalance": frozenset({"PreparingRebalance"}),
    "Stable": frozenset({"CompletingRebalance"}),
    "Dead": frozenset({"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"}),
}


class InvariantChecker:
    """Incremental safety checker over an event log. Feed every record once, in order."""

    def __init__(self) -> None:
        # instance kind ("task"/"connector") -> instance id -> owners (insertion-ordered)
        self._owners: dict[str, dict[str, dict[str, None]]] = {"task": {}, "connector": {}}
        self._members: dict[str, MemberState] = {}  # scenarios/check/invariant_state.py
        self._generation: int | None = None
        self._protocol: str | None = None
        self._windows = KnownIssueWindows()
        self._snapshots = SnapshotTracker()  # KAFKA-13816's leftovers
        # The protocol under which each (kind, instance, member) ownership began.
        self._started_under: dict[tuple[str, str, str], str | None] = {}
        self._leader_id: str | None = None
        # member ids that took over the leader's group.instance.id in this generation (KIP-345
        # replaceStaticMember: leadership carries over to the new member id)
        self._leader_aliases: set[str] = set()
        # members with a JoinGroup sent and not answered yet: in the join phase under way
        self._join_pending: set[str] = set()
        self._have_generation = False
        self._state: str | None = None
        # Kafka Streams: task -> clients holding it as active (insertion-ordered).
        self._streams_active: dict[str, dict[str, None]] = {}
        self._dispatch = {
            "task_start": self._on_start,
            "connector_start": self._on_start,
            "task_stopped": self._on_stopped,
            "connector_stopped": self._on_stopped,
            "member_crash": self._on_member_gone,
            "member_stop": self._on_member_gone,
            "member_start": self._on_member_start,
            "member_removed": self._on_member_removed,
            "leave_group": self._on_leave_group,
            "herder_stall": self._on_herder_stall,
            "stream_thread_stall": self._on_herder_stall,  # a Streams client's thread stalls
            "revoke": self._on_revoke,
            "join_group_request": self._on_group_request,
            "sync_group_request": self._on_group_request,
            "join_group_response": self._on_group_response,
            "sync_group_response": self._on_group_response,
            "step": self._on_step,
            "assignment": self._on_assignment,
            "generation": self._on_generation,
            "group_state": self._on_group_state,
            "group_loaded": self._on_group_loaded,
            "member_replaced": self._on_member_replaced,
            "active_task_start": self._on_streams_active_start,
            "active_task_stopped": self._on_streams_active_stopped,
            "standby_task_start": self._on_streams_standby_start,
            "standby_task_stopped": self._on_streams_standby_stopped,
        }

    def feed(self, record: dict[str, Any]) -> list[Violation]:
        """Check one record; return the violations it causes (usually ``[]``), each with
        ``cause_seq`` ``record``'s ``seq``."""
        handler = self._dispatch.get(kind := record.get("kind"))  # type: ignore[arg-type]
        found = handler(record) if handler is not None else []
        if kind in SNAPSHOT_KINDS:  # (the tracker ignores the others: no call for them)
            feed_snapshots(self._snapshots, record)
        if found:
            seq = record.get("seq")
            return [violation.replace(cause_seq=seq) for violation in found]
        return found

    def finish(self) -> list[Violation]:
        """End-of-run checks: none for safety (liveness is in :mod:`scenarios.check.metrics`)."""
        return []

    def _member(self, name: str) -> MemberState:
        return self._members.get(name) or self._members.setdefault(name, MemberState())

    def _zombie(self, member: str, issue: str, now_ms: int) -> None:
        """``member`` left the group at ``now_ms`` in the window of ``issue``."""
        self._member(member).zombie = Zombie(issue, self._generation, now_ms)

    def owners(self, kind: str, instance: str) -> list[str]:
        """Members currently owning ``instance`` (``kind`` is ``"task"`` or ``"connector"``)."""
        return list(self._owners[kind].get(instance, ()))

    # ------------------------------------------------------------------ handlers

    def _on_start(self, record: dict[str, Any]) -> list[Violation]:
        kind = "task" if record["kind"] == "task_start" else "connector"
        instance: str = record[kind]  # required fields of task_start/connector_start
        member: str = record["member"]
        found: list[Violation] = []
        generation = record.get("generation")
        state = self._member(member)
        applied = state.applied_generation
        if applied is None or generation != applied:
            have = "none since it started" if applied is None else f"generation {applied}"
            found.append(
                Violation(
                    invariant="stale_generation",
                    detail=(
                        f"{member} starts {kind} {instance} in generation {generation} but its "
                        f"latest applied assignment is {have}"
                    ),
                    task=instance if kind == "task" else UNSET,
                    connector=instance if kind == "connector" else UNSET,
                    member=member,
                    generation=generation,
                    assignment_generation=applied,
                )
            )
        owners = self._owners[kind].setdefault(instance, {})
        if owners and (len(owners) > 1 or member not in owners):
            others = [m for m in owners if m != member]
            found.append(
                Violation(
                    invariant="double_ownership",
                    detail=(
                        f"{kind} {instance} starts on {member} while {', '.join(others)} "
                        f"still own{'s' if len(others) == 1 else ''} it"
                    ),
                    task=instance if kind == "task" else UNSET,
                    connector=instance if kind == "connector" else UNSET,
                    member=member,
                    owners=[*others, member],
                    generation=generation,
                )
            )
            now = int(record.get("t_ms") or 0)
            zombie = next(
                (
                    issue
                    for m in [*others, member]
                    if (issue := self._zombie_issue(str(m), now)) is not None
                ),
                None,
            )
            if zombie is not None:
                found[-1] = found[-1].replace(known_issue=zombie)
            elif (
                self._protocol == "default"
                and any(
                    self._started_under.get((kind, instance, m)) not in (None, "default")
                    for m in others
                )
            ) or all(self._snapshots.is_leftover(m, kind, instance) for m in others):
                # KAFKA-13816 per member: a cooperative owner's first eager join kept it
                # (WorkerCoordinator#onJoinPrepare), or each runs it as a leftover since.
                found[-1] = found[-1].replace(known_issue=KAFKA_13816)
        owners[member] = None
        self._started_under[(kind, instance, member)] = state.applied_protocol
        state.owned.add((kind, instance))
        return found

    def _on_stopped(self, record: dict[str, Any]) -> list[Violation]:
        kind = "task" if record["kind"] == "task_stopped" else "connector"
        instance: str = record[kind]  # required fields of task_stopped/connector_stopped
        member: str = record["member"]
        owners = self._owners[kind].get(instance)
        if owners is not None:
            owners.pop(member, None)
            if not owners:
                del self._owners[kind][instance]
        state = self._members.get(member)
        if state is not None:
            state.owned.discard((kind, instance))
        return []

    def _on_member_gone(self, record: dict[str, Any]) -> list[Violation]:
        member = str(record.get("member"))
        state = self._member(member)
        for kind, instance in state.owned:
            owners = self._owners[kind].get(instance)
            if owners is not None:
                owners.pop(member, None)
                if not owners:
                    del self._owners[kind][instance]
        for task in state.active:
            holders = self._streams_active.get(task)
            if holders is not None:
                holders.pop(member, None)
        state.owned, state.active, state.standby = set(), set(), set()
        state.applied_generation = None
        return []

    # ------------------------------------------------------------------ Kafka Streams

    def _on_streams_active_start(self, record: dict[str, Any]) -> list[Violation]:
        task = str(record.get("task"))
        member = str(record.get("member"))
        generation = record.get("generation")
        found: list[Violation] = []
        state = self._member(member)
        applied = state.applied_generation
        if applied is None or generation != applied:
            have = "none since it started" if applied is None else f"generation {applied}"
            found.append(
                Violation(
                    invariant="stale_generation",
                    detail=(
                        f"{member} starts active task {task} in generation {generation} but its "
                        f"latest applied assignment is {have}"
                    ),
                    task=task,
                    member=member,
                    generation=generation,
                    assignment_generation=applied,
                )
            )
        holders = self._streams_active.setdefault(task, {})
        others = [m for m in holders if m != member]
        if others:
            found.append(
                Violation(
                    invariant="double_ownership",
                    detail=(
                        f"active task {task} starts on {member} while {', '.join(others)} "
                        f"still hold{'s' if len(others) == 1 else ''} it as active"
                    ),
                    task=task,
                    role="active",
                    member=member,
                    owners=[*others, member],
                    generation=generation,
                )
            )
            # every other holder a removed client inside its window: Kafka's zombie
            now = int(record.get("t_ms") or 0)
            issues = {self._zombie_issue(other, now) for other in others}
            if len(issues) == 1 and None not in issues:
                found[-1] = found[-1].replace(known_issue=issues.pop())
        if task in state.standby:
            found.append(
                Violation(
                    invariant="active_and_standby",
                    detail=f"{member} starts active task {task} while it holds a standby of it",
                    task=task,
                    member=member,
                )
            )
        holders[member] = None
        state.active.add(task)
        return found

    def _on_streams_active_stopped(self, record: dict[str, Any]) -> list[Violation]:
        task = str(record.get("task"))
        member = str(record.get("member"))
        holders = self._streams_active.get(task)
        if holders is not None:
            holders.pop(member, None)
        self._member(member).active.discard(task)
        return []

    def _on_streams_standby_start(self, record: dict[str, Any]) -> list[Violation]:
        task = str(record.get("task"))
        member = str(record.get("member"))
        self._member(member).standby.add(task)
        if member in self._streams_active.get(task, {}):
            return [
                Violation(
                    invariant="active_and_standby",
                    detail=f"{member} starts a standby of {task} while it runs it as active",
                    task=task,
                    member=member,
                )
            ]
        return []

    def _on_streams_standby_stopped(self, record: dict[str, Any]) -> list[Violation]:
        self._member(str(record.get("member"))).standby.discard(str(record.get("task")))
        return []

    def _on_member_start(self, record: dict[str, Any]) -> list[Violation]:
        self._member(str(record.get("member"))).zombie = None
        self._windows.on_member_start(convert(record, k.MemberStart))
        return self._on_member_gone(record)

    def _zombie_issue(self, member: str, now_ms: int) -> str | None:
        """The known issue under which ``member`` may still run work it was removed with at
        ``now_ms``, or None (not removed, or past the time Kafka's client gives up)."""
        state = self._members.get(member)
        if state is None or (zombie := state.zombie) is None:
            return None
        owned = len(state.owned)
        if now_ms > self._windows.deadline(member, zombie.issue, zombie.removed_ms, now_ms, owned):
            return None
        return zombie.issue

    def _on_member_removed(self, record: dict[str, Any]) -> list[Violation]:
        """The coordinator dropped a member that may still run work (it has not said so)."""
        if record.get("reason") in ("session_timeout", "not_rejoined", "sync_timeout"):
            member = record.get("member")
            # A member dropped for a session its herder's stall ran out keeps its work past
            # the poll timer (KAFKA-16056's family); one dropped while it could not hear the
            # coordinator is a zombie until it gives up on it (KAFKA-9184's window).
            now = int(record.get("t_ms") or 0)
            streams = self._windows.is_streams(str(member))
            if self._windows.stalled_in_session(str(member), now):
                # a stalled StreamThread closes its tasks as lost once it polls again
                self._zombie(str(member), STREAMS_ZOMBIE if streams else KAFKA_16056, now)
            elif self._windows.could_not_hear(str(member), now):
                self._zombie(str(member), STREAMS_ZOMBIE if streams else KAFKA_9184, now)
        return []

    def _on_step(self, record: dict[str, Any]) -> list[Violation]:
        self._windows.on_step(convert(record, k.Step))  # (few: decoded)
        return []

    def _on_herder_stall(self, record: dict[str, Any]) -> list[Violation]:
        until = int(record.get("t_ms") or 0) + int(record.get("stall_ms") or 0)
        self._windows.on_herder_stall(str(record.get("member")), until)
        return []

    def _on_group_request(self, record: dict[str, Any]) -> list[Violation]:
        member, join = str(record.get("member")), record.get("kind") == "join_group_request"
        self._windows.on_request(member, join, int(record.get("t_ms") or 0))
        if join:
            self._join_pending.add(member)
        return []

    def _on_group_response(self, record: dict[str, Any]) -> list[Violation]:
        member, join = str(record.get("member")), record.get("kind") == "join_group_response"
        joined = str(record.get("member_id")) if join and record.get("error") == "NONE" else None
        self._windows.on_response(member, int(record.get("t_ms") or 0), joined)
        if join:
            self._join_pending.discard(member)
        return []

    def _on_revoke(self, record: dict[str, Any]) -> list[Violation]:
        """An eager rejoin revokes (and stops) the member's assignment snapshot: what of it the
        member started under a cooperative protocol no longer opens a KAFKA-13816 window."""
        if record.get("reason") == "eager_rejoin":
            member = str(record.get("member"))
            for kind, key in (("connector", "connectors"), ("task", "tasks")):
                for instance in record.get(key) or ():
                    if (kind, instance, member) in self._started_under:
                        self._started_under[(kind, instance, member)] = "default"
        return []

    def _on_leave_group(self, record: dict[str, Any]) -> list[Violation]:
        if record.get("reason") == "poll timeout expired":
            now = int(record.get("t_ms") or 0)
            self._zombie(str(record.get("member")), KAFKA_16056, now)
        return []

    def _on_assignment(self, record: dict[str, Any]) -> list[Violation]:
        member = record.get("member")
        state = self._member(str(member))
        state.applied_protocol = record.get("protocol")
        generation = record.get("generation")
        # A removed member may still apply the answer to a SyncGroup it sent before its
        # session expired (classicGroupSync answers in Stable without touching the session
        # timer): it stays a zombie until it applies an assignment of the current generation.
        removal = state.zombie
        zombie = self._zombie_issue(str(member), int(record.get("t_ms") or 0))
        if removal is not None and (
            removal.generation is None or (generation or 0) > removal.generation
        ):
            state.zombie = None
            zombie = None
        state.applied_generation = generation
        found: list[Violation] = []
        if generation != self._generation:
            latest = "none yet" if self._generation is None else str(self._generation)
            found.append(
                Violation(
                    invariant="stale_generation",
                    detail=(
                        f"{member} applies an assignment of generation {generation}; the "
                        f"group's latest generation is {latest}"
                    ),
                    member=member,
                    generation=generation,
                    group_generation=self._generation,
                )
            )
            if zombie is not None:
                found[-1] = found[-1].replace(known_issue=zombie)
        leader_id = record.get("leader_id")
        if (
            self._have_generation
            and leader_id != self._leader_id
            and leader_id not in self._leader_aliases
        ):
            found.append(
                Violation(
                    invariant="foreign_assignment",
                    detail=(
                        f"{member} applies an assignment from leader {leader_id} but the "
                        f"leader of generation {self._generation} is {self._leader_id}"
                    ),
                    member=member,
                    generation=generation,
                    leader_id=leader_id,
                    group_leader_id=self._leader_id,
                )
            )
            if zombie is not None:  # the same late answer to a removed member
                found[-1] = found[-1].replace(known_issue=zombie)
        return found

    def _on_generation(self, record: dict[str, Any]) -> list[Violation]:
        protocol = record.get("protocol")
        if protocol is not None:
            self._protocol = protocol
        self._static_stragglers(record)
        self._generation = record.get("generation")
        self._leader_id = record.get("leader_id")
        self._leader_aliases.clear()
        self._have_generation = True
        return []

    def _static_stragglers(self, record: dict[str, Any]) -> None:
        """``streams-zombie`` for a KIP-345 static Streams client the join phase kept
        (``completeClassicGroupJoin`` keeps static members) while it could not hear the
        coordinator, or stalled with no JoinGroup sent: the assignment rests on its last
        subscription, so a task it got since can go to another client while it still runs
        it, until a Heartbeat hears ILLEGAL_GENERATION — the removed client's window."""
        now = int(record.get("t_ms") or 0)
        for member in map(str, record.get("members") or ()):
            if not self._windows.is_streams(member):
                continue
            if self._windows.could_not_hear(member, now) or (  # its JoinGroup may be lost
                member not in self._join_pending and self._windows.stalled(member, now)
            ):
                self._zombie(member, STREAMS_ZOMBIE, now)

    def _on_member_replaced(self, record: dict[str, Any]) -> list[Violation]:
        """A static member rejoined under a new member id (KIP-345): if it led the current
        generation, assignments naming either id come from that generation's leader."""
        old = record.get("old_member_id")
        if old == self._leader_id or old in self._leader_aliases:
            self._leader_aliases.add(str(record.get("member_id")))
        if (zombie := self._windows.zombie_of(convert(record, k.MemberReplaced))) is not None:
            self._zombie(zombie, STREAMS_ZOMBIE, int(record["t_ms"]))
        return []

    def _on_group_loaded(self, record: dict[str, Any]) -> list[Violation]:
        """A new coordinator loaded the group from its stored record (coordinator failover):
        the old group object is Dead, the new one starts in the stored state and generation."""
        self._state = record.get("state")
        self._generation = record.get("generation")
        self._leader_id = record.get("leader_id")
        self._leader_aliases.clear()
        return []

    def _on_group_state(self, record: dict[str, Any]) -> list[Violation]:
        src = record.get("from")
        dst = record.get("to")
        previous = self._state
        self._state = dst  # type: ignore[assignment]
        problems: list[str] = []
        if previous is not None and src != previous:
            problems.append(f"from {src} but the group was in {previous}")
        allowed = VALID_PREVIOUS_STATES.get(dst)  # type: ignore[arg-type]
        if allowed is None:
            problems.append(f"unknown state {dst}")
        elif src not in allowed:
            problems.append(f"{src} -> {dst} is not a valid transition")
        if not problems:
            return []
        return [
            Violation(
                invariant="illegal_transition",
                detail=f"group_state {src} -> {dst}: " + "; ".join(problems),
                from_=src,
                to=dst,
                previous=previous,
                generation=record.get("generation"),
            )
        ]
