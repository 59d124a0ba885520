"""The liveness bound of a Kafka Streams application: how long after its last disturbance
every task must be assigned, running once, caught up where possible and balanced per KIP-441
(virtual ms). Chaos sets a generated Streams scenario's ``settle_ms`` to it, and the
quiet-period checker (:mod:`scenarios.check.streams_quiet`) evaluates it after every quiet
period of a run. Unlike Connect's bound it needs the scenario (changelog sizes, their growth
and the restore rate are not in the event log)."""

from __future__ import annotations

from scenarios.input.streams import LoadedStreamsScenario

__all__ = ["STREAMS_EXTRA_ROUNDS", "streams_bound_for"]

#: Probing rounds a Streams bound allows beyond those the warm-ups need (the rebalance that
#: follows the faults, the one that finds the warm-ups caught up, and one spare).
STREAMS_EXTRA_ROUNDS = 3


def streams_bound_for(loaded: LoadedStreamsScenario, fault_end_ms: int) -> int:
    """The liveness bound of a Streams chaos run (virtual ms after its last step ends at
    ``fault_end_ms``): by then every task is assigned and running once, caught up where
    possible (no probing rebalance still asked for) and balanced per KIP-441.

    ``2 × (S + H) + P + G`` — the coordinator notices a crashed client (session timeout ``S``,
    heartbeat ``H``), a join phase lasts at most the rebalance timeout (Streams' consumers use
    ``max.poll.interval.ms`` ``P``), the initial rebalance delay ``G`` — plus
    ``(ceil(stateful tasks × (1 + num.standby.replicas) / max.warmup.replicas) + 3) ×
    probing.rebalance.interval.ms × ceil(restore / probing interval)`` plus
    ``probing.rebalance.interval.ms × ceil(serial / probing interval) + serial``. KIP-441
    moves at most ``max.warmup.replicas`` task copies (active or standby, ``TaskMovement``)
    per probing rebalance, each round waiting for ``restore``, the longest changelog's
    restoration at the end of the run (``records + rate × t``); the extra intervals and
    ``serial`` cover the turns a thread's changelogs take: ``serial`` is the time one stream
    thread takes to restore every stateful task's changelog one after the other (a thread
    restores its tasks through one restore consumer, :mod:`members.restore`, and holds at
    most one copy of each). Both at ``groupsim.restore.records.per.sec`` less every
    changelog's growth.
    """
    configs = [c.config for c in loaded.clients]
    session = max(c.session_timeout_ms for c in configs)
    heartbeat = max(c.heartbeat_interval_ms for c in configs)
    poll = max(c.max_poll_interval_ms for c in configs)
    probing = max(c.assignment.probing_rebalance_interval_ms for c in configs)
    warmups = min(c.assignment.max_warmup_replicas for c in configs)
    restore_rate = min(c.restore_records_per_sec for c in configs)
    topology = loaded.topology

    growth = sum(topology.changelog_rate(task) for task in topology.stateful)

    def restore_ms(end_ms: int) -> int:
        longest = max((topology.end_offset(t, end_ms) for t in topology.stateful), default=0)
        return -(-longest * 1000 // max(1, restore_rate - growth))

    def serial_ms(end_ms: int) -> int:
        records = sum(topology.end_offset(task, end_ms) for task in topology.stateful)
        return -(-records * 1000 // max(1, restore_rate - growth))

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
        serial = serial_ms(fault_end_ms + bound)
        per_round = probing * max(1, -(-restore // probing))
        bound = fixed + rounds * per_round + probing * -(-serial // probing) + serial
    return bound
