"""The liveness bound of a chaos run: how long after its last fault a Connect group must have
converged (virtual ms). The generated scenario's ``settle_ms`` is this bound."""

from __future__ import annotations

from members.assignors.incremental_cooperative import exponential_backoff
from scenarios.input.loader import LoadedScenario

__all__ = ["BOUND_ROUNDS", "liveness_bound_ms", "bound_for"]

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


def bound_for(loaded: LoadedScenario) -> int:
    """:func:`liveness_bound_ms` for a loaded scenario: the largest of each setting over every
    worker config it uses (cluster workers and ``join``/``restart`` steps), herder work for the
    most jobs it ever configures."""
    configs = [w.config for w in loaded.workers]
    configs += [s.config for s in loaded.steps if s.config is not None]
    jobs = len(loaded.connectors) + sum(loaded.connectors.values())
    current = dict(loaded.connectors)
    for step in loaded.steps:
        if step.action in ("add_connector", "set_tasks") and step.connector is not None:
            current[step.connector] = step.tasks or 0
        elif step.action == "remove_connector" and step.connector is not None:
            current.pop(step.connector, None)
        jobs = max(jobs, len(current) + sum(current.values()))
    per_job = (
        max(
            (max(c.connector_start_ms + c.connector_stop_ms, c.task_start_ms + c.task_stop_ms))
            for c in configs
        )
        if configs
        else 0
    )
    unsync = max(
        (
            c.worker_unsync_backoff_ms + c.config_read_lag_ms
            for c in configs
            if c.config_read_lag_ms >= c.worker_sync_timeout_ms
        ),
        default=0,
    )
    network = loaded.network.latency_ms + loaded.network.jitter_ms
    return liveness_bound_ms(
        max_delay_ms=max((c.scheduled_rebalance_max_delay_ms for c in configs), default=0),
        session_timeout_ms=max((c.session_timeout_ms for c in configs), default=0),
        rebalance_timeout_ms=max((c.rebalance_timeout_ms for c in configs), default=0),
        heartbeat_interval_ms=max((c.heartbeat_interval_ms for c in configs), default=0),
        initial_rebalance_delay_ms=loaded.coordinator_config.initial_rebalance_delay_ms,
        herder_round_ms=jobs * per_job,
        network_ms=network,
        unsync_backoff_ms=unsync,
    )
