"""The KIP-345 zombie rule, judged from an event log (part of
:data:`scenarios.check.contracts.CONTRACT_CHECKERS`; docs/chaos.md "Contract rules").

``zombie_owns_work`` — KIP-345, ``ClassicGroup#replaceStaticMember`` /
    ``AbstractCoordinator`` and ``ConsumerCoordinator`` (``FencedInstanceIdException`` is
    fatal): when another process joins with a static member's ``group.instance.id`` (a
    ``member_replaced`` whose ``member`` is not the process that heard ``old_member_id`` in a
    JoinGroup answer), the older process is a zombie:
    it is never admitted to the group again (no JoinGroup answer ``NONE``) while the instance
    id is held by the newer process, and once it has heard FENCED_INSTANCE_ID it applies no
    assignment and starts no task, and a plain consumer owns no partition afterwards (its
    ``partitions_lost`` or its end must follow: a consumer still holding partitions at the end
    of the log was never closed); a request with its old member id is answered
    FENCED_INSTANCE_ID, not UNKNOWN_MEMBER_ID (which makes a client forget its id and rejoin,
    taking the instance back). The fence lifts when the zombie starts anew (``member_start``),
    the instance's member is removed (``member_removed``), or the zombie forgets its member id
    by itself before it is told (a JoinGroup with an empty id: its poll timer expired, or a
    JoinGroup answer was lost) — that JoinGroup replaces the newer process, as Kafka's
    coordinator does: KIP-345 fences by member id only. A process that forgot its id so
    before the takeover is no zombie either: its JoinGroup, still in flight, takes the
    instance back as the newest joiner. The answer of a join that completed
    with the old id before the takeover (a generation formed before it, listing that id),
    arriving late, is no admission: ``replaceStaticMember`` fences a JoinGroup still parked,
    so it was sent before, and the SyncGroup that follows is fenced. A process that started
    anew before the takeover never heard the taken-over id (its dead predecessor did), so it
    is no zombie: its JoinGroup still in flight takes the instance back as the newest joiner.

Input: the log's records decoded into their Structs (``log_rules.reads_typed``), in log order:
those of the kinds the rule reads (every other record changes nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog import kinds_coordinator as kg
from scenarios.eventlog import kinds_serve as kv
from scenarios.eventlog.records import RECORD_TYPES, LogRecord

__all__ = ["ZOMBIE_OWNS_WORK", "check_zombie_instance"]

ZOMBIE_OWNS_WORK = "zombie_owns_work"

#: What a fenced zombie must not do once it heard FENCED_INSTANCE_ID.
_ZOMBIE_WORK = ("assignment", "active_task_start", "standby_task_start", "consumer_assignment")
#: A process's end: whatever it owned is gone.
_ENDS = (k.MemberStop, k.MemberCrash, k.MemberFatal, k.MemberStart)
#: The records whose ``error`` is a Kafka error name a member was answered: its responses, a
#: held request's ``late_request``, the error it died of (``member_fatal``), the coordinator's
#: answers to its Heartbeats and JoinGroups in a rebalance (the wire tap's records) and, served,
#: its connection's ``wire_response`` and ``offset_commit``.
_ANSWERS = (
    k.JoinGroupResponse,
    k.SyncGroupResponse,
    k.HeartbeatResponse,
    k.LateRequest,
    k.MemberFatal,
    k.RebalanceHeartbeat,
    k.CompletingHeartbeat,
    kg.CompletingJoin,
    kg.BoundedJoin,
    kv.WireResponse,
    kv.OffsetCommit,
)
#: Every kind the rule reads (each record of them names its ``member``).
_KINDS = (
    *_ZOMBIE_WORK,
    "member_stop",
    "member_crash",
    "member_fatal",
    "member_start",
    "join_group_request",
    "join_group_response",
    "sync_group_response",
    "heartbeat_response",
    "late_request",
    "rebalance_heartbeat",
    "completing_heartbeat",
    "completing_join",
    "bounded_join",
    "wire_response",
    "offset_commit",
    "partitions_revoked",
    "partitions_lost",
    "member_replaced",
    "member_removed",
    "generation",
)
_WORK_TYPES = {RECORD_TYPES[kind]: kind for kind in _ZOMBIE_WORK}
_READ_TYPES = frozenset(RECORD_TYPES[kind] for kind in _KINDS)
#: the records that change what a consumer holds
_HOLDING_TYPES = frozenset({ku.ConsumerAssignment, ku.PartitionsRevoked, ku.PartitionsLost, *_ENDS})
#: the records that change who heard which member id, or who is a zombie
_TRACKING_TYPES = frozenset(
    {k.JoinGroupRequest, k.JoinGroupResponse, k.MemberReplaced, k.MemberRemoved, k.MemberStart}
)


@reads_typed(*_KINDS)
def check_zombie_instance(records: Sequence[LogRecord]) -> list[Violation]:
    """``zombie_owns_work``: a process whose static member id another process took over is
    fenced by that id (FENCED_INSTANCE_ID, never UNKNOWN_MEMBER_ID, which would make it
    rejoin and take the instance back), never admitted again under it, and once fenced owns
    no work (module doc)."""
    found: list[Violation] = []
    owner: dict[str, str] = {}  # member id -> the process (member name) that heard it
    zombies: dict[str, tuple[str, str]] = {}  # zombie -> (its old id, id holding the instance)
    told: dict[str, LogRecord] = {}  # zombies that heard FENCED_INSTANCE_ID -> that answer
    holds: dict[str, set[str]] = {}  # consumer -> the partitions it owns (its own records)
    formed: dict[int, frozenset[str]] = {}  # generation -> the member ids it was formed with
    before: dict[str, int] = {}  # zombie -> the group's generation when it was taken over
    latest = -1  # the group's latest generation
    for r in records:
        cls = type(r)
        if cls not in _READ_TYPES:
            continue
        if isinstance(r, k.Generation):
            formed[r.generation] = frozenset(r.member_ids)
            latest = r.generation
            continue
        member: str = r.member  # type: ignore[union-attr,assignment]  # each of them has one
        if cls in _HOLDING_TYPES:
            match r:
                case ku.ConsumerAssignment(owned=owned):
                    holds[member] = set(owned)
                case ku.PartitionsRevoked(partitions=parts) | ku.PartitionsLost(partitions=parts):
                    holds.get(member, set()).difference_update(parts)
                case _:  # an end
                    holds.pop(member, None)
        if cls not in _TRACKING_TYPES:
            if member in zombies:
                _fenced_step(r, member, zombies, told, found, formed, before)
            continue
        match r:
            case k.JoinGroupResponse(error="NONE", member_id=member_id) if member not in zombies:
                owner[member_id] = member
            case k.MemberReplaced(old_member_id=old, member_id=new):
                owner[new] = member
                if member in zombies:  # the zombie took its instance id back
                    found.append(
                        _zombie(r, member, f"was admitted again (member id {new}, replacing {old})")
                    )
                    zombies.pop(member)
                    told.pop(member, None)
                for zombie, (its_id, holder) in list(zombies.items()):
                    if holder == old:
                        zombies[zombie] = (its_id, new)
                previous = owner.get(old)  # only a process that heard its id can be fenced by it
                if previous is not None and previous != member:
                    zombies[previous] = (old, new)
                    before[previous] = latest
            case k.MemberRemoved(member_id=gone):
                for zombie in [z for z, (_, holder) in zombies.items() if holder == gone]:
                    zombies.pop(zombie)
                    told.pop(zombie, None)
            case k.MemberStart():
                zombies.pop(member, None)
                told.pop(member, None)
                # A process starting anew has heard none of its predecessor's member ids (a
                # Streams or consumer client restarts with an empty member id): a takeover of
                # such an id fences the dead predecessor, not this process, whose own
                # JoinGroup, still in flight, may take the instance back as the newest joiner
                # (KIP-345).
                _forget_ids(owner, member)
            case k.JoinGroupRequest(member_id="") if member not in zombies:
                # It forgot its member id by itself (its poll timer expired, or a JoinGroup
                # answer was lost): a takeover of an id it heard before, landing while this
                # JoinGroup is in flight, fences none of its ids; the JoinGroup takes the
                # instance back as the newest joiner (consumer seed 23 run 7664).
                _forget_ids(owner, member)
            case _ if member in zombies:  # a JoinGroup request or answer (not a first NONE)
                _fenced_step(r, member, zombies, told, found, formed, before)
    for member, answer in told.items():
        if member in zombies and holds.get(member):
            still = ", ".join(sorted(holds[member]))
            found.append(
                _zombie(
                    answer,
                    member,
                    f"still owns {still} at the end of the log after FENCED_INSTANCE_ID "
                    "(FencedInstanceIdException is fatal: the consumer must be closed)",
                )
            )
    return found


def _forget_ids(owner: dict[str, str], member: str) -> None:
    """Drop every member id ``member`` heard from ``owner`` (member id -> the process that
    heard it): a takeover of one of them fences no process of that name."""
    for heard in [mid for mid, process in owner.items() if process == member]:
        del owner[heard]


def _fenced_step(
    r: LogRecord,
    member: str,
    zombies: dict[str, tuple[str, str]],
    told: dict[str, LogRecord],
    found: list[Violation],
    formed: dict[int, frozenset[str]],
    before: dict[str, int],
) -> None:
    """Judge record ``r`` of zombie ``member`` (``zombies`` and ``told`` updated in place;
    ``formed``: each generation's member ids when its join completed; ``before``: each
    zombie's latest generation when it was taken over)."""
    its_id = zombies[member][0]
    error = r.error if isinstance(r, _ANSWERS) else None
    if isinstance(r, k.JoinGroupRequest) and not r.member_id and member not in told:
        zombies.pop(member)  # it forgot its id by itself: Kafka cannot tell a restart
    elif isinstance(r, k.JoinGroupResponse) and error == "NONE":
        late = r.generation <= before.get(member, -1)
        if late and r.member_id == its_id and its_id in formed.get(r.generation, ()):
            # the answer of a join that completed with its old id before the takeover, late
            # on the wire: ``replaceStaticMember`` fences a JoinGroup still parked, so this
            # one was sent before; the SyncGroup that follows is fenced
            return
        found.append(_zombie(r, member, f"was admitted again (member id {r.member_id})"))
    elif error == "FENCED_INSTANCE_ID":
        if _heeded(r, its_id):
            told.setdefault(member, r)
    elif error == "UNKNOWN_MEMBER_ID" and getattr(r, "member_id", None) == its_id:
        found.append(_zombie(r, member, f"heard UNKNOWN_MEMBER_ID for {its_id}, not fenced"))
    elif type(r) in _WORK_TYPES and member in told:
        found.append(_zombie(r, member, f"logged {_WORK_TYPES[type(r)]} after FENCED_INSTANCE_ID"))


def _heeded(r: LogRecord, its_id: str) -> bool:
    """Whether the zombie acted on the FENCED_INSTANCE_ID answer ``r``. A Heartbeat's answer
    is stale, and ignored, once the member's generation is no longer the one the Heartbeat was
    sent with (``HeartbeatResponseHandler``: ``generationUnchanged()``, else "ignoring the
    error"): the client's own ``heartbeat_response`` names its member id at that moment, so an
    id other than the taken-over one (e.g. forgotten when its poll timer expired) means it
    never heard the fence. The coordinator's side of a Heartbeat (a held request's
    ``late_request``, the wire tap's ``rebalance_heartbeat``/``completing_heartbeat``) is
    followed by that client record, which decides; a JoinGroup's or SyncGroup's fence is
    always fatal (their handlers raise it whatever the generation)."""
    match r:
        case k.HeartbeatResponse(member_id=member_id):
            return member_id == its_id
        case k.LateRequest(request="heartbeat") | k.RebalanceHeartbeat() | k.CompletingHeartbeat():
            return False
        case _:
            return True


def _zombie(r: LogRecord, member: str, what: str) -> Violation:
    return violation_at(
        ZOMBIE_OWNS_WORK,
        f"{member}: another process took over its group.instance.id, yet it {what} "
        "(KIP-345: the older process is fenced for good)",
        r,
        member=member,
    )
