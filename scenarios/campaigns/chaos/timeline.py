"""The fault timeline the chaos generators of client-named kinds share (Kafka Streams,
plain consumers): which member a fault hits, when it may be stopped, and the fault steps of
the shared fault model (``crash``, ``leave``, ``partition``, ``loss``, ``latency``,
``slow``, ``failover``, ``config``, ``delay``, ``zombie``; docs/chaos.md), and KIP-345 static
membership, which the ``zombie`` fault needs. Each kind names its member with its own key
(``client`` for Streams, ``member`` for consumers) and decides what a ``config`` fault changes
(:meth:`MemberTimeline.config_change`).

Deterministic: every draw comes from the generator's ``random.Random``, in a fixed order.
"""

from __future__ import annotations

import itertools
import random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scenarios.campaigns.chaos.generate import ChaosConfig, ChaosSpec

__all__ = [
    "MemberTimeline",
    "add_sync_zombie",
    "add_zombie",
    "draw_static_members",
    "timeline_spec",
]


class MemberTimeline:
    """Draws steps a kind's loader accepts: a member is stopped only while it runs (a late
    member only after its ``join``), and at least half the members stay for good.

    Args:
        rng: the run's main generator.
        names: the members, in file order (a zombie twin may be appended later).
        key: the step key that names the member (``client`` or ``member``).
        max_poll_ms: the members' ``max.poll.interval.ms``: half the ``slow`` stalls outlast
            it (virtual ms).
        leave_group_key: the key of a ``leave`` step's LeaveGroup choice, if the kind has one.
    """

    def __init__(
        self,
        rng: random.Random,
        names: list[str],
        *,
        key: str,
        max_poll_ms: int,
        leave_group_key: str | None = None,
    ) -> None:
        self.rng = rng
        self.names = names
        self.key = key
        self.max_poll_ms = max_poll_ms
        self.leave_group_key = leave_group_key
        self.up_at = dict.fromkeys(names, 0)
        self.gone: set[str] = set()
        self.steps: list[dict[str, Any]] = []
        self.kinds: list[str] = []

    def add(self, kind: str, step: dict[str, Any]) -> None:
        self.steps.append(step)
        self.kinds.append(kind)

    def sort(self) -> None:
        order = sorted(range(len(self.steps)), key=lambda i: self.steps[i]["at_ms"])
        self.steps = [self.steps[i] for i in order]
        self.kinds = [self.kinds[i] for i in order]

    def step(self, at_ms: int, action: str, member: str) -> dict[str, Any]:
        """A step on ``member`` named with this kind's key."""
        return {"at_ms": at_ms, "action": action, self.key: member}

    def join(self, name: str, at_ms: int) -> None:
        self.up_at[name] = at_ms
        self.add("join", self.step(at_ms, "join", name))

    def running(self, at_ms: int) -> list[str]:
        return [m for m in self.names if m not in self.gone and self.up_at[m] < at_ms]

    def may_remove_for_good(self, name: str) -> bool:
        staying = [m for m in self.names if m not in self.gone and m != name]
        return len(staying) >= max(1, (len(self.names) + 1) // 2)

    def config_change(self, step: dict[str, Any], member: str) -> None:
        """What a ``config`` fault's restart of ``member`` changes (in place on ``step``);
        the kind's subclass says (Streams: a wiped state directory; consumers: another
        ``partition.assignment.strategy``)."""

    def fault(self, kind: str, at_ms: int) -> None:
        """One fault of ``kind`` at ``at_ms`` on a running member (none when none runs)."""
        rng = self.rng
        running = self.running(at_ms)
        if not running:
            return
        member = rng.choice(running)
        if kind in ("crash", "leave", "config"):
            if kind == "leave" and rng.random() < 0.2 and self.may_remove_for_good(member):
                self.gone.add(member)
                step = self.step(at_ms, "leave", member)
                if self.leave_group_key is not None:
                    step[self.leave_group_key] = rng.random() < 0.5
                self.add(kind, step)
                return
            down = rng.choice((0, rng.randint(1_000, 120_000)))
            self.up_at[member] = at_ms + down
            step = {**self.step(at_ms, "restart", member), "down_ms": down}
            step["clean"] = kind == "leave"
            if kind == "config":
                self.config_change(step, member)
            self.add(kind, step)
        elif kind == "partition":
            duration = rng.randint(1_000, 120_000)
            self.add(kind, {**self.step(at_ms, "partition", member), "duration_ms": duration})
        elif kind == "loss":
            step = self.step(at_ms, "loss", member)
            step["direction"] = rng.choice(("to_coordinator", "from_coordinator", "both"))
            step["probability"] = round(rng.uniform(0.05, 1.0), 2)
            step["duration_ms"] = rng.randint(1_000, 60_000)
            self.add(kind, step)
        elif kind == "latency":
            step = {**self.step(at_ms, "latency", member), "extra_ms": rng.randint(1, 5_000)}
            self.add(kind, {**step, "duration_ms": rng.randint(1_000, 60_000)})
        elif kind == "slow":
            # half of the stalls outlast max.poll.interval.ms: the member leaves the group
            stall = rng.choice(
                (rng.randint(100, 30_000), rng.randint(self.max_poll_ms + 1, 90_000))
            )
            self.add(kind, {**self.step(at_ms, "slow", member), "stall_ms": stall})
        elif kind == "failover":
            down = rng.choice((0, rng.randint(1, 10_000)))
            self.add(kind, {"at_ms": at_ms, "action": "coordinator_failover", "down_ms": down})

    def delay_request(self, rng: random.Random, at_ms: int) -> None:
        """A ``delay_request`` (see :meth:`generate._Timeline.delay_request`)."""
        delay = rng.choice(
            (rng.randint(1, 10_000), rng.randint(10_001, 40_000), rng.randint(40_001, 70_000))
        )
        step = self.step(at_ms, "delay_request", rng.choice(self.names))
        step["request"] = rng.choice(("heartbeat", "sync_group", "join_group", "any"))
        self.add("delay", {**step, "delay_ms": delay, "duration_ms": rng.randint(1_000, 30_000)})


def draw_static_members(rng: random.Random, members: list[dict[str, Any]]) -> None:
    """KIP-345: in two runs of five, some members set ``group.instance.id``
    (``<name>-static``, each with probability 3/4) and, in two of those three, a longer
    ``session.timeout.ms`` (120 or 300 s), in place on each entry's ``config``. Drawn from a
    stream of their own, so every other draw of a run is the same as without static
    members."""
    if rng.random() >= 0.4:
        return
    # static members are run with a session timeout that outlasts a restart (KIP-345's
    # advice); above max.poll.interval.ms a member that misses a join phase stays in the group
    session = rng.choice((45_000, 120_000, 300_000))
    for entry in members:
        if rng.random() < 0.75:
            own = entry.setdefault("config", {})
            own["group.instance.id"] = f"{entry['name']}-static"
            if session != 45_000:
                own["session.timeout.ms"] = session


def add_zombie(
    gen: MemberTimeline, members: list[dict[str, Any]], config: ChaosConfig, rng: random.Random
) -> None:
    """The ``zombie`` fault (KIP-345), drawn from its own generator (the kind's
    ``.../<index>/<kind>-zombie``, after every other draw): in half the runs with static
    members, one static member running at a random time is cut off (a ``partition`` of
    5–120 s) or stalled (a ``slow`` poll loop or stream thread, 5–90 s; its heartbeats go on),
    and 1–10 s later a second process ``<name>n`` with the same ``group.instance.id`` (a copy
    of the member's file ``config``; for Streams an empty state directory) joins — the
    Kubernetes restart that overlaps its predecessor. The twin is appended to ``members``
    (``autostart = false``) and to ``gen.names``. The old process keeps running: the
    coordinator must fence it (FENCED_INSTANCE_ID) and it must own no work afterwards
    (``zombie_owns_work``)."""
    static = {
        m["name"]: m for m in members if m.get("config", {}).get("group.instance.id") is not None
    }
    if not static or rng.random() >= 0.5:
        return
    at_ms = rng.randrange(config.duration_ms)
    running = [m for m in gen.running(at_ms) if m in static]
    if not running:
        return
    old = rng.choice(running)
    if rng.random() < 0.5:
        cut = {**gen.step(at_ms, "partition", old), "duration_ms": rng.randint(5_000, 120_000)}
    else:
        cut = {**gen.step(at_ms, "slow", old), "stall_ms": rng.randint(5_000, 90_000)}
    gen.add("zombie", cut)
    twin = f"{old}n"
    members.append({"name": twin, "config": dict(static[old]["config"]), "autostart": False})
    gen.names.append(twin)
    joined = at_ms + rng.randint(1_000, 10_000)
    gen.up_at[twin] = joined
    gen.add("zombie", gen.step(joined, "join", twin))


def add_sync_zombie(
    gen: MemberTimeline,
    members: list[dict[str, Any]],
    topics: list[str] | None,
    config: ChaosConfig,
    rng: random.Random,
    *,
    parked: bool = False,
) -> None:
    """The ``zombie`` fault's SyncGroup variants (KIP-345), for consumers and Kafka Streams
    (which rides on the consumer protocol), drawn from a generator of their own (the kind's
    ``.../<index>/<kind>-zombie-sync``, or ``-zombie-parked`` with ``parked``), in half the
    runs with static members that no other zombie draw gave a twin. A rebalance starts at a
    time R: for consumers (``topics`` given, two or more) a random time at which a static
    consumer running then subscribes to another subset of the topics (a ``subscribe`` step: its
    JoinGroup with new metadata, sent at R, rebalances the group); for Streams (``topics`` is
    ``None``: no step changes a client's metadata) the ``join`` of a late client (a scale-out,
    drawn by the main generator; none, no variant), R, while a static client runs. Then, with
    d = 8–20 s (within ``request.timeout.ms``) and 4 s to d − 1 s after R, a second process
    ``<name>n`` with the static member's ``group.instance.id`` joins:

    * held (``parked`` false): the static member's SyncGroup is held d (``delay_request``
      steps): for consumers every request it sends in (R, R + d + 10 s] (``any`` from
      R + 1 ms: its SyncGroup, then its Heartbeats); for Streams its ``sync_group`` from
      R + 1 ms, then ``any`` from R + 3,001 ms (its Heartbeats after the one that told it to
      rejoin, ``heartbeat.interval.ms`` 3 s). The twin takes the instance over after the old
      process heard its JoinGroup answer and before its SyncGroup arrives, which the
      coordinator answers FENCED_INSTANCE_ID (``GroupMetadataManager#classicGroupSync`` →
      ``ClassicGroup#validateMember``).
    * parked: every other member has its ``sync_group`` requests held d from R to
      R + d + 10 s, so the leader's assignment comes late and the old process's SyncGroup
      (a follower's) waits at the coordinator in CompletingRebalance when the twin's JoinGroup
      arrives: ``ClassicGroup#replaceStaticMember`` answers it FENCED_INSTANCE_ID before
      ``updateStaticMemberThenRebalanceOrCompleteJoin`` starts a new join phase (a leader's
      is not parked: no fenced SyncGroup then).

    Both are judged by ``sync_not_fenced``. Every step is counted as ``zombie``."""
    static = {
        m["name"]: m for m in members if m.get("config", {}).get("group.instance.id") is not None
    }
    if not static or (topics is not None and len(topics) < 2) or rng.random() >= 0.5:
        return
    if topics is not None:
        at_ms = rng.randrange(config.duration_ms)
    else:
        joins = sorted(int(s["at_ms"]) for s in gen.steps if s["action"] == "join")
        if not joins:
            return
        at_ms = rng.choice(joins)
    delay = rng.randint(8_000, 20_000)
    window = delay + 10_000
    running = [m for m in gen.running(at_ms) if m in static and m in gen.running(at_ms + window)]
    if not running:
        return
    old = rng.choice(running)
    # every other member, stopped or not (a hold on a stopped one holds nothing): the draws'
    # ``up_at`` is not exact around restarts drawn out of time order (a whole-group outage)
    others = [m for m in gen.names if m != old]
    if parked and not others:
        return  # the static member would lead: its SyncGroup is never parked
    if topics is not None:
        _subscribe_elsewhere(gen, old, topics, at_ms, rng)
    if parked:
        for other in others:
            held = {**gen.step(at_ms, "delay_request", other), "request": "sync_group"}
            gen.add("zombie", {**held, "delay_ms": delay, "duration_ms": window})
    elif topics is not None:
        held = {**gen.step(at_ms + 1, "delay_request", old), "request": "any"}
        gen.add("zombie", {**held, "delay_ms": delay, "duration_ms": window})
    else:
        # one delay_request per member at a time: the second replaces the first
        held = {**gen.step(at_ms + 1, "delay_request", old), "request": "sync_group"}
        gen.add("zombie", {**held, "delay_ms": delay, "duration_ms": 3_000})
        held = {**gen.step(at_ms + 3_001, "delay_request", old), "request": "any"}
        gen.add("zombie", {**held, "delay_ms": delay, "duration_ms": window - 3_000})
    twin = f"{old}n"
    members.append({"name": twin, "config": dict(static[old]["config"]), "autostart": False})
    gen.names.append(twin)
    joined = at_ms + rng.randint(4_000, delay - 1_000)
    gen.up_at[twin] = joined
    gen.add("zombie", gen.step(joined, "join", twin))


def _subscribe_elsewhere(
    gen: MemberTimeline, old: str, topics: list[str], at_ms: int, rng: random.Random
) -> None:
    """A ``subscribe`` step of consumer ``old`` at ``at_ms`` to a random subset of ``topics``
    other than its current one (its last ``subscribe`` before ``at_ms``, else all)."""
    last = [
        s["topics"]
        for s in gen.steps
        if s["action"] == "subscribe" and s.get(gen.key) == old and s["at_ms"] < at_ms
    ]
    current = last[-1] if last else list(topics)
    choices = [
        sorted(c)
        for k in range(1, len(topics) + 1)
        for c in itertools.combinations(topics, k)
        if sorted(c) != sorted(current)
    ]
    gen.add("zombie", {**gen.step(at_ms, "subscribe", old), "topics": rng.choice(choices)})


def timeline_spec(
    gen: MemberTimeline,
    config: ChaosConfig,
    campaign_seed: int,
    index: int,
    group_kind: str,
    protocol: str,
    members: int,
    drawn: str,
    *,
    streams: dict[str, Any] | None = None,
    consumer: dict[str, Any] | None = None,
    coordinator: dict[str, Any] | None = None,
) -> ChaosSpec:
    """The :class:`ChaosSpec` of run ``index`` of a client-named kind's campaign: ``gen``'s
    steps in time order, the simulation seed and the network jitter (0, 0, 1 or 5 ms) drawn
    from its generator in that order, the scenario file's body (``streams`` or ``consumer``),
    and a description that says what was ``drawn`` (e.g. ``"4 clients, 12 tasks (3
    stateful)"``); ``coordinator`` is the ``[coordinator]`` table, if one was drawn."""
    from scenarios.campaigns.chaos.generate import ChaosSpec

    gen.sort()
    return ChaosSpec(
        name=f"chaos-{group_kind}-{campaign_seed}-{index}",
        seed=gen.rng.getrandbits(32),
        campaign_seed=campaign_seed,
        index=index,
        protocol=protocol,
        group_kind=group_kind,
        members=members,
        cluster_config={},
        worker_configs={},
        jitter_ms=gen.rng.choice((0, 0, 1, 5)),
        connectors=[],
        steps=gen.steps,
        kinds=gen.kinds,
        duration_ms=config.duration_ms,
        description=(
            f"groupsim chaos --kind {group_kind}: campaign seed {campaign_seed}, run {index}: "
            f"{drawn}, {len(gen.steps)} steps in {config.duration_ms} ms"
            + (f", [coordinator] {coordinator}" if coordinator else "")
        ),
        streams=streams,
        consumer=consumer,
        coordinator=coordinator or None,
    )
