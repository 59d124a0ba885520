"""``scheduled_delay``: KIP-415's scheduled-rebalance delay, judged on the leader's ``assignor``
records (docs/event-log.md), a pure function over a whole event log.

Kafka: ``IncrementalCooperativeAssignor`` (``handleLostAssignments``, ``performTaskAssignment``
step 8, ``resetDelay``, ``calculateDelay``) at commit 1eb7644 (KIP-415).
The leader keeps ``scheduledRebalance`` (absolute ms) and ``delay`` in its assignor, an
object that lives as long as the worker process (``WorkerCoordinator`` builds it once): so
the state is followed per (leader process, assignor), from its ``member_start``. Every member
of a round gets the same delay; the leader's ``assignor`` record carries it (``delay_ms``) at
the time it ran (``t_ms``, the ``now`` the assignor read). Only the incremental assignors keep
a delay: ``assignor`` ``incremental_cooperative`` and ``static`` (KIP-987 runs the same
countdown over its wildcard jobs). A CONFIG_MISMATCH round (``error`` ≠ 0) leaves the state
untouched and is skipped.

With ``D`` = the leader's ``scheduled.rebalance.max.delay.ms`` (its ``member_start`` config;
300000 when absent) and ``S`` = ``scheduledRebalance`` after the leader's previous round
(``t + delay`` of that round, 0 when its delay was 0), a round at ``t`` with delay ``d`` must
satisfy:

- ``0 <= d <= D`` (``delay`` is ``maxDelay``, the remaining time capped at ``maxDelay``, or
  ``ExponentialBackoff(1, 40, maxDelay)``: never above ``D``);
- **counts down**: while ``t < S``, ``d`` is either the remaining time ``S - t``
  (``calculateDelay``: the same countdown, whatever rejoined meanwhile) or 0 (``resetDelay``:
  the lost work came back with its worker, so nothing is lost any more). Any other value —
  in particular a delay that grows again while a countdown runs — is a violation;
- **cleared once it fired**: at the first round with ``t >= S > 0`` the delayed rebalance has
  expired; ``handleLostAssignments`` hands the lost work out (to the candidate workers, or as
  new work) and calls ``resetDelay`` — or resets at once when nothing is lost any more — and
  load balancing then revokes at once (``revokedInPrevious`` was cleared), so ``d`` is 0;
- **starts at a known value**: with no countdown running (``S`` = 0), ``d`` is 0, ``D``
  (lost work first seen: ``delay = maxDelay``) or a successive-revocation backoff
  ``ExponentialBackoff(1, 40, D)(n)`` for some ``n >= 1`` (40, 1600, 64000, … capped at ``D``).

When the round found work lost (the record's ``lost``: the items of the previous assignment
no member holds now, and ``previous_members_present``: every member of the leader's previous
round is back), ``handleLostAssignments`` decides, and the record must show it (an item is
*handed out* when it is in ``assigned`` — or in ``revoked``: load balancing may take it back
from the candidate it was dealt to in the same round; under ``static``, a wildcard job with
no wildcard worker to go to is listed in ``unassigned_static_jobs`` instead):

- a countdown runs (``t < S``): nothing lost is handed out and ``d = S - t``;
- the delayed rebalance fired (``t >= S > 0``), or no countdown runs and every previous
  member is present (the work was never delivered, not abandoned), or ``D`` = 0: all of it
  is handed out;
- otherwise (lost work of a departed worker, first seen): none is handed out and ``d = D``.
"""

from __future__ import annotations

from collections.abc import Sequence

from members.assignors.incremental_cooperative import exponential_backoff
from members.config import WorkerConfig
from scenarios.check.log_rules import reads_typed
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import LogRecord

__all__ = ["SCHEDULED_DELAY", "check_scheduled_delay", "backoff_values"]

SCHEDULED_DELAY = "scheduled_delay"

#: Assignors that keep KIP-415's delay (``assignor`` record field ``assignor``).
_DELAYING = ("incremental_cooperative", "static")
_DEFAULT_MAX_DELAY_MS = WorkerConfig().scheduled_rebalance_max_delay_ms


def backoff_values(max_delay_ms: int) -> frozenset[int]:
    """Every value ``ExponentialBackoff(1, 40, max_delay_ms).backoff(n)`` takes for n >= 1
    (Kafka's successive-revocation backoff): ``{40, 1600, 64000, …, max_delay_ms}``."""
    values = set()
    for attempts in range(1, 64):
        value = exponential_backoff(max_delay_ms, attempts)
        values.add(value)
        if value >= max_delay_ms:
            break
    return frozenset(values)


@reads_typed("member_start", "assignor")
def check_scheduled_delay(records: Sequence[LogRecord]) -> list[Violation]:
    """``scheduled_delay`` violations of ``records`` (one run, ``seq`` order), each as the
    fields of a ``violation`` record (``invariant``, ``detail``, ``member`` (the leader),
    ``generation``, ``delay_ms``, ``max_delay_ms``, ``scheduled_ms``, ``cause_seq``)."""
    found: list[Violation] = []
    max_delay: dict[str, int] = {}
    # (leader, assignor) -> scheduledRebalance after its last round (0: none)
    scheduled: dict[tuple[str, str], int] = {}
    for r in records:
        match r:
            case k.MemberStart(member=member, config=config):
                top = config.scheduled_rebalance_max_delay_ms
                max_delay[member] = top if isinstance(top, int) else _DEFAULT_MAX_DELAY_MS
                for key in [key for key in scheduled if key[0] == member]:
                    del scheduled[key]
            case k.Assignor(member=leader, assignor=assignor, error=0, t_ms=t, delay_ms=delay):
                if assignor not in _DELAYING:
                    continue
                key = (leader, assignor)
                top = max_delay.get(leader, _DEFAULT_MAX_DELAY_MS)
                due = scheduled.get(key, 0)
                problem = _problem(t, delay, due, top) or _lost_problem(r, t, delay, due, top)
                if problem is not None:
                    found.append(
                        Violation(
                            invariant=SCHEDULED_DELAY,
                            detail=f"{leader} (generation {r.generation}): {problem}",
                            member=leader,
                            generation=r.generation,
                            delay_ms=delay,
                            max_delay_ms=top,
                            scheduled_ms=due,
                            cause_seq=r.seq,
                        )
                    )
                scheduled[key] = t + delay if delay > 0 else 0
    return found


def _items(work: k.Work | object) -> set[str]:
    """The connectors and tasks of a ``Work`` (none when absent)."""
    return {*work.connectors, *work.tasks} if isinstance(work, k.Work) else set()


def _all_items(works: dict[str, k.Work]) -> set[str]:
    """The connectors and tasks of a ``{member id: Work}`` map."""
    return set().union(*(_items(w) for w in works.values()))


def _lost_problem(r: k.Assignor, t: int, delay: int, due: int, top: int) -> str | None:
    """KIP-415's handling of the work the leader found lost (``lost``), or None."""
    lost = _items(r.lost)
    if not lost:
        return None
    handed = lost & (_all_items(r.assigned) | _all_items(r.revoked))
    shown = ", ".join(sorted(lost)[:3]) + (", …" if len(lost) > 3 else "")
    if due > 0 and t < due:
        if handed:
            return f"lost work ({shown}) handed out {due - t} ms before the scheduled rebalance"
        if delay != due - t:
            return f"lost work ({shown}) waits but the delay {delay} ms does not count down"
        return None
    if due > 0 or r.previous_members_present is True or top == 0:
        # the delay expired, or no worker left (an undelivered assignment), or delays are off;
        # under static (KIP-987) a wildcard job has nowhere to go without a wildcard worker
        left = lost - handed - _items(r.unassigned_static_jobs)
        if left:
            return f"lost work ({shown}) not handed out ({len(left)} left)"
        return None
    if handed:
        return f"lost work ({shown}) of a departed worker handed out without the delay"
    if delay != top:
        return f"lost work ({shown}) first seen with delay {delay} ms, not the max {top} ms"
    return None


def _problem(t: int, delay: int, due: int, top: int) -> str | None:
    """Why ``delay`` at ``t`` breaks KIP-415 after a round that scheduled ``due`` (0: none),
    or None."""
    if delay < 0 or delay > top:
        return f"delay {delay} ms outside [0, scheduled.rebalance.max.delay.ms = {top}]"
    if due > 0 and t < due:
        if delay not in (0, due - t):
            return (
                f"delay {delay} ms while the scheduled rebalance is due at {due} ms: it must "
                f"count down to it ({due - t} ms) or be reset to 0"
            )
        return None
    if due > 0:
        if delay != 0:
            return (
                f"the scheduled rebalance due at {due} ms fired at {t} ms but the delay "
                f"({delay} ms) was not cleared"
            )
        return None
    if delay not in (0, top) and delay not in backoff_values(top):
        return (
            f"delay {delay} ms starts a countdown with neither "
            f"scheduled.rebalance.max.delay.ms ({top}) nor a successive-revocation backoff"
        )
    return None
