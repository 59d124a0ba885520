"""Contract checkers over the Streams leader's assignment (KIP-441, KIP-708, KIP-925).

Pure functions over one run's records, like :mod:`scenarios.check.contracts` (which adds them
to ``CONTRACT_CHECKERS``). Each reads the leader's ``streams_assignment`` records that carry
``inputs`` (the configs and client tags the leader read, also the referee's) and
``kafka_warmups`` (docs/event-log.md); older logs without them are not judged. Every
check is one pass over the log, O(size of the record) per ``streams_assignment``.

Notation for one record: ``C`` clients (process ids, the FUTURE client of a version-probing
round included), ``n`` = ``num.standby.replicas``, the stateful tasks are the keys of the
``lags`` tables, and a task's *standbys* are the clients listing it in ``standby`` minus those
whose ``kafka_warmups`` list it (Kafka's warm-up map).

``warmups_over_budget`` — KIP-441, ``TaskMovement`` (``remainingWarmupReplicas``): one
    assignment keeps at most ``max.warmup.replicas`` warm-up copies. Kafka spends the budget
    on active movements (its warm-up map) and on standby movements (the source keeps its copy
    while the budget lasts; that copy is in no map). The placement before the movements gives
    each stateful task exactly ``min(n, C - 1)`` standbys (``DefaultStandbyTaskAssignor`` and
    ``ClientTagAwareStandbyTaskAssignor`` fill every task up to ``n`` on clients not holding
    it; balancing and the rack-aware optimiser move copies, never add them), and a swap
    keeps the count, so the copies kept by standby movements are the standbys above
    ``min(n, C - 1)``: warm-ups = ``|kafka_warmups|`` + that excess ≤ ``max.warmup.replicas``.
``standby_replicas_missing`` — KIP-441, ``HighAvailabilityTaskAssignor#assignStandbyReplicaTasks``:
    every stateful task has at least ``min(n, C - 1)`` standbys (warm-ups not counted; a client
    never holds an active and a standby of one task, ``active_and_standby`` judges that).
``standby_tags_not_spread`` — KIP-708, ``ClientTagAwareStandbyTaskAssignor``: with one
    ``rack.aware.assignment.tags`` key whose value every client has, ``V`` distinct values
    among the clients, a stateful task's active and standbys carry ``min(n + 1, V)`` distinct
    values. The assignor places the i-th standby outside the values already used while more
    than i values exist, and a client outside them never holds the task yet, so this holds
    at placement; standby balancing moves a copy only between clients with equal tags
    (``isAllowedTaskMovement``). What is not judged, because Kafka does not guarantee it:
    several keys (a client differing on every key may not exist and the assignor falls back
    to least-loaded), clients without the key, rounds where ``TaskMovement`` moved a task
    (``active_movements`` or ``standby_movements`` non-zero: the copy moves to a caught-up
    client whatever its tags), and rounds where the rack-aware optimiser ran (``cost``: it
    keeps the number of distinct tag entries of all keys, not of each).
``rack_cost_raised`` — KIP-925, ``RackAwareTaskAssignor#optimizeActiveTasks``/
    ``optimizeStandbyTasks``: under ``rack.aware.assignment.strategy=min_traffic`` the
    optimised placement costs no more than the one it started from (that placement is a
    feasible flow of the min-cost-flow problem; the standby optimiser only swaps when a swap
    lowers the cost): ``cost.after`` ≤ ``cost.before``. ``balance_subtopology`` adds balance
    constraints the starting placement may break, so it is not judged (docs/chaos.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import msgspec
from msgspec import UNSET

from members.assignors.streams.task_movement import is_caught_up
from protocol.kafka_configs import STREAMS_DEFAULTS
from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog.kinds_streams import StreamsAssignment
from scenarios.eventlog.records import LogRecord

__all__ = [
    "ASSIGNMENT_INVARIANTS",
    "ASSIGNMENT_CHECKERS",
    "Contract",
    "contract_of",
    "check_warmup_budget",
    "check_standby_replicas",
    "check_standby_tags",
    "check_min_traffic_cost",
    "check_streams_active_caught_up",
]

WARMUPS_OVER_BUDGET = "warmups_over_budget"
STANDBY_REPLICAS_MISSING = "standby_replicas_missing"
STANDBY_TAGS_NOT_SPREAD = "standby_tags_not_spread"
RACK_COST_RAISED = "rack_cost_raised"

ASSIGNMENT_INVARIANTS = (
    WARMUPS_OVER_BUDGET,
    STANDBY_REPLICAS_MISSING,
    STANDBY_TAGS_NOT_SPREAD,
    RACK_COST_RAISED,
)


class Contract(msgspec.Struct, frozen=True, kw_only=True):
    """What bounds a Streams leader's assignment (:func:`contract_of`): the leader's configs
    by Kafka's names as it read them (Kafka's defaults where a key is absent), Kafka's
    warm-up map (process label -> task ids) and, with ``rack.aware.assignment.tags`` set,
    those keys and each client's values of them (process label -> {key: value})."""

    max_warmup_replicas: int
    num_standby_replicas: int
    rack_aware_assignment_strategy: str | None
    kafka_warmups: Mapping[str, list[str]]
    rack_aware_assignment_tags: list[str] = []
    client_tags: dict[str, dict[str, str]] = {}


def contract_of(r: StreamsAssignment) -> Contract | None:
    """What a ``streams_assignment`` record's assignment is bounded by (:class:`Contract`),
    read from its ``inputs`` and its ``kafka_warmups``. ``None`` for a record without both
    fields (an older log: not judged)."""
    if r.inputs is UNSET or r.kafka_warmups is UNSET:
        return None
    config = r.inputs.config
    d = STREAMS_DEFAULTS
    tags = config.get("rack.aware.assignment.tags")
    keys = [str(k) for k in tags] if isinstance(tags, list) else []
    strategy = config.get("rack.aware.assignment.strategy", d.rack_aware_assignment_strategy)
    return Contract(
        max_warmup_replicas=_int(config.get("max.warmup.replicas", d.max_warmup_replicas)),
        num_standby_replicas=_int(config.get("num.standby.replicas", d.num_standby_replicas)),
        rack_aware_assignment_strategy=None if strategy is None else str(strategy),
        kafka_warmups=r.kafka_warmups,
        rack_aware_assignment_tags=keys,
        client_tags={c.id: {k: v for k, v in c.tags.items() if k in keys} for c in r.inputs.clients}
        if keys
        else {},
    )


def _int(value: int | str | list[str] | None) -> int:
    """A numeric config as the leader read it (a missing or null one: 0)."""
    return int(value) if isinstance(value, int | str) and value != "" else 0


def _judged(records: Sequence[LogRecord]) -> Iterator[tuple[StreamsAssignment, Contract]]:
    """The ``streams_assignment`` records that carry what bounds them, and that
    (:func:`contract_of`)."""
    for r in records:
        if isinstance(r, StreamsAssignment):
            contract = contract_of(r)
            if contract is not None:
                yield r, contract


def _stateful(r: StreamsAssignment) -> list[str]:
    tasks: set[str] = set()
    for lags in r.lags.values():
        tasks.update(lags)
    return sorted(tasks)


def _standbys(r: StreamsAssignment, contract: Contract) -> dict[str, int]:
    """Stateful task -> clients holding it as a standby that is not in Kafka's warm-up map."""
    kafka = contract.kafka_warmups
    count = dict.fromkeys(_stateful(r), 0)
    for label, decision in r.clients.items():
        warm = set(kafka.get(label) or ())
        for task in decision.standby:
            if task in count and task not in warm:
                count[task] += 1
    return count


def _expected_standbys(r: StreamsAssignment, contract: Contract) -> int:
    return max(0, min(contract.num_standby_replicas, len(r.clients) - 1))


@reads_typed("streams_assignment")
def check_warmup_budget(records: Sequence[LogRecord]) -> list[Violation]:
    """``warmups_over_budget``: at most ``max.warmup.replicas`` warm-ups per assignment."""
    found: list[Violation] = []
    for r, contract in _judged(records):
        limit = contract.max_warmup_replicas
        expected = _expected_standbys(r, contract)
        kafka = sum(len(ts) for ts in contract.kafka_warmups.values())
        kept = sum(max(0, n - expected) for n in _standbys(r, contract).values())
        if kafka + kept > limit:
            found.append(
                violation_at(
                    WARMUPS_OVER_BUDGET,
                    f"generation {r.generation}: {kafka} warm-ups from active movements "
                    f"and {kept} standby copies beyond num.standby.replicas kept by standby "
                    f"movements exceed max.warmup.replicas {limit}",
                    r,
                    generation=r.generation,
                    member=r.member,
                )
            )
    return found


@reads_typed("streams_assignment")
def check_standby_replicas(records: Sequence[LogRecord]) -> list[Violation]:
    """``standby_replicas_missing``: each stateful task has ``min(n, C - 1)`` standbys."""
    found: list[Violation] = []
    for r, contract in _judged(records):
        expected = _expected_standbys(r, contract)
        if expected == 0:
            continue
        short = sorted(t for t, n in _standbys(r, contract).items() if n < expected)
        if short:
            found.append(
                violation_at(
                    STANDBY_REPLICAS_MISSING,
                    f"generation {r.generation}: stateful task(s) {', '.join(short)} "
                    f"have fewer than {expected} standbys (num.standby.replicas "
                    f"{contract.num_standby_replicas}, {len(r.clients)} clients)",
                    r,
                    generation=r.generation,
                    member=r.member,
                    tasks=short,
                )
            )
    return found


@reads_typed("streams_assignment")
def check_standby_tags(records: Sequence[LogRecord]) -> list[Violation]:
    """``standby_tags_not_spread``: one tag key: a task's copies span ``min(n + 1, V)`` values."""
    found: list[Violation] = []
    for r, contract in _judged(records):
        keys = contract.rack_aware_assignment_tags
        if len(keys) != 1 or r.active_movements or r.standby_movements:
            continue
        if r.cost is not UNSET:  # the rack-aware optimiser ran: it keeps tag counts overall
            continue
        key = keys[0]
        tags = contract.client_tags
        clients = r.clients
        value = {label: (tags.get(label) or {}).get(key) for label in clients}
        if not clients or any(v is None for v in value.values()):
            continue
        distinct = len(set(value.values()))
        expected = min(_expected_standbys(r, contract) + 1, distinct)
        holders: dict[str, set[str]] = {t: set() for t in _stateful(r)}
        for label, decision in clients.items():
            for task in (*decision.active, *decision.standby):
                if task in holders:
                    holders[task].add(str(value[label]))
        short = sorted(t for t, vs in holders.items() if len(vs) < expected)
        if short:
            found.append(
                violation_at(
                    STANDBY_TAGS_NOT_SPREAD,
                    f"generation {r.generation}: the copies of {', '.join(short)} span "
                    f"fewer than {expected} distinct values of tag {key!r} "
                    f"({distinct} among the clients, num.standby.replicas "
                    f"{contract.num_standby_replicas})",
                    r,
                    generation=r.generation,
                    member=r.member,
                    tasks=short,
                )
            )
    return found


@reads_typed("streams_assignment")
def check_min_traffic_cost(records: Sequence[LogRecord]) -> list[Violation]:
    """``rack_cost_raised``: under ``min_traffic`` the optimiser never raises the cost."""
    found: list[Violation] = []
    for r, contract in _judged(records):
        if r.cost is UNSET or contract.rack_aware_assignment_strategy != "min_traffic":
            continue
        before, after = r.cost.before, r.cost.after
        if after is not None and after > before:
            found.append(
                violation_at(
                    RACK_COST_RAISED,
                    f"generation {r.generation}: min_traffic rack-aware optimisation "
                    f"raised the cross-rack cost from {before} to {after}",
                    r,
                    generation=r.generation,
                    member=r.member,
                )
            )
    return found


@reads_typed("streams_assignment")
def check_streams_active_caught_up(records: Sequence[LogRecord]) -> list[Violation]:
    """``active_not_caught_up``: each Streams leader decision puts a stateful active task on
    a caught-up client, or on a client with the smallest lag when none is caught up (KIP-441,
    ``TaskMovement#assignActiveTaskMovements``; the rule is listed in
    :mod:`scenarios.check.protocol_checkers`). Records without ``acceptable_recovery_lag``
    are not judged."""
    found: list[Violation] = []
    for r in records:
        if not isinstance(r, StreamsAssignment) or r.version_probing:
            continue
        acceptable, lags = r.acceptable_recovery_lag, r.lags
        if not isinstance(acceptable, int) or not lags:
            continue
        for client, decision in sorted(r.clients.items()):
            for task in decision.active:
                mine = lags.get(client, {}).get(task)
                if mine is None or is_caught_up(mine, acceptable):
                    continue  # stateless, or caught up
                best = min(lag.get(task, mine) for lag in lags.values())
                if best < mine:
                    found.append(
                        violation_at(
                            "active_not_caught_up",
                            f"generation {r.generation} gives active {task} to "
                            f"{client} (lag {mine}) while a client has lag {best} "
                            f"(acceptable.recovery.lag {acceptable})",
                            r,
                            task=task,
                            generation=r.generation,
                        )
                    )
    return found


ASSIGNMENT_CHECKERS = (
    check_warmup_budget,
    check_standby_replicas,
    check_standby_tags,
    check_min_traffic_cost,
)
