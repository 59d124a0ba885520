"""The Streams chaos generator (``groupsim chaos --kind streams``): from ``(campaign seed, run
index)`` alone — one ``random.Random`` seeded with ``"groupsim-chaos-streams/<seed>/<index>"``,
the ``delay_request`` faults from a second one, static membership from a third, the zombie
fault and its SyncGroup variants from others, nothing else random — a Kafka Streams
application and a timeline of faults, as a :class:`ChaosSpec` whose ``streams`` holds the
scenario file's body (docs/streams.md, docs/chaos.md "Streams campaigns").

Drawn per run (KIP-441 / KIP-708 / KIP-925 settings across their ranges):

- clients: ``group.instance.id`` (KIP-345 static membership, with a longer
  ``session.timeout.ms`` in most such runs) for most clients of two runs in five (from a third
  random stream: :func:`.timeline.draw_static_members`), ``num.stream.threads`` 1–3 (the
  capacity the HA assignor balances by), a
  ``client.rack`` when the run is rack-aware, a ``client.tag.zone`` when it uses
  ``rack.aware.assignment.tags`` (and in half those runs a ``client.tag.cluster`` too, the
  second key, from its own stream: :func:`_draw_second_tag`), a state directory with some
  tasks at some lag, and a quarter of them (never the first) joining later (scale-out);
- the topology: 1–3 subtopologies of 1–8 partitions, stateful or stateless, changelogs of
  0–500,000 records that keep growing (0–50 records/s, restored at 20,000–100,000 records/s
  per task, so warm-ups catch up);
- ``num.standby.replicas`` 0–2, ``max.warmup.replicas`` 1–4, ``acceptable.recovery.lag``
  1,000–100,000,
  ``probing.rebalance.interval.ms`` 60–300 s, ``rack.aware.assignment.strategy`` none /
  ``min_traffic`` / ``balance_subtopology``;
- faults of every kind the engine takes for Streams: ``crash`` (restart without LeaveGroup),
  ``leave`` (clean restart, or a client gone for good), ``partition``, ``loss``, ``latency``,
  ``slow`` (the stream thread stalls; past ``max.poll.interval.ms`` the client leaves),
  ``failover``, ``config`` (a restart with its state directory wiped: every store restores
  from scratch), ``delay`` (``delay_request``) and ``zombie`` (a static client cut off or
  stalled while a second process with its ``group.instance.id`` joins:
  :func:`.timeline.add_zombie`, from a fourth random stream, as consumer campaigns do; in
  runs it gave no twin, the SyncGroup variants of :func:`.timeline.add_sync_zombie` at a late
  client's join, held then parked, each from a stream of its own).
"""

from __future__ import annotations

import random
from typing import Any

from scenarios.campaigns.chaos.coordinator_draw import draw_for_members
from scenarios.campaigns.chaos.generate import (
    ChaosConfig,
    ChaosSpec,
    _add_delays,
    _rng,
    draw_faults,
)
from scenarios.campaigns.chaos.timeline import (
    MemberTimeline,
    add_sync_zombie,
    add_zombie,
    draw_static_members,
    timeline_spec,
)

__all__ = ["generate_streams", "STREAMS_MAX_POLL_MS"]

#: ``max.poll.interval.ms`` of generated clients (Kafka Streams' default is 300000; a shorter
#: one lets a stream-thread stall outlast it within a short run).
STREAMS_MAX_POLL_MS = 60_000
#: ``session.timeout.ms`` of a client that sets none (the consumer's default, KIP-735).
STREAMS_SESSION_MS = 45_000
_RESTORE_RATES = (20_000, 50_000, 100_000)


def generate_streams(config: ChaosConfig, campaign_seed: int, index: int) -> ChaosSpec:
    """The Streams chaos scenario of run ``index`` of campaign ``campaign_seed``
    (deterministic: the same arguments give the same spec)."""
    rng = random.Random(f"groupsim-chaos-streams/{campaign_seed}/{index}")
    n = rng.randint(*config.members)
    names = [f"s{i}" for i in range(1, n + 1)]
    restore = rng.choice(_RESTORE_RATES)
    strategy = rng.choice(("none", "none", "min_traffic", "balance_subtopology"))
    tagged = strategy == "none" and rng.random() < 0.3
    app: dict[str, Any] = {
        "num.standby.replicas": rng.choice((0, 1, 1, 2)),
        "max.warmup.replicas": rng.randint(1, 4),
        # not 0: see docs/chaos.md "Streams campaigns" (a task moving under a growing
        # changelog flaps between two clients when only its running active counts as caught up)
        "acceptable.recovery.lag": rng.choice((1_000, 10_000, 100_000)),
        "probing.rebalance.interval.ms": rng.choice((60_000, 120_000, 300_000)),
        "max.poll.interval.ms": STREAMS_MAX_POLL_MS,
        "groupsim.restore.records.per.sec": restore,
    }
    if strategy != "none":
        app["rack.aware.assignment.strategy"] = strategy
    if tagged:
        app["rack.aware.assignment.tags"] = ["zone"]
    racks = [f"r{i}" for i in range(rng.randint(2, 3))]

    subtopologies: list[dict[str, Any]] = []
    for sub in range(rng.randint(1, 3)):
        partitions = rng.randint(1, 8)
        entry: dict[str, Any] = {"id": sub, "partitions": partitions}
        if sub > 0 and rng.random() < 0.35:
            entry["stateful"] = False
        else:
            records = rng.choice((0, 10_000, 100_000, 500_000))
            entry["changelog_records"] = records
            # growth far below the restore rate: a warm-up always catches up
            entry["changelog_rate"] = rng.choice((0, 10, 50)) if records else 0
            if strategy != "none":
                entry["changelog_racks"] = [[rng.choice(racks)] for _ in range(partitions)]
        if strategy != "none":
            entry["source_racks"] = [[rng.choice(racks)] for _ in range(partitions)]
        subtopologies.append(entry)
    tasks = [f"{s['id']}_{p}" for s in subtopologies for p in range(s["partitions"])]
    stateful = [
        f"{s['id']}_{p}"
        for s in subtopologies
        if s.get("stateful", True)
        for p in range(s["partitions"])
    ]

    clients: list[dict[str, Any]] = []
    late: list[str] = []
    for i, name in enumerate(names):
        own: dict[str, Any] = {}
        threads = rng.choice((1, 1, 2, 3))
        if threads > 1:
            own["num.stream.threads"] = threads
        if strategy != "none":
            own["client.rack"] = rng.choice(racks)
        if tagged:
            own["client.tag.zone"] = f"z{rng.randint(1, 3)}"
        client: dict[str, Any] = {"name": name}
        if own:
            client["config"] = own
        held = rng.sample(stateful, rng.randint(0, len(stateful))) if stateful else []
        if held:
            client["state"] = {
                t: rng.choice((0, 0, 500, 50_000)) for t in sorted(held, key=_task_order)
            }
        if i > 0 and rng.random() < 0.25:
            client["autostart"] = False
            late.append(name)
        clients.append(client)

    draw_static_members(_rng(campaign_seed, index, "streams-static"), clients)
    if tagged:
        _draw_second_tag(_rng(campaign_seed, index, "streams-tags"), app, clients)

    gen = _StreamsTimeline(rng, names)
    for name in late:
        gen.join(name, rng.randrange(config.duration_ms))
    times = draw_faults(gen, config, rng)
    if "delay" in config.faults:
        _add_delays(gen, config, _rng(campaign_seed, index, "streams-delay"), times)
    if "zombie" in config.faults:
        add_zombie(gen, clients, config, _rng(campaign_seed, index, "streams-zombie"))
        # no twin: perhaps a SyncGroup variant, held then parked, each from its own stream
        for variant, parked in (("streams-zombie-sync", False), ("streams-zombie-parked", True)):
            if len(clients) == n:
                sync_rng = _rng(campaign_seed, index, variant)
                add_sync_zombie(gen, clients, None, config, sync_rng, parked=parked)
    coordinator = draw_for_members(
        _rng(campaign_seed, index, "streams-coordinator"), clients, gen.gone, STREAMS_SESSION_MS
    )
    drawn = f"{n} clients, {len(tasks)} tasks ({len(stateful)} stateful)"
    body = {"config": app, "subtopologies": subtopologies, "clients": clients}
    return timeline_spec(
        gen,
        config,
        campaign_seed,
        index,
        "streams",
        "streams",
        n,
        drawn,
        streams=body,
        coordinator=coordinator,
    )


def _draw_second_tag(
    rng: random.Random, app: dict[str, Any], clients: list[dict[str, Any]]
) -> None:
    """KIP-708 with two tag keys, drawn from its own generator (``.../<index>/streams-tags``,
    so the other draws stay as they were): in half the tagged runs,
    ``rack.aware.assignment.tags`` is ``zone, cluster`` and every client gets a
    ``client.tag.cluster`` of two values, so a standby assignor that spreads over the first key
    only is seen (``ClientTagAwareStandbyTaskAssignor`` walks every key)."""
    if rng.random() >= 0.5:
        return
    app["rack.aware.assignment.tags"] = ["zone", "cluster"]
    for client in clients:
        client.setdefault("config", {})["client.tag.cluster"] = f"k{rng.randint(1, 2)}"


def _task_order(task: str) -> tuple[int, int]:
    sub, part = task.split("_")
    return int(sub), int(part)


class _StreamsTimeline(MemberTimeline):
    """The shared timeline (:class:`.timeline.MemberTimeline`) with Streams' words: steps name
    their ``client``, a gone client's ``leave`` says whether it sends LeaveGroup, and a
    ``config`` fault restarts the client with its state directory wiped."""

    def __init__(self, rng: random.Random, names: list[str]) -> None:
        super().__init__(
            rng, names, key="client", max_poll_ms=STREAMS_MAX_POLL_MS, leave_group_key="leave_group"
        )

    def config_change(self, step: dict[str, Any], member: str) -> None:
        step["wipe_state"] = True
