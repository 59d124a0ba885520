"""Connect library scenarios, real and simulated, side by side: the table of docs/real-kafka.md.

``python -m tests.kafka_oracle.compare [--write docs/real-kafka.md] [SCENARIO ...]`` runs, for
each Connect library scenario Kafka itself can run with this script (see :data:`RUNNABLE`):

* a **real** run — a fresh single-node KRaft broker and real Connect workers
  (``ConnectDistributed``, the Kafka version of the harness's pom) recorded through
  ``groupsim record``, with the scenario's workers, protocol and connectors (the harness's
  ``IdleSourceConnector``); the scenario's timeline actions are applied in order, each once the
  cluster is balanced: ``join`` starts a worker, ``leave`` stops it (Connect leaves the group),
  ``restart``/``rolling_restart`` stop a worker cleanly (SIGTERM) or hard (``clean = false``:
  SIGKILL of its process) and start it again with the step's ``connect.protocol``; a
  ``join`` whose ``config`` sets an older ``connect.protocol`` starts a worker of an older
  Connect release (:func:`worker_release`: 2.3.1, whose newest protocol is compatible, or
  2.2.2, eager only; its class path from Maven, ``releases.dependency_classpath``), so
  ``mixed-versions`` runs genuinely old workers against the 4.x broker;
  ``replay --conform`` (coordinator and leaders) judges the trace;
* a **groupsim** run of the same scenario file with the same setting changes and the real run's
  step times (see :func:`simulated_text`);

and compares what happened from the first timeline action on (:class:`Measures`). Both sides
are measured by the same code from the same kind of data: the leaders' assignments and every
member's SyncGroup answer (decoded SyncGroup bytes on the real side, the ``assignor`` and
``assignment`` records of the event log on groupsim's).

Times are scaled down: ``scheduled.rebalance.max.delay.ms`` is scaled by
``DELAY_MS / KAFKA_DELAY_MS`` in both runs (:func:`delay_ms`: Kafka's default, 300 s, which
would make one run last minutes, becomes :data:`DELAY_MS`; a scenario's own delay is scaled by
the same factor), a step's ``down_ms`` too. A real worker then needs seconds more to start (a
JVM), so the simulation takes each step's time and down time from the real run: a restarted
worker is down in groupsim as long as the real one was (from its LeaveGroup, or its SIGKILL,
to the new process's first JoinGroup), and a killed one crashes at the real one's heartbeat
phase (:func:`place_crashes`).

``streams/<name>`` scenarios are run by :mod:`tests.kafka_oracle.compare_streams` (real Kafka
Streams applications; a client of an older release, as in a rolling upgrade, runs that
release's jars: :mod:`tests.kafka_oracle.releases`) and get a table of their own.

Not run (each named in the table, :data:`NOT_RUN`): KIP-987 static assignments (not in Kafka
4.0–4.4).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from coordinator.config import CoordinatorConfig
from protocol.connect_codec import decode_assignment
from protocol.connect_json import assignment_to_json
from scenarios.check.log_check import check_log
from scenarios.input.library import loads_any
from scenarios.record.conform import conform_coordinator, read_exchanges
from scenarios.record.frames import decode_response
from scenarios.record.leaders import conform_leaders, read_configs
from scenarios.serve import wire
from scenarios.sim.runner import simulate
from tests.kafka_oracle import compare_streams
from tests.kafka_oracle.cluster import (
    RecorderThread,
    Worker,
    connect_worker,
    kafka_broker,
    rest_call,
    write_connect_configs,
)
from tests.kafka_oracle.oracle import _pinned_version, requested_version

LIBRARY = Path(__file__).resolve().parents[2] / "scenarios" / "library"
#: ``scheduled.rebalance.max.delay.ms`` of both runs (scaled down from Kafka's 300 000).
DELAY_MS = 20_000
#: Kafka's (and the library's) ``scheduled.rebalance.max.delay.ms``: a step's ``down_ms`` is
#: scaled by ``DELAY_MS / KAFKA_DELAY_MS`` on the real cluster.
KAFKA_DELAY_MS = 300_000
#: The broker's group settings (given to the replay too).
BROKER = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
#: Scenarios this script runs.
RUNNABLE = (
    "scale-out",
    "worker-leaves-for-good",
    "rolling-upgrade-eager-to-sessioned",
    "worker-bounce-within-delay",
    "downgrade-sessioned-to-eager",
    "connect-system-test-bounce",
    "mixed-versions",
    "streams/kip-441-scale-out",
    "streams/kip-441-scale-in-in-sync",
    "streams/client-crash-with-standbys",
    "streams/kip-441-scale-in-lagging",
    "streams/kip-708-nine-nodes",
    "streams/rack-aware-min-traffic",
    "streams/kip-441-scale-out-with-faults",
    "streams/version-probing-rolling-upgrade",
)
_NO_KIP_987 = (
    "KIP-987 static assignments are in no Kafka release up to 4.4.0 (its "
    "ConnectProtocolCompatibility has eager, compatible and sessioned only)"
)
#: Library scenarios not run, and why.
NOT_RUN = {
    "kip-987-test-plan": _NO_KIP_987,
    "rolling-upgrade-sessioned-to-static": _NO_KIP_987,
}
#: Connect's ``heartbeat.interval.ms`` (its default; the real workers and the library run it).
HEARTBEAT_INTERVAL_MS = 3_000
#: Longest wait for a balanced cluster after one step (s).
STEP_TIMEOUT_S = 240


@dataclass(frozen=True)
class Round:
    """One leader assignment: when (ms), its generation, and per worker name the decoded
    assignment (``connectors``, ``tasks``, ``revoked_connectors``, ``revoked_tasks``)."""

    t_ms: int
    generation: int
    assigned: dict[str, dict[str, list[str]]]


@dataclass(frozen=True)
class Measures:
    """What happened from the first timeline action on."""

    rebalances: int
    tasks_moved: int
    tasks_revoked: int
    workers_at_end: dict[str, int]
    #: Task downtime (task-ms): see :func:`holdings`.
    downtime_ms: int = 0


_UUID_TAIL = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def worker_name(member_id: str) -> str:
    """``w1`` for ``w1-<uuid>`` and ``old-eager`` for ``old-eager-<uuid>`` (a Connect member id
    is its client id, a dash and a UUID, ``ClassicGroup#generateMemberId``); a client id
    without one is returned as it is."""
    return _UUID_TAIL.sub("", member_id)


def measure(
    rounds: Iterable[Round], start_ms: int, end_ms: int, downtime_ms: int, revocations: int
) -> Measures:
    """Rebalances and tasks moved between ``start_ms`` and ``end_ms``, following task ownership
    through every leader round (Connect's incremental assignments are deltas: a worker keeps
    what it has unless revoked; an eager one is whole); downtime and revocations are
    :func:`holdings`' (from every member's SyncGroup answer, so that eager revocations count)."""
    owner: dict[str, str] = {}
    before: dict[str, str] | None = None
    rebalances = 0
    for r in sorted(rounds, key=lambda r: r.t_ms):
        if r.t_ms > end_ms:
            break
        if r.t_ms >= start_ms and before is None:
            before = dict(owner)
        counted = r.t_ms >= start_ms
        for name, a in r.assigned.items():
            for task in a.get("revoked_tasks", []):
                if owner.get(task) == name:
                    del owner[task]
            for task in a.get("tasks", []):
                owner[task] = name
        rebalances += counted
    before = dict(owner) if before is None else before
    moved = sum(1 for task, name in before.items() if owner.get(task, name) != name)
    at_end: dict[str, int] = {}
    for name in owner.values():
        at_end[name] = at_end.get(name, 0) + 1
    return Measures(rebalances, moved, revocations, dict(sorted(at_end.items())), downtime_ms)


def real_rounds(trace: Path) -> tuple[list[Round], int]:
    """The leaders' assignments of a recorded trace (SyncGroups with assignments answered
    without error) and the trace's first wall-clock ms (its times are relative to it)."""
    first = json.loads(trace.open().readline())["t_ms"]
    rounds = []
    for ex in read_exchanges(trace):
        if ex.api_key != 14 or ex.response_raw is None:
            continue
        request = wire.decode_request(ex.request_raw)
        _, answer = decode_response(ex.response_raw, 14, ex.version)
        if not request.body.assignments or answer is None or int(answer.error_code) != 0:
            continue
        rounds.append(
            Round(
                ex.t_ms,
                int(request.body.generation_id),
                {
                    worker_name(a.member_id): assignment_to_json(decode_assignment(a.assignment))
                    for a in request.body.assignments
                },
            )
        )
    return rounds, first


def sim_rounds(records: list[dict[str, Any]]) -> list[Round]:
    """The ``assignor`` records of a groupsim event log as :class:`Round` s."""
    rounds = []
    for rec in records:
        if rec.get("kind") != "assignor":
            continue
        assigned: dict[str, dict[str, list[str]]] = {}
        for member, a in rec.get("assigned", {}).items():
            assigned.setdefault(worker_name(member), {}).update(a)
        for member, a in rec.get("revoked", {}).items():
            entry = assigned.setdefault(worker_name(member), {})
            entry["revoked_connectors"] = a.get("connectors", [])
            entry["revoked_tasks"] = a.get("tasks", [])
        rounds.append(Round(int(rec["t_ms"]), int(rec["generation"]), assigned))
    return rounds


_DELAY_LINE = re.compile(r'(?m)^"scheduled\.rebalance\.max\.delay\.ms" = (\d+)$')


def delay_ms(name: str) -> int:
    """The scenario's ``scheduled.rebalance.max.delay.ms`` scaled by
    ``DELAY_MS / KAFKA_DELAY_MS`` (Kafka's default, 300 s, becomes :data:`DELAY_MS`; the 60 s
    of ``connect-system-test-bounce`` becomes 4 s): the delay of both runs."""
    found = _DELAY_LINE.search((LIBRARY / f"{name}.toml").read_text())
    own = int(found.group(1)) if found else KAFKA_DELAY_MS
    return own * DELAY_MS // KAFKA_DELAY_MS


def scenario_text(name: str) -> str:
    """The library file with ``scheduled.rebalance.max.delay.ms`` set to :func:`delay_ms`."""
    text = (LIBRARY / f"{name}.toml").read_text()
    delay = delay_ms(name)
    if _DELAY_LINE.search(text):
        return _DELAY_LINE.sub(f'"scheduled.rebalance.max.delay.ms" = {delay}', text, count=1)
    return re.sub(
        r"(\[cluster\.config\]\n)",
        rf'\1"scheduled.rebalance.max.delay.ms" = {delay}\n',
        text,
        count=1,
    )


@dataclass(frozen=True)
class Step:
    """One timeline action of a scenario, as the real run applies it.

    ``action`` is ``join``, ``leave`` or ``restart`` (a ``rolling_restart`` is one restart per
    worker); ``down_ms`` is the scenario's (unscaled); ``config`` the worker settings the step
    changes (``connect.protocol``); ``at_ms`` the scenario's time of the step.
    """

    action: str
    member: str
    at_ms: int
    clean: bool = True
    down_ms: int = 0
    config: tuple[tuple[str, Any], ...] = ()


def timeline_steps(raw: dict[str, Any]) -> list[Step]:
    """The scenario's timeline as :class:`Step` s (``phase`` labels dropped; a rolling restart
    without ``members`` restarts every running worker in name order, as the loader does).

    Raises:
        ValueError: an action this script cannot apply on a real cluster.
    """
    running = [f"w{i + 1}" for i in range(int(raw["cluster"]["size"]))]
    steps: list[Step] = []
    for item in raw.get("timeline", []):
        action, at = item["action"], int(item["at_ms"])
        config = tuple(sorted(item.get("config", {}).items()))
        if action == "phase":
            continue
        if action == "join":
            running.append(item["member"])
            steps.append(Step("join", item["member"], at, config=config))
        elif action == "leave":
            running.remove(item["member"])
            steps.append(Step("leave", item["member"], at))
        elif action in ("restart", "rolling_restart"):
            members = [item["member"]] if action == "restart" else item.get("members") or running
            for k, member in enumerate(list(members)):
                steps.append(
                    Step(
                        "restart",
                        member,
                        at + k * int(item.get("interval_ms", 0)),
                        bool(item.get("clean", True)),
                        int(item.get("down_ms", 0)),
                        config,
                    )
                )
        else:
            raise ValueError(f"timeline action {action!r} is not run on a real cluster")
    return steps


#: The Connect release a worker of each older protocol runs: the last release whose newest
#: ``connect.protocol`` it is (``compatible`` came with KIP-415 in 2.3, ``sessioned`` with
#: KIP-507 in 2.4; 2.2 knows eager only). Both still talk to a 4.x broker: their clients use
#: no request version KIP-896 removed (those older than Kafka 2.1's).
OLD_RELEASES = {"eager": "2.2.2", "compatible": "2.3.1"}


def worker_release(step: Step) -> str | None:
    """The Kafka release of the worker a step starts: a ``join`` whose config sets an older
    ``connect.protocol`` (:data:`OLD_RELEASES`) starts a worker of that older release, an old
    worker joining the group; anything else (a restart with a new protocol is the same worker
    reconfigured, as in a rolling upgrade) runs the harness's Kafka (None)."""
    if step.action != "join":
        return None
    return OLD_RELEASES.get(str(dict(step.config).get("connect.protocol")))


@dataclass(frozen=True)
class Applied:
    """A step as the real run applied it, in ms of the trace's clock: ``at_ms`` when it began
    (a joiner's first JoinGroup; a leaver's LeaveGroup; a restarted worker's LeaveGroup or its
    SIGKILL) and, for a restart, ``down_ms`` until the new process's first JoinGroup.

    ``phase_ms`` (a hard restart): from the worker's last request to the coordinator
    (JoinGroup, SyncGroup or Heartbeat: each restarts its session, ``ClassicGroup``'s heartbeat
    expiration) to its SIGKILL, None when unknown. ``shift_ms``: how much earlier than
    ``at_ms`` the simulated crash is placed so that it happens at that phase of the simulated
    worker's heartbeats (:func:`place_crashes`); it is down as long as the real one, so its
    return comes as long after its crash (and its session's expiry) as the real one's did."""

    step: Step
    at_ms: int
    down_ms: int = 0
    phase_ms: int | None = None
    shift_ms: int = 0


#: How far apart (virtual ms) the simulated workers start when they follow the real order of
#: joins: more than a JoinGroup's two round trips' jitter, so the order holds.
JOIN_SPACING_MS = 50


def simulated_text(
    name: str, applied: list[Applied] | None = None, order: RealOrder | None = None
) -> str:
    """The scenario file groupsim runs: :func:`scenario_text`; when the real run's steps are
    given, its timeline rewritten with their times: the first step at the scenario's first
    step time, every other one as long after it as in the real run, each restart down as long as
    the real worker was; when its :class:`RealOrder` is given, a ``[cluster] size = N`` that
    starts every worker at 0 (the network's jitter then picks the first to join, and so the
    first leader) becomes workers started :data:`JOIN_SPACING_MS` apart in the real order."""
    text = scenario_text(name)
    size = re.search(r"(?m)^size = (\d+)$", text)
    if order and order.first_joins and size and "[[cluster.workers]]" not in text:
        names = [f"w{i}" for i in range(1, int(size.group(1)) + 1)]
        ranked = [w for w in order.first_joins if w in names]
        ranked += [w for w in names if w not in ranked]
        entries = "".join(
            f'[[cluster.workers]]\nname = "{w}"\nstart_ms = {k * JOIN_SPACING_MS}\n\n'
            for k, w in enumerate(sorted(names, key=ranked.index))
        )
        # after the [cluster] tables, before the next table
        after = text.index("[cluster]")
        nxt = re.compile(r"(?m)^\[\[?(?!cluster[.\]])").search(text, after + 1)
        cut = len(text) if nxt is None else nxt.start()
        text = text[:cut] + entries + text[cut:]
    if not applied:
        return text
    raw = _toml(text)
    base = timeline_steps(raw)[0].at_ms
    origin = applied[0].at_ms
    blocks = []
    for a in applied:
        lines = [
            "[[timeline]]",
            f"at_ms = {base + a.at_ms - origin - a.shift_ms}",
            f'action = "{a.step.action}"',
            f'member = "{a.step.member}"',
        ]
        if a.step.action == "restart":
            lines += [f"down_ms = {max(a.down_ms, 0)}", f"clean = {str(a.step.clean).lower()}"]
        if a.step.config:
            inner = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in a.step.config)
            lines.append(f"config = {{ {inner} }}")
        blocks.append("\n".join(lines))
    start = text.index("[[timeline]]")
    end = text.find("\n[expect]", start)
    rest = "" if end < 0 else text[end:]
    return text[:start] + "\n\n".join(blocks) + "\n" + rest


@dataclass(frozen=True)
class Event:
    """What one worker did, for :func:`holdings`: ``join`` (a JoinGroup request), ``sync`` (a
    SyncGroup answered without error: the protocol of the generation, the tasks assigned and
    revoked), ``gone`` (it left the group or its process died)."""

    t_ms: int
    worker: str
    kind: str
    protocol: str | None = None
    tasks: tuple[str, ...] = ()
    revoked: tuple[str, ...] = ()


#: Connect's name of the eager protocol in JoinGroup/SyncGroup (``ConnectProtocolCompatibility``).
EAGER = "default"


def holdings(events: Iterable[Event], start_ms: int, end_ms: int) -> tuple[int, int]:
    """``(task downtime in task-ms, revocations)`` between ``start_ms`` and ``end_ms``.

    Each worker keeps Kafka's ``WorkerCoordinator#assignmentSnapshot``: a SyncGroup answer of
    an eager generation replaces it; one of an incremental generation removes the revoked tasks
    and adds the assigned ones (``onJoinComplete``). A worker runs its snapshot from each
    SyncGroup answer until its next JoinGroup when its generation was eager (``onJoinPrepare``
    revokes everything under EAGER but keeps the snapshot, so a worker's first incremental
    answer after an eager generation restarts what it had), or until it is gone (both cleared).
    Task downtime is the sum over tasks of the time no worker runs it; a revocation is a task a
    running worker stops while it stays in the group (eager join or revoked list), counted per
    worker and task.
    """
    ordered = sorted(events, key=lambda e: e.t_ms)
    tasks = {t for e in ordered if e.kind == "sync" for t in e.tasks}
    snapshot: dict[str, set[str]] = {}
    running: dict[str, set[str]] = {}
    protocol: dict[str, str] = {}
    downtime = revocations = 0
    last = start_ms
    for e in [*ordered, Event(end_ms, "", "end")]:
        t = min(max(e.t_ms, start_ms), end_ms)
        if t > last:
            owned = set().union(*running.values()) if running else set()
            downtime += (t - last) * len(tasks - owned)
            last = t
        counted = start_ms <= e.t_ms <= end_ms
        mine = running.setdefault(e.worker, set())
        known = snapshot.setdefault(e.worker, set())
        if e.kind == "join" and protocol.get(e.worker) == EAGER:
            revocations += len(mine) if counted else 0
            mine.clear()
        elif e.kind == "sync":
            if e.protocol == EAGER:
                known.clear()
            revocations += len(mine & set(e.revoked)) if counted else 0
            known.difference_update(e.revoked)
            known.update(e.tasks)
            running[e.worker] = set(known)
            protocol[e.worker] = e.protocol or ""
        elif e.kind == "gone":
            mine.clear()
            known.clear()
            protocol.pop(e.worker, None)
    return downtime, revocations


_KEYS = ("connectors", "tasks", "revoked_connectors", "revoked_tasks")


def _shape(r: Round) -> list[tuple[int, ...]]:
    """A round's shape: per worker given or revoked anything, how many connectors and tasks it
    was assigned and revoked, sorted (which worker is which is left out: see
    :func:`equal_rounds`)."""
    out = [tuple(len(a.get(k, [])) for k in _KEYS) for a in r.assigned.values()]
    return sorted(n for n in out if any(n))


def equal_rounds(
    real: list[Round], sim: list[Round], start_ms: tuple[int, int], real_end_ms: int | None = None
) -> int:
    """How many of the leader rounds from the first step on (up to ``real_end_ms``) have the
    same shape on both sides, the k-th real round against the k-th simulated one: as many
    workers assigned and revoked as many connectors and tasks. Neither which task nor which
    worker is compared: the incremental assignor allocates in member-id order (which worker
    loses a connector, which tasks it keeps), and Kafka draws member ids at random
    (``ClassicGroup#generateMemberId``); the conformance check compares every name, given the
    real member ids."""
    end = real_end_ms if real_end_ms is not None else max((r.t_ms for r in real), default=0)
    ours = [r for r in sorted(real, key=lambda r: r.t_ms) if start_ms[0] <= r.t_ms <= end]
    theirs = [r for r in sorted(sim, key=lambda r: r.t_ms) if r.t_ms >= start_ms[1]]
    return sum(1 for a, b in zip(ours, theirs, strict=False) if _shape(a) == _shape(b))


def sim_events(records: list[dict[str, Any]]) -> list[Event]:
    """:class:`Event` s of a groupsim event log (``join_group_request``, ``assignment``,
    ``member_stop``/``member_crash``)."""
    out = []
    for rec in records:
        kind, t = rec.get("kind"), int(rec.get("t_ms", 0))
        if kind == "join_group_request":
            out.append(Event(t, rec["member"], "join"))
        elif kind == "assignment" and int(rec.get("error", 0)) == 0:
            out.append(
                Event(
                    t,
                    rec["member"],
                    "sync",
                    rec.get("protocol"),
                    tuple(rec.get("tasks", [])),
                    tuple(rec.get("revoked_tasks", [])),
                )
            )
        elif kind in ("member_stop", "member_crash"):
            out.append(Event(t, rec["member"], "gone"))
    return out


def generation_protocols(exchanges: Iterable[Any]) -> dict[int, str]:
    """The protocol each generation of a recorded trace chose, by generation id, from the
    JoinGroup answers without error (a JoinGroup answer names it in every version; a SyncGroup
    answer only from v5 on, KIP-559, and workers of Kafka 2.x send v3 or older)."""
    out: dict[int, str] = {}
    for ex in exchanges:
        if ex.api_key != 11 or ex.response_raw is None:
            continue
        _, answer = decode_response(ex.response_raw, 11, ex.version)
        if answer is not None and int(answer.error_code) == 0 and answer.protocol_name:
            out[int(answer.generation_id)] = str(answer.protocol_name)
    return out


def real_events(trace: Path, kills: Iterable[tuple[int, str]] = ()) -> list[Event]:
    """:class:`Event` s of a recorded trace (times relative to its first line, as
    :func:`real_rounds`): JoinGroup and LeaveGroup requests, SyncGroup answers without error,
    and the SIGKILLs the run dealt (``(wall-clock ms, worker)``)."""
    first = json.loads(trace.open().readline())["t_ms"]
    out = [Event(t - first, w, "gone") for t, w in kills]
    exchanges = read_exchanges(trace)
    protocols = generation_protocols(exchanges)
    for ex in exchanges:
        if ex.api_key not in (11, 13, 14):
            continue
        request = wire.decode_request(ex.request_raw)
        worker = worker_name(request.client_id)
        if ex.api_key == 11:
            out.append(Event(ex.t_ms, worker, "join"))
        elif ex.api_key == 13:
            out.append(Event(ex.t_ms, worker, "gone"))
        elif ex.response_raw is not None and ex.response_t_ms is not None:
            _, answer = decode_response(ex.response_raw, 14, ex.version)
            if answer is None or int(answer.error_code) != 0 or not answer.assignment:
                continue
            a = assignment_to_json(decode_assignment(answer.assignment))
            name = (
                getattr(answer, "protocol_name", None)
                or getattr(request.body, "protocol_name", None)
                or protocols.get(int(request.body.generation_id))
            )
            out.append(
                Event(
                    ex.response_t_ms,
                    worker,
                    "sync",
                    name,
                    tuple(a["tasks"]),
                    tuple(a.get("revoked_tasks", [])),
                )
            )
    return out


def place_crashes(
    name: str, applied: list[Applied], order: RealOrder | None = None
) -> list[Applied]:
    """``applied`` with every hard restart whose heartbeat phase is known given the
    ``shift_ms`` that puts the simulated crash at the real one's phase (each simulation given
    ``order``, as :func:`run_simulation`'s).

    A simulated worker's heartbeats are not in the event log, but the coordinator's
    ``member_removed`` (reason ``session_timeout``) is ``session_timeout_ms`` after its last
    request, which gives the simulated phase at the crash. The crash, and with it the worker's
    return (it stays down as long as the real one), is moved back by the difference: never out
    of the heartbeat interval it falls in (only when the real phase is below Connect's 3 s
    ``heartbeat.interval.ms`` and the shift is not negative); one crash per simulation, in
    order, since each placement moves what follows.
    """
    out = list(applied)
    for i, a in enumerate(out):
        if a.step.action != "restart" or a.step.clean or a.phase_ms is None:
            continue
        if not 0 <= a.phase_ms < HEARTBEAT_INTERVAL_MS:
            continue
        loaded = loads_any(simulated_text(name, out, order), f"{name}.toml")
        records = simulate(loaded, loaded.scenario.seed, member_ids=order and order.member_ids)
        records = records.records
        k = sum(
            1
            for b in out[:i]
            if b.step.action == "restart" and not b.step.clean and b.step.member == a.step.member
        )
        crashes = [
            r["t_ms"]
            for r in records
            if r.get("kind") == "member_crash" and r.get("member") == a.step.member
        ]
        if len(crashes) <= k:
            continue
        crash = crashes[k]
        removed = next(
            (
                r
                for r in records
                if r.get("kind") == "member_removed"
                and r.get("member") == a.step.member
                and r.get("reason") == "session_timeout"
                and r["t_ms"] >= crash
            ),
            None,
        )
        if removed is None:
            continue
        sim_phase = crash - (removed["t_ms"] - int(removed["session_timeout_ms"]))
        if sim_phase >= a.phase_ms:
            out[i] = replace(a, shift_ms=sim_phase - a.phase_ms)
    return out


@dataclass(frozen=True)
class RealOrder:
    """What decides a real run's leaders and the simulation cannot draw: the member ids the
    broker handed out, per client id in order (``ClassicGroup#generateMemberId``:
    ``<client.id>-<random UUID>``; a departed leader's successor is the first member of the
    coordinator's ``HashMap`` of members, an order of those ids), and the workers in the order
    the broker added them to the group (the first one added leads, ``ClassicGroup#add``)."""

    member_ids: dict[str, list[str]]
    first_joins: list[str]


def real_order(trace: Path) -> RealOrder:
    """The :class:`RealOrder` of a recorded trace: member ids as the JoinGroup answers gave
    them, and each worker's first JoinGroup that carried a member id (the KIP-394 rejoin that
    adds it), in request order."""
    ids: dict[str, list[str]] = {}
    seen: set[str] = set()
    joins: list[str] = []
    exchanges = [ex for ex in read_exchanges(trace) if ex.api_key == 11]
    for ex in exchanges:
        worker = worker_name(str(wire.decode_request(ex.request_raw).body.member_id))
        if worker and worker not in joins:
            joins.append(worker)
    for ex in sorted(exchanges, key=lambda ex: ex.response_t_ms or 0):
        if ex.response_raw is None:
            continue
        _, answer = decode_response(ex.response_raw, 11, ex.version)
        member_id = str(getattr(answer, "member_id", "") or "")
        if len(member_id) > 37 and member_id not in seen:  # "<prefix>-<36-character UUID>"
            seen.add(member_id)
            ids.setdefault(member_id[:-37], []).append(member_id)
    return RealOrder(ids, joins)


def run_simulation(
    name: str, applied: list[Applied] | None = None, order: RealOrder | None = None
) -> tuple[Measures, list[Round], int]:
    """groupsim's run of the scenario (:func:`simulated_text`, crashes placed by
    :func:`place_crashes`), given the real run's :class:`RealOrder` (its workers start in the
    order the broker added the real ones, and its coordinator hands out the real member ids,
    so the same workers lead): its measures, its leader rounds and the time of its first step
    (virtual ms)."""
    placed = place_crashes(name, applied, order) if applied else applied
    loaded = loads_any(simulated_text(name, placed, order), f"{name}.toml")
    result = simulate(loaded, loaded.scenario.seed, member_ids=order and order.member_ids)
    start = next(
        r["t_ms"] for r in result.records if r.get("kind") == "step" and r.get("action") != "phase"
    )
    end = max(r["t_ms"] for r in result.records)
    rounds = sim_rounds(result.records)
    downtime, revocations = holdings(sim_events(result.records), start, end)
    return measure(rounds, start, end, downtime, revocations), rounds, start


def _orphan_restart(task: dict[str, Any]) -> bool:
    """A task whose status is FAILED because its worker still runs it: after an eager
    generation that followed an incremental one (KAFKA-13816), a worker keeps the tasks of its
    incremental assignment the eager one gave to others (``DistributedHerder#startWork`` starts
    only what it does not run, then forgets what it runs under eager), and the next eager join
    stops only its eager assignment (``WorkerCoordinator#onJoinPrepare``); when a later
    incremental assignment gives it such a task back, ``Worker#startTask`` refuses ("Task
    already exists in this worker") while the first instance runs on. Counted as running on
    that worker."""
    return task["state"] == "FAILED" and "Task already exists in this worker" in str(
        task.get("trace", "")
    )


def _placement(url: str, workers: dict[str, Worker]) -> dict[str, int] | None:
    """RUNNING tasks per worker name, or None while a task is not running."""
    by_url = {w.url.removeprefix("http://"): n for n, w in workers.items()}
    status = rest_call(url, "GET", "/connectors?expand=status")
    assert isinstance(status, dict)
    counts: dict[str, int] = {}
    for entry in status.values():
        for task in entry["status"]["tasks"]:
            if task["state"] != "RUNNING" and not _orphan_restart(task):
                return None
            name = by_url.get(task["worker_id"], task["worker_id"])
            counts[name] = counts.get(name, 0) + 1
    return counts


#: A real step waits for the group to be quiet this long (s): no JoinGroup or SyncGroup in the
#: trace (longer than Connect's 3 s heartbeat, by which members learn of a rebalance).
QUIET_S = 6.0


class _GroupTraffic:
    """The wall-clock ms of the last JoinGroup or SyncGroup request in a growing trace.jsonl
    (read on from where it stopped last time; the recorder writes whole lines)."""

    def __init__(self, trace: Path) -> None:
        self.trace = trace
        self.offset = 0
        self.last_ms = 0

    def latest(self) -> int:
        with self.trace.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            if b'"JoinGroup"' in line or b'"SyncGroup"' in line:
                rec = json.loads(line)
                if rec.get("dir") == "request":
                    self.last_ms = max(self.last_ms, int(rec["t_ms"]))
        return self.last_ms


def _wait_balanced(
    workers: dict[str, Worker], total: int, what: str, traffic: _GroupTraffic
) -> None:
    """Until every task runs, on live workers only, at most one apart, and the group has been
    quiet for :data:`QUIET_S` (the REST status of a task can read RUNNING while rebalances
    caused by the last ones are still coming)."""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    url = next(iter(workers.values())).url
    while True:
        try:
            counts = _placement(url, workers)
        except OSError:
            counts = None  # rebalancing: 409 for a while
        if (
            counts is not None
            and sum(counts.values()) == total
            and set(counts) == set(workers)
            and max(counts.values()) - min(counts.values()) <= 1
            and time.time() * 1000 - traffic.latest() > QUIET_S * 1000
        ):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}: {counts}")
        time.sleep(0.5)


def judge(out: Path) -> dict[str, Any]:
    """What groupsim says of a recorded run directory: ``replay --conform`` (coordinator and
    leaders, with :data:`BROKER`'s settings and ``connect-configs.json``) and ``groupsim
    check`` on its ``events.jsonl``, as counts."""
    exchanges = read_exchanges(out / "trace.jsonl")
    coordinator = conform_coordinator(exchanges, CoordinatorConfig.from_mapping(BROKER))
    leaders = conform_leaders(exchanges, read_configs(out / "connect-configs.json"))
    return {
        "answers": sum(coordinator.compared.values()),
        "answer_divergences": len(coordinator.divergences),
        "answer_timing": len(coordinator.timing),
        "rounds": leaders.compared,
        "round_divergences": len(leaders.divergences),
        "round_timing": len(leaders.timing),
        "violations": len(check_log(out / "events.jsonl")),
    }


@dataclass(frozen=True)
class RealRun:
    """A real run: its measures, its leader rounds, the time of its first step (ms of the
    trace's clock), the steps as applied, and the conformance of its trace."""

    measures: Measures
    rounds: list[Round]
    start_ms: int
    end_ms: int
    applied: list[Applied]
    conformance: dict[str, Any]


def scenario_connectors(raw: dict[str, Any]) -> dict[str, int]:
    """The scenario's connectors and their task counts: ``[workload.generate]`` (``count``
    connectors named ``<prefix><n>``) and ``[[workload.connectors]]`` (``name``, ``tasks``)."""
    workload = raw.get("workload", {})
    out = {str(c["name"]): int(c["tasks"]) for c in workload.get("connectors", [])}
    gen = workload.get("generate")
    if gen:
        prefix = gen.get("prefix", "connector")
        out.update({f"{prefix}{i + 1}": int(gen["tasks"]) for i in range(int(gen["count"]))})
    return out


def run_real(name: str, work: Path) -> RealRun:
    """The scenario on real Kafka (see the module docstring).

    Raises:
        RuntimeError: the cluster was not balanced within :data:`STEP_TIMEOUT_S` of a step.
    """
    raw = _toml(scenario_text(name))
    protocol = raw["cluster"]["config"].get("connect.protocol", "sessioned")
    connectors = scenario_connectors(raw)
    total = sum(connectors.values())
    steps = timeline_steps(raw)
    out = work / "recorded"
    # (step, wall-clock ms it began, wall-clock ms of a SIGKILL or None)
    done: list[tuple[Step, int, int | None]] = []
    with kafka_broker(work, **{k.replace(".", "_"): v for k, v in BROKER.items()}) as broker:
        recorder = RecorderThread(("127.0.0.1", broker.port), out)
        traffic = _GroupTraffic(out / "trace.jsonl")
        stacks: dict[str, ExitStack] = {}
        live: dict[str, Worker] = {}
        protocols: dict[str, str] = {}

        def start(worker: str, config: dict[str, Any], release: str | None = None) -> None:
            protocols[worker] = str(config.get("connect.protocol", protocols.get(worker, protocol)))
            stacks[worker] = ExitStack()
            live[worker] = stacks[worker].enter_context(
                connect_worker(
                    work,
                    recorder.bootstrap,
                    worker,
                    release,
                    connect_protocol=protocols[worker],
                    scheduled_rebalance_max_delay_ms=delay_ms(name),
                )
            )

        def stop(worker: str, clean: bool = True) -> int | None:
            gone = live.pop(worker)
            killed = None
            if not clean:
                killed = int(time.time() * 1000)
                os.killpg(gone.pid, signal.SIGKILL)
            stacks.pop(worker).close()
            return killed

        try:
            for i in range(int(raw["cluster"]["size"])):
                start(f"w{i + 1}", {})
            url = live["w1"].url
            for connector, tasks in connectors.items():
                rest_call(
                    url,
                    "POST",
                    "/connectors",
                    {
                        "name": connector,
                        "config": {
                            "connector.class": "groupsim.oracle.connect.IdleSourceConnector",
                            "tasks.max": str(tasks),
                        },
                    },
                )
            _wait_balanced(live, total, "the first balanced assignment", traffic)
            for step in steps:
                began, killed = int(time.time() * 1000), None
                if step.action == "join":
                    start(step.member, dict(step.config), worker_release(step))
                elif step.action == "leave":
                    stop(step.member)
                else:
                    killed = stop(step.member, step.clean)
                    time.sleep(step.down_ms * DELAY_MS / KAFKA_DELAY_MS / 1000)
                    start(step.member, dict(step.config))
                done.append((step, began, killed))
                _wait_balanced(live, total, f"balance after {step.action} {step.member}", traffic)
            end_ms = int(time.time() * 1000)
        finally:
            for worker in list(stacks):
                stacks.pop(worker).close()
            recorder.stop()
        write_connect_configs(broker.bootstrap, out, delay_ms(name))
    trace = out / "trace.jsonl"
    rounds, first = real_rounds(trace)
    events = real_events(trace, [(k, s.member) for s, _, k in done if k is not None])
    applied = with_phases(_applied(done, events, first), trace)
    start_ms = applied[0].at_ms if applied else end_ms - first
    downtime, revocations = holdings(events, start_ms, end_ms - first)
    conformance = judge(out)
    (work / "conformance-summary.json").write_text(json.dumps(conformance) + "\n")
    measures = measure(rounds, start_ms, end_ms - first, downtime, revocations)
    return RealRun(measures, rounds, start_ms, end_ms - first, applied, conformance)


def with_phases(applied: list[Applied], trace: Path) -> list[Applied]:
    """``applied`` with each hard restart's ``phase_ms`` read from the trace: its SIGKILL
    (``at_ms``) minus the worker's last JoinGroup, SyncGroup or Heartbeat request before it."""
    contacts: dict[str, list[int]] = {}
    for ex in read_exchanges(trace):
        if ex.api_key in (11, 12, 14):
            worker = worker_name(wire.decode_request(ex.request_raw).client_id)
            contacts.setdefault(worker, []).append(ex.t_ms)
    out = []
    for a in applied:
        if a.step.action == "restart" and not a.step.clean:
            last = max((t for t in contacts.get(a.step.member, []) if t <= a.at_ms), default=None)
            a = replace(a, phase_ms=None if last is None else a.at_ms - last)
        out.append(a)
    return out


def _applied(
    done: list[tuple[Step, int, int | None]], events: list[Event], first: int
) -> list[Applied]:
    """When each step happened in the trace (see :class:`Applied`): the worker's first
    LeaveGroup / JoinGroup after the step began (the SIGKILL for a hard stop)."""

    def after(kind: str, worker: str, t_ms: int) -> int | None:
        return min(
            (e.t_ms for e in events if e.kind == kind and e.worker == worker and e.t_ms >= t_ms),
            default=None,
        )

    out = []
    for step, began, killed in done:
        t = began - first
        if step.action == "join":
            out.append(Applied(step, after("join", step.member, t) or t))
            continue
        gone = killed - first if killed is not None else after("gone", step.member, t) or t
        if step.action == "leave":
            out.append(Applied(step, gone))
            continue
        back = after("join", step.member, gone)
        out.append(Applied(step, gone, (back if back is not None else gone) - gone))
    return out


def _toml(text: str) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(text)


MARK_START = "<!-- real-vs-sim:start (python -m tests.kafka_oracle.compare --write) -->"
MARK_END = "<!-- real-vs-sim:end -->"


def row(
    name: str, real: RealRun, sim: Measures, sim_rounds_: list[Round], sim_start: int
) -> dict[str, Any]:
    """One scenario's results as JSON (what :func:`table` prints; kept in ``--results``)."""
    compared = min(real.measures.rebalances, sim.rebalances)
    return {
        "scenario": name,
        "kafka": requested_version() or _pinned_version(),
        "delay_ms": delay_ms(name),
        "real": asdict(real.measures),
        "groupsim": asdict(sim),
        "rounds_compared": compared,
        "rounds_equal": equal_rounds(
            real.rounds, sim_rounds_, (real.start_ms, sim_start), real.end_ms
        ),
        "window_ms": [real.start_ms, real.end_ms],
        "steps": [
            {
                "action": a.step.action,
                "member": a.step.member,
                "at_ms": a.at_ms,
                "down_ms": a.down_ms,
                "phase_ms": a.phase_ms,
            }
            for a in real.applied
        ],
        "conformance": real.conformance,
    }


def _nth_round(rounds: list[Round], start_ms: int, old: dict[str, Any]) -> int:
    """The time of the last real round a row counted (its ``rebalances``-th from the start)."""
    counted = sorted(r.t_ms for r in rounds if r.t_ms >= start_ms)[: old["real"]["rebalances"]]
    return counted[-1] if counted else start_ms


def rescore(old: dict[str, Any], trace: Path) -> dict[str, Any]:
    """A row again from its recorded trace, without Kafka: the groupsim side is simulated anew
    (with the real run's step times kept in the row), its rounds compared with the trace's, and
    the trace judged again (:func:`judge`); the real measures are kept. For when groupsim
    changed after a run."""
    name = old["scenario"]
    steps = timeline_steps(_toml(scenario_text(name)))
    applied = with_phases(
        [
            Applied(step, int(s["at_ms"]), int(s["down_ms"]))
            for step, s in zip(steps, old["steps"], strict=True)
        ],
        trace,
    )
    rounds, _ = real_rounds(trace)
    sim, sim_rounds_, sim_start = run_simulation(name, applied, real_order(trace))
    start = applied[0].at_ms
    # rows written before the window was kept: the real run's last round counted
    end = old["window_ms"][1] if "window_ms" in old else _nth_round(rounds, start, old)
    return {
        **old,
        "steps": [
            {**s, "phase_ms": a.phase_ms} for s, a in zip(old["steps"], applied, strict=True)
        ],
        "conformance": judge(trace.parent),
        "groupsim": asdict(sim),
        "rounds_compared": min(old["real"]["rebalances"], sim.rebalances),
        "rounds_equal": equal_rounds(rounds, sim_rounds_, (start, sim_start), end),
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of :func:`row` s, the Streams rows' (``compare_streams.table``),
    and the list of scenarios not run."""
    streams = [r for r in rows if r.get("kind") == "streams"]
    rows = [r for r in rows if r.get("kind") != "streams"]
    lines = [
        "`scheduled.rebalance.max.delay.ms` scaled by "
        f"{DELAY_MS:,}/{KAFKA_DELAY_MS:,} in both runs (the delay column); counted from the "
        "first timeline action on; real / groupsim:",
        "",
        "| scenario | Kafka | delay (s) | rebalances | same rounds | tasks moved | revocations "
        "| task downtime (task·s) | tasks per worker at the end "
        "| the real trace: conformance and check |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        real, sim, conf = r["real"], r["groupsim"], r["conformance"]
        ends = " / ".join(
            " ".join(f"{w}:{n}" for w, n in m["workers_at_end"].items()) for m in (real, sim)
        )
        verdict = (
            f"{conf['answers']} answers: {conf['answer_divergences']} divergences "
            f"({conf['answer_timing']} timing-only); {conf['rounds']} leader rounds: "
            f"{conf['round_divergences']} divergences ({conf['round_timing']} timing-only); "
            f"`groupsim check`: {conf.get('violations', '?')} violations"
        )
        lines.append(
            f"| {r['scenario']} | {r['kafka']} | {r.get('delay_ms', DELAY_MS) / 1000:g} "
            f"| {real['rebalances']} / {sim['rebalances']} "
            f"| {r['rounds_equal']} of {r['rounds_compared']} "
            f"| {real['tasks_moved']} / {sim['tasks_moved']} "
            f"| {real['tasks_revoked']} / {sim['tasks_revoked']} "
            f"| {real['downtime_ms'] / 1000:.1f} / {sim['downtime_ms'] / 1000:.1f} | {ends} "
            f"| {verdict} |"
        )
    if streams:
        lines += ["", compare_streams.table(streams)]
    lines += ["", "Not run by the script:", ""]
    lines += [f"- `{name}`: {why}" for name, why in NOT_RUN.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(RUNNABLE))
    parser.add_argument("--write", type=Path, help="the markdown file whose table to replace")
    parser.add_argument(
        "--work", type=Path, help="where the runs go (default: a new temporary directory)"
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="a JSON file of rows: the scenarios run replace theirs, the others are kept "
        "(so one scenario can be re-run alone); the table shows them all",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="run no cluster: redo the groupsim side of every row of --results from the traces "
        "under --work (WORK/<scenario>/recorded/trace.jsonl)",
    )
    args = parser.parse_args(argv)
    if args.rescore:
        if args.results is None or args.work is None:
            parser.error("--rescore needs --results and --work")
        again = []
        for r in json.loads(args.results.read_text()):
            trace = args.work / r["scenario"] / "recorded" / "trace.jsonl"
            if not trace.exists():
                print(f"{r['scenario']} (Kafka {r['kafka']}): no {trace}, kept as it was")
                again.append(r)
                continue
            again.append(
                (compare_streams.rescore if r.get("kind") == "streams" else rescore)(r, trace)
            )
        args.results.write_text(json.dumps(again, indent=1) + "\n")
        return _write(again, args.write)
    if args.work is None:
        import tempfile

        args.work = Path(tempfile.mkdtemp(prefix="real-vs-sim-"))
    # one row per scenario and Kafka version
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    if args.results and args.results.exists():
        rows = {(r["scenario"], r["kafka"]): r for r in json.loads(args.results.read_text())}
    for name in args.scenarios:
        if name not in RUNNABLE:
            parser.error(f"{name}: not runnable here ({NOT_RUN.get(name, 'unknown')})")
        work = args.work / name
        work.mkdir(parents=True, exist_ok=False)
        print(f"{name}: real run in {work} ...", flush=True)
        if name.startswith("streams/"):
            done = compare_streams.row(name, compare_streams.run_real(name, work))
        else:
            real = run_real(name, work)
            order = real_order(work / "recorded" / "trace.jsonl")
            sim, rounds, start = run_simulation(name, real.applied, order)
            done = row(name, real, sim, rounds, start)
        rows[(name, done["kafka"])] = done
        print(json.dumps(done), flush=True)
        if args.results:
            args.results.write_text(json.dumps(ordered(rows), indent=1) + "\n")
    return _write(ordered(rows), args.write)


def ordered(rows: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows in :data:`RUNNABLE` order, each scenario's Kafka versions in version order."""

    def version(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v))

    known = [key for key in rows if key[0] in RUNNABLE]
    return [rows[k] for k in sorted(known, key=lambda k: (RUNNABLE.index(k[0]), version(k[1])))]


def _write(rows: list[dict[str, Any]], doc_path: Path | None) -> int:
    """Prints the table and replaces the one between the markers of ``doc_path``."""
    text = table(rows)
    print(text)
    if doc_path:
        doc = doc_path.read_text()
        start, end = doc.index(MARK_START), doc.index(MARK_END)
        doc_path.write_text(doc[: start + len(MARK_START)] + "\n" + text + "\n" + doc[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
