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
from typing import Any

import msgspec

from protocol.kafka_configs import STREAMS_DEFAULTS
from scenarios.check.log_rules import Record, Violation, reads_records, violation

__all__ = [
    "ASSIGNMENT_INVARIANTS",
    "ASSIGNMENT_CHECKERS",
    "Contract",
    "contract_of",
    "check_warmup_budget",
    "check_standby_replicas",
    "check_standby_tags",
    "check_min_traffic_cost",
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


def contract_of(r: Record) -> Contract | None:
    """What bounds a ``streams_assignment`` record's assignment (:class:`Contract`), read
    from its ``inputs`` and its ``kafka_warmups``. ``None`` for a record without both fields
    (an older log: not judged)."""
    inputs = r.get("inputs")
    warmups = r.get("kafka_warmups")
    if not isinstance(inputs, Mapping) or not isinstance(warmups, Mapping):
        return None
    config: Mapping[str, Any] = inputs.get("config") or {}
    d = STREAMS_DEFAULTS
    keys = list(config.get("rack.aware.assignment.tags") or ())
    strategy = config.get("rack.aware.assignment.strategy", d.rack_aware_assignment_strategy)
    return Contract(
        max_warmup_replicas=int(config.get("max.warmup.replicas", d.max_warmup_replicas) or 0),
        num_standby_replicas=int(config.get("num.standby.replicas", d.num_standby_replicas) or 0),
        rack_aware_assignment_strategy=None if strategy is None else str(strategy),
        kafka_warmups=warmups,
        rack_aware_assignment_tags=keys,
        client_tags={
            c["id"]: {k: v for k, v in (c.get("tags") or {}).items() if k in keys}
            for c in inputs.get("clients") or ()
        }
        if keys
        else {},
    )


def _judged(records: Sequence[Record]) -> Iterator[tuple[Record, Contract]]:
    """The ``streams_assignment`` records that carry what bounds them, and that
    (:func:`contract_of`)."""
    for r in records:
        if r.get("kind") == "streams_assignment":
            contract = contract_of(r)
            if contract is not None:
                yield r, contract


def _stateful(r: Record) -> list[str]:
    tasks: set[str] = set()
    for lags in (r.get("lags") or {}).values():
        tasks.update(lags)
    return sorted(tasks)


def _standbys(r: Record, contract: Contract) -> dict[str, int]:
    """Stateful task -> clients holding it as a standby that is not in Kafka's warm-up map."""
    kafka = contract.kafka_warmups
    count = dict.fromkeys(_stateful(r), 0)
    for label, decision in (r.get("clients") or {}).items():
        warm = set(kafka.get(label) or ())
        for task in decision.get("standby") or ():
            if task in count and task not in warm:
                count[task] += 1
    return count


def _expected_standbys(r: Record, contract: Contract) -> int:
    clients = len(r.get("clients") or {})
    return max(0, min(contract.num_standby_replicas, clients - 1))


@reads_records("streams_assignment")  # (_judged reads no other kind)
def check_warmup_budget(records: Sequence[Record]) -> list[Violation]:
    """``warmups_over_budget``: at most ``max.warmup.replicas`` warm-ups per assignment."""
    found: list[Violation] = []
    for r, contract in _judged(records):
        limit = contract.max_warmup_replicas
        expected = _expected_standbys(r, contract)
        kafka = sum(len(ts) for ts in contract.kafka_warmups.values())
        kept = sum(max(0, n - expected) for n in _standbys(r, contract).values())
        if kafka + kept > limit:
            found.append(
                violation(
                    WARMUPS_OVER_BUDGET,
                    f"generation {r.get('generation')}: {kafka} warm-ups from active movements "
                    f"and {kept} standby copies beyond num.standby.replicas kept by standby "
                    f"movements exceed max.warmup.replicas {limit}",
                    r,
                    generation=r.get("generation"),
                    member=r.get("member"),
                )
            )
    return found


@reads_records("streams_assignment")  # (_judged reads no other kind)
def check_standby_replicas(records: Sequence[Record]) -> list[Violation]:
    """``standby_replicas_missing``: each stateful task has ``min(n, C - 1)`` standbys."""
    found: list[Violation] = []
    for r, contract in _judged(records):
        expected = _expected_standbys(r, contract)
        if expected == 0:
            continue
        short = sorted(t for t, n in _standbys(r, contract).items() if n < expected)
        if short:
            found.append(
                violation(
                    STANDBY_REPLICAS_MISSING,
                    f"generation {r.get('generation')}: stateful task(s) {', '.join(short)} "
                    f"have fewer than {expected} standbys (num.standby.replicas "
                    f"{contract.num_standby_replicas}, {len(r.get('clients') or {})} "
                    "clients)",
                    r,
                    generation=r.get("generation"),
                    member=r.get("member"),
                    tasks=short,
                )
            )
    return found


@reads_records("streams_assignment")  # (_judged reads no other kind)
def check_standby_tags(records: Sequence[Record]) -> list[Violation]:
    """``standby_tags_not_spread``: one tag key: a task's copies span ``min(n + 1, V)`` values."""
    found: list[Violation] = []
    for r, contract in _judged(records):
        keys = contract.rack_aware_assignment_tags
        if len(keys) != 1 or r.get("active_movements") or r.get("standby_movements"):
            continue
        if r.get("cost") is not None:
            continue
        key = keys[0]
        tags = contract.client_tags
        clients = r.get("clients") or {}
        value = {label: (tags.get(label) or {}).get(key) for label in clients}
        if not clients or any(v is None for v in value.values()):
            continue
        distinct = len(set(value.values()))
        expected = min(_expected_standbys(r, contract) + 1, distinct)
        holders: dict[str, set[str]] = {t: set() for t in _stateful(r)}
        for label, decision in clients.items():
            for task in (*(decision.get("active") or ()), *(decision.get("standby") or ())):
                if task in holders:
                    holders[task].add(str(value[label]))
        short = sorted(t for t, vs in holders.items() if len(vs) < expected)
        if short:
            found.append(
                violation(
                    STANDBY_TAGS_NOT_SPREAD,
                    f"generation {r.get('generation')}: the copies of {', '.join(short)} span "
                    f"fewer than {expected} distinct values of tag {key!r} "
                    f"({distinct} among the clients, num.standby.replicas "
                    f"{contract.num_standby_replicas})",
                    r,
                    generation=r.get("generation"),
                    member=r.get("member"),
                    tasks=short,
                )
            )
    return found


@reads_records("streams_assignment")  # (_judged reads no other kind)
def check_min_traffic_cost(records: Sequence[Record]) -> list[Violation]:
    """``rack_cost_raised``: under ``min_traffic`` the optimiser never raises the cost."""
    found: list[Violation] = []
    for r, contract in _judged(records):
        cost = r.get("cost") or {}
        before, after = cost.get("before"), cost.get("after")
        if contract.rack_aware_assignment_strategy != "min_traffic" or after is None:
            continue
        if before is not None and after > before:
            found.append(
                violation(
                    RACK_COST_RAISED,
                    f"generation {r.get('generation')}: min_traffic rack-aware optimisation "
                    f"raised the cross-rack cost from {before} to {after}",
                    r,
                    generation=r.get("generation"),
                    member=r.get("member"),
                )
            )
    return found


ASSIGNMENT_CHECKERS = (
    check_warmup_budget,
    check_standby_replicas,
    check_standby_tags,
    check_min_traffic_cost,
)
