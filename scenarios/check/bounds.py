"""The liveness bound of a Connect group: how long after its last disturbance (a fault, a
restart, a config change) it must have converged (virtual ms).

:func:`liveness_bound_ms` is the formula (docs/chaos.md "The liveness bound"); chaos sets every
generated scenario's ``settle_ms`` to it (``scenarios.campaigns.chaos.bound_for``), and the
quiet-period checker (:mod:`scenarios.check.quiet_periods`) evaluates it from an event log with
:func:`bound_from_log`.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from coordinator.config import CoordinatorConfig
from members.assignors.incremental_cooperative import exponential_backoff
from members.config import WORKER_CONFIG_KEYS, WorkerConfig
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import LogRecord

__all__ = [
    "BOUND_KINDS",
    "BOUND_ROUNDS",
    "NETWORK_ALLOWANCE_MS",
    "liveness_bound_ms",
    "bound_from_log",
]

#: Rounds of (session timeout + rebalance timeout + heartbeat + herder work) in the bound.
BOUND_ROUNDS = 6


def liveness_bound_ms(
    *,
    max_delay_ms: int,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    heartbeat_interval_ms: int,
    initial_rebalance_delay_ms: int,
    herder_round_ms: int = 0,
    network_ms: int = 1,
    unsync_backoff_ms: int = 0,
    rounds: int = BOUND_ROUNDS,
) -> int:
    """How long after the last fault ends a Connect group must have converged (virtual ms).

    ``bound = G + D + B + U + rounds × (S + R + H + W + 4 × N)`` with

    - ``G`` = ``group.initial.rebalance.delay.ms`` (the group may have emptied and restart),
    - ``D`` = ``scheduled.rebalance.max.delay.ms`` (lost work waits for its worker this long),
    - ``B`` = the longest successive-revocation backoff reachable: Kafka's
      ``ExponentialBackoff(1, 40, D)`` grows 40, 1600, 64000 … and is capped at ``D``, so
      ``B = D`` (0 when ``D`` is 0),
    - ``U`` = ``worker.unsync.backoff.ms`` when a worker may fail to read the config topic
      within ``worker.sync.timeout.ms`` (``groupsim.config.read.lag.ms`` ≥ it), else 0,
    - per round: ``S`` = ``session.timeout.ms`` (a gone member is noticed), ``R`` =
      ``rebalance.timeout.ms`` (the join phase waits for slow members), ``H`` =
      ``heartbeat.interval.ms`` (members learn of a rebalance on a heartbeat), ``W`` = herder
      work of a round (stopping and starting every job one after the other), ``N`` = one-way
      network delay (latency + jitter); ``rounds`` (6) covers the round after the fault, the
      delayed-rebalance round, a revoking round and its follow-up, and a backoff round and its
      follow-up.

    With Kafka's defaults (S 10 s, R 60 s, H 3 s, D 300 s, G 3 s) and no herder time this is
    3000 + 300000 + 300000 + 6 × 73004 = 1041024 ms, about 17.4 minutes.
    """
    backoff = exponential_backoff(max_delay_ms, 64)
    per_round = (
        session_timeout_ms
        + rebalance_timeout_ms
        + heartbeat_interval_ms
        + herder_round_ms
        + 4 * network_ms
    )
    return (
        initial_rebalance_delay_ms + max_delay_ms + backoff + unsync_backoff_ms + rounds * per_round
    )


#: One-way network delay the log-side bound allows per message (virtual ms): the scenario's
#: ``latency_ms`` + ``jitter_ms`` is not in the event log; chaos draws at most 1 + 5.
NETWORK_ALLOWANCE_MS = 100
#: ``group.initial.rebalance.delay.ms`` (the coordinator's; not in the event log): Kafka's
#: default, which chaos uses.
INITIAL_REBALANCE_DELAY_MS = CoordinatorConfig().initial_rebalance_delay_ms


#: the record kinds :func:`bound_from_log` reads
BOUND_KINDS = frozenset({"member_start", "config", "run_start"})
#: ``member_start.config``'s field for each Kafka-named key it logs
_LOGGED_FIELDS = {f.encode_name: f.name for f in msgspec.structs.fields(k.MemberConfig)}


def bound_from_log(records: Sequence[LogRecord]) -> int:
    """:func:`liveness_bound_ms` from an event log (its records decoded; only those of
    :data:`BOUND_KINDS` are read): the largest value of each worker setting
    over every ``member_start`` (``config`` carries the ones that differ from Kafka's
    defaults), herder work for the most jobs any ``config`` record (or ``run_start``)
    configures, :data:`NETWORK_ALLOWANCE_MS` per message and Kafka's
    ``group.initial.rebalance.delay.ms`` (neither is in the log). Equals
    ``scenarios.campaigns.chaos.bound_for`` of a chaos scenario, but for the network term."""
    default = WorkerConfig()
    configs: list[k.MemberConfig] = []
    jobs = 0
    for r in records:
        match r:
            case k.MemberStart(config=config) if not isinstance(config.process_id, str):
                configs.append(config)
            case k.Config(connectors=connectors) | k.RunStart(connectors=connectors):
                jobs = max(jobs, len(connectors) + sum(connectors.values()))

    def per_config(c: k.MemberConfig, key: str) -> int:
        value = getattr(c, _LOGGED_FIELDS[key])
        return value if isinstance(value, int) else int(getattr(default, WORKER_CONFIG_KEYS[key]))

    def top(key: str) -> int:
        return max((per_config(c, key) for c in configs), default=0)

    per_job = max(
        (
            max(
                per_config(c, "groupsim.connector.start.ms")
                + per_config(c, "groupsim.connector.stop.ms"),
                per_config(c, "groupsim.task.start.ms") + per_config(c, "groupsim.task.stop.ms"),
            )
            for c in configs
        ),
        default=0,
    )
    unsync = max(
        (
            per_config(c, "worker.unsync.backoff.ms") + per_config(c, "groupsim.config.read.lag.ms")
            for c in configs
            if per_config(c, "groupsim.config.read.lag.ms")
            >= per_config(c, "worker.sync.timeout.ms")
        ),
        default=0,
    )
    return liveness_bound_ms(
        max_delay_ms=top("scheduled.rebalance.max.delay.ms"),
        session_timeout_ms=top("session.timeout.ms"),
        rebalance_timeout_ms=top("rebalance.timeout.ms"),
        heartbeat_interval_ms=top("heartbeat.interval.ms"),
        initial_rebalance_delay_ms=INITIAL_REBALANCE_DELAY_MS,
        herder_round_ms=jobs * per_job,
        network_ms=NETWORK_ALLOWANCE_MS,
        unsync_backoff_ms=unsync,
    )
