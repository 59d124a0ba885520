"""The liveness bound of a chaos run: how long after its last fault a Connect group must have
converged (virtual ms). The generated scenario's ``settle_ms`` is this bound (a Streams run's:
:func:`scenarios.check.streams_bounds.streams_bound_for`). The formula is
:func:`scenarios.check.bounds.liveness_bound_ms` (the quiet-period checker uses it too);
:func:`bound_for` evaluates it for a loaded scenario."""

from __future__ import annotations

from scenarios.check.bounds import BOUND_ROUNDS, liveness_bound_ms
from scenarios.check.streams_bounds import streams_bound_for
from scenarios.input.loader import LoadedScenario

__all__ = ["BOUND_ROUNDS", "liveness_bound_ms", "bound_for", "streams_bound_for"]


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
