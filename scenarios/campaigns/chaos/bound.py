"""The liveness bound of a chaos run: how long after its last fault a Connect group must have
converged (virtual ms). The generated scenario's ``settle_ms`` is this bound. The formula is
:func:`scenarios.check.bounds.liveness_bound_ms` (the quiet-period checker uses it too);
:func:`bound_for` evaluates it for a loaded scenario."""

from __future__ import annotations

from scenarios.check.bounds import BOUND_ROUNDS, liveness_bound_ms
from scenarios.input.loader import LoadedScenario
from scenarios.input.streams import LoadedStreamsScenario

__all__ = ["BOUND_ROUNDS", "liveness_bound_ms", "bound_for", "streams_bound_for"]

#: Probing rounds a Streams bound allows beyond those the warm-ups need (the rebalance that
#: follows the faults, the one that finds the warm-ups caught up, and one spare).
STREAMS_EXTRA_ROUNDS = 3


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


def streams_bound_for(loaded: LoadedStreamsScenario, fault_end_ms: int) -> int:
    """The liveness bound of a Streams chaos run (virtual ms after its last step ends at
    ``fault_end_ms``): by then every task is assigned and running once, caught up where
    possible (no probing rebalance still asked for) and balanced per KIP-441.

    ``2 × (S + H) + P + G`` — the coordinator notices a crashed client (session timeout ``S``,
    heartbeat ``H``), a join phase lasts at most the rebalance timeout (Streams' consumers use
    ``max.poll.interval.ms`` ``P``), the initial rebalance delay ``G`` — plus
    ``(ceil(stateful tasks × (1 + num.standby.replicas) / max.warmup.replicas) + 3) ×
    probing.rebalance.interval.ms × ceil(restore / probing interval)`` plus ``restore``:
    KIP-441 moves at most ``max.warmup.replicas`` task copies (active or standby,
    ``TaskMovement``) per probing rebalance, each warm-up restoring in parallel;
    ``restore`` is the longest full restoration of a changelog at the end of the run
    (``records + rate × t`` at ``groupsim.restore.records.per.sec − rate``).
    """
    configs = [c.config for c in loaded.clients]
    session = max(c.session_timeout_ms for c in configs)
    heartbeat = max(c.heartbeat_interval_ms for c in configs)
    poll = max(c.max_poll_interval_ms for c in configs)
    probing = max(c.assignment.probing_rebalance_interval_ms for c in configs)
    warmups = min(c.assignment.max_warmup_replicas for c in configs)
    restore_rate = min(c.restore_records_per_sec for c in configs)
    topology = loaded.topology

    def restore_ms(end_ms: int) -> int:
        longest = 0
        for task in topology.stateful:
            rate = topology.changelog_rate(task)
            records = topology.end_offset(task, end_ms)
            longest = max(longest, -(-records * 1000 // max(1, restore_rate - rate)))
        return longest

    # every copy of a stateful task (active and standbys) may move, each through a warm-up
    # (TaskMovement moves actives and standbys alike)
    replicas = 1 + max(c.assignment.num_standby_replicas for c in configs)
    movable = len(topology.stateful) * replicas
    rounds = -(-movable // max(1, warmups)) + STREAMS_EXTRA_ROUNDS
    network = 10 * (loaded.scenario.network.latency_ms + loaded.scenario.network.jitter_ms)
    initial = loaded.coordinator_config.initial_rebalance_delay_ms
    fixed = 2 * (session + heartbeat) + poll + initial + network
    bound = 0
    for _ in range(2):  # the changelogs grow until the run's end, which the bound moves
        restore = restore_ms(fault_end_ms + bound)
        per_round = probing * max(1, -(-restore // probing))
        bound = fixed + rounds * per_round + restore
    return bound
