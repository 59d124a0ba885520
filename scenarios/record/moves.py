"""Coordinator moves in a recorded trace, and how ``replay --conform`` replays them.

A group's coordinator is the leader of its ``__consumer_offsets`` partition; when that broker
stops, another replica becomes the leader and loads the group (``GroupMetadataManager#replay``
of its last record, then ``#onLoaded``). :func:`coordinator_moves` finds each move in the trace
(from the real broker behind each connection, :attr:`.exchanges.Exchange.broker`);
:func:`run_moves` carries them out on the replay (:class:`.conform._Replay`).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from coordinator.group import GroupCoordinator
from protocol.effects import Effect
from scenarios.serve import wire

from .exchanges import Exchange, coordinator_unavailable
from .frames import decode_response
from .verdict import Conformance, CoordinatorMove

__all__ = ["Move", "coordinator_moves", "run_moves", "deliver"]


@dataclass(frozen=True, slots=True)
class Move:
    """A coordinator move read from the trace (:func:`coordinator_moves`)."""

    group: str
    source: str
    target: str
    #: when the old coordinator last answered a request of the group (ms)
    died_ms: int
    #: the first request sent after ``died_ms``: from it on the group has no coordinator
    down_index: int
    #: the first request the new coordinator answered as the group's coordinator
    load_index: int
    #: when that request was sent: the replay loads the group then (ms)
    loaded_ms: int
    #: the earliest the real load can have ended (ms): the new coordinator's last answer to the
    #: group saying it was not (yet) its coordinator, else ``died_ms``; the replay's load, and
    #: the session deadlines it arms, are at most ``loaded_ms - not_loaded_ms`` late
    not_loaded_ms: int = 0


def _group_of(ex: Exchange) -> str | None:
    try:
        group = wire.decode_request(ex.request_raw).body.group_id
    except (wire.WireError, AttributeError):
        return None
    return group if isinstance(group, str) else None


def coordinator_moves(exchanges: list[Exchange]) -> tuple[Move, ...]:
    """Where a group's coordinator moved in the trace: a request of the group answered by the
    group (not NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE) on a
    connection to another real broker than the one that answered as its coordinator before.

    The real load is not on the wire: it happened after the new broker's last
    NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS answer and before it answered as the group;
    the replay places it at that first request (so a loaded member's session deadline is at
    most that gap later than the broker's: :attr:`Move.not_loaded_ms` bounds it). Traces
    without broker addresses have no moves.
    """
    moves: list[Move] = []
    sent = [ex.t_ms for ex in exchanges]
    current: dict[str, tuple[str, int]] = {}  # group -> (its coordinator, its last answer)
    # (group, broker) -> when the broker last answered the group it was not its coordinator
    refused: dict[tuple[str, str], int] = {}
    for i, ex in enumerate(exchanges):
        if not ex.broker or ex.response_raw is None or ex.response_t_ms is None:
            continue
        group = _group_of(ex)
        if group is None:
            continue
        if coordinator_unavailable(ex):
            key = (group, ex.broker)
            refused[key] = max(refused.get(key, 0), ex.response_t_ms)
            continue
        known = current.get(group)
        if known is not None and known[0] != ex.broker:
            died = known[1]
            down = min(bisect_right(sent, died), i)
            after = max(died, refused.get((group, ex.broker), died))
            moves.append(Move(group, known[0], ex.broker, died, down, i, ex.t_ms, after))
            known = None
        last = ex.response_t_ms if known is None else max(known[1], ex.response_t_ms)
        current[group] = (ex.broker, last)
    return tuple(moves)


def run_moves(replay: Any, index: int, verdict: Conformance) -> None:
    """Carries out on ``replay`` (a :class:`.conform._Replay`) the coordinator moves due by the
    trace's ``index``-th request: the old coordinator goes at the time it last answered (its
    timers due until then fire first), and the new one loads the group at the request it first
    answered as coordinator. ``replay.moved`` records how far each move has run (1: the old
    coordinator is gone, 2: the group is loaded), so a move runs once per replay (and per copy
    the replay tries request orders on)."""
    for k, move in enumerate(replay.moves):
        done = replay.moved.get(k, 0)
        if done == 0 and move.down_index <= index:
            replay.advance(move.died_ms)
            _take_down(replay, move.group, move.died_ms)
            replay.moved[k] = done = 1
        if done == 1 and move.load_index <= index:
            _load(replay, move, verdict)
            replay.moved[k] = 2


def _take_down(replay: Any, group_id: str, died_ms: int) -> None:
    """The group's coordinator is gone (its broker stopped, or the ``__consumer_offsets``
    partition moved away): :meth:`GroupCoordinator.unload` — its parked JoinGroups and
    SyncGroups are answered NOT_COORDINATOR (``GroupMetadataManager#onUnloaded``; after a crash
    the trace holds no answer to compare them with) and every timer of the group stops."""
    coordinator = replay.groups.get(group_id)
    replay.down.add(group_id)
    if coordinator is None:
        return
    now_ms = max(died_ms, replay.clock)
    replay.apply(group_id, coordinator.unload(now_ms), now_ms)
    replay.drop_timers(group_id)


def _load(replay: Any, move: Move, verdict: Conformance) -> None:
    """The new coordinator loads the group from the old one's last stored record at
    ``move.loaded_ms`` (:meth:`GroupCoordinator.load`: ``GroupMetadataManager#replay``, then
    ``#onLoaded`` arms every member's session timeout from the load)."""
    group_id = move.group
    old = replay.groups.get(group_id)
    record = old.stored_record() if old is not None else None
    now_ms = max(move.loaded_ms, replay.clock)
    coordinator, effects = GroupCoordinator.load(
        group_id, replay.config, replay.new_member_id, record, now_ms
    )
    replay.groups[group_id] = coordinator
    replay.down.discard(group_id)
    replay.clock = now_ms
    replay.apply(group_id, effects, now_ms)
    verdict.coordinator_moves.append(
        CoordinatorMove(
            group_id,
            move.source,
            move.target,
            move.died_ms,
            now_ms,
            min(move.not_loaded_ms, now_ms),
            record.generation if record is not None else 0,
            tuple(m.member_id for m in record.members) if record is not None else (),
        )
    )


def _answered_with_error(ex: Exchange) -> bool:
    """Whether the recorded answer of ``ex`` carries an error code other than NONE."""
    if ex.response_raw is None:
        return False
    _, answer = decode_response(ex.response_raw, ex.api_key, ex.version)
    code = getattr(answer, "error_code", None)
    return code is not None and int(getattr(code, "value", code)) != 0


def deliver(coordinator: GroupCoordinator, ex: Exchange, req: Any, now_ms: int) -> list[Effect]:
    """Hands the recorded request ``ex`` (decoded: ``req``) to ``coordinator`` at ``now_ms``.

    A leader's SyncGroup record commits when the broker answered it: Kafka's
    ``CoordinatorRuntime`` holds a write's answer until the high watermark passes the record,
    which with a replicated ``__consumer_offsets`` takes a follower's fetch (100 ms or more),
    and ``GroupMetadataManager#classicGroupSyncToLeader`` makes the group Stable only then. So
    the coordinator's :attr:`~GroupCoordinator.write_latency_ms` is, for a SyncGroup, the time
    from the request to its recorded answer (a JoinGroup in between sends the group back to
    PreparingRebalance, as on the real cluster).

    The write is held only when the broker answered the SyncGroup with an error: a broker
    that answered NONE committed the record before any JoinGroup or LeaveGroup could send
    the group back, so committing at once gives the same answers, while its answer's delay
    may be nothing but a loaded broker's request queue (a single broker commits at once:
    the high watermark of a partition without followers moves on the append)."""
    if ex.api_key == 14 and ex.response_t_ms is not None and _answered_with_error(ex):
        coordinator.write_latency_ms = max(0, ex.response_t_ms - now_ms)
    try:
        return coordinator.handle(str(ex.conn), req, now_ms)
    finally:
        coordinator.write_latency_ms = 0
