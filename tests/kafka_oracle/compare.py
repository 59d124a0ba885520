"""Connect library scenarios, real and simulated, side by side: the table of docs/real-kafka.md.

``python -m tests.kafka_oracle.compare [--write docs/real-kafka.md] [SCENARIO ...]`` runs, for
each Connect library scenario Kafka itself can run with this script (see :data:`RUNNABLE`):

* a **real** run — a fresh single-node KRaft broker and real Connect workers
  (``ConnectDistributed``, the Kafka version of the harness's pom) recorded through
  ``groupsim record``, with the scenario's workers, protocol and connectors (the harness's
  ``IdleSourceConnector``); the scenario's timeline actions (``join``: start a worker,
  ``leave``: stop it, which leaves the group) are applied in order, each once the cluster is
  balanced; ``replay --conform`` (coordinator and leaders) judges the trace;
* a **groupsim** run of the same scenario file with the same setting changes;

and compares what happened from the first timeline action on: rebalances (generations the
leader assigned), tasks moved (a task whose worker at the end differs from its worker just
before the first action), tasks revoked. Both sides are measured by the same code from the same
kind of data: the leaders' assignments (decoded SyncGroup bytes on the real side, the
``assignor`` records of the event log on groupsim's).

Times are scaled down: ``scheduled.rebalance.max.delay.ms`` is :data:`DELAY_MS` in both runs
(Kafka's default, 300 s, would make one run last minutes). The real run applies an action when
the cluster is balanced, the simulation at the scenario's times (60 s apart, more than enough
for its rounds to end).

Not run (each named in the table): KIP-987 static assignments (not in Kafka), and the scenarios
that need a worker restarted with another setting or crashed (rolling upgrades, downgrades,
bounces) — this script starts and stops workers only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.config import CoordinatorConfig
from protocol.connect_codec import assignment_to_json, decode_assignment
from scenarios.input.library import loads_any
from scenarios.record.conform import conform_coordinator, read_exchanges
from scenarios.record.frames import decode_response
from scenarios.record.leaders import conform_leaders, read_configs
from scenarios.serve import wire
from scenarios.sim.runner import simulate
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
#: The broker's group settings (given to the replay too).
BROKER = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500}
#: Scenarios this script runs (timeline actions join/leave only).
RUNNABLE = ("scale-out", "worker-leaves-for-good")
#: Library scenarios not run, and why.
NOT_RUN = {
    "kip-987-test-plan": "KIP-987 static assignments are not in Kafka",
    "rolling-upgrade-sessioned-to-static": "KIP-987 static assignments are not in Kafka",
    "rolling-upgrade-eager-to-sessioned": "needs workers restarted with another protocol",
    "downgrade-sessioned-to-eager": "needs workers restarted with another protocol",
    "mixed-versions": "needs workers of older Connect releases",
    "connect-system-test-bounce": "needs workers crashed and restarted",
    "worker-bounce-within-delay": "needs a worker crashed and restarted",
}
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


def worker_name(member_id: str) -> str:
    """``w1`` for ``w1-<uuid>`` (a Connect member id is its client id and a UUID)."""
    return member_id.split("-", 1)[0]


def measure(rounds: Iterable[Round], start_ms: int, end_ms: int) -> Measures:
    """Rebalances, tasks moved and revoked between ``start_ms`` and ``end_ms``, following task
    ownership through every round (Connect's incremental assignments are deltas: a worker
    keeps what it has unless revoked)."""
    owner: dict[str, str] = {}
    before: dict[str, str] | None = None
    rebalances = revoked = 0
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
                revoked += counted
            for task in a.get("tasks", []):
                owner[task] = name
        rebalances += counted
    before = dict(owner) if before is None else before
    moved = sum(1 for task, name in before.items() if owner.get(task, name) != name)
    at_end: dict[str, int] = {}
    for name in owner.values():
        at_end[name] = at_end.get(name, 0) + 1
    return Measures(rebalances, moved, revoked, dict(sorted(at_end.items())))


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


def scenario_text(name: str) -> str:
    """The library file with ``scheduled.rebalance.max.delay.ms`` set to :data:`DELAY_MS`."""
    text = (LIBRARY / f"{name}.toml").read_text()
    return re.sub(
        r"(\[cluster\.config\]\n)",
        rf'\1"scheduled.rebalance.max.delay.ms" = {DELAY_MS}\n',
        text,
        count=1,
    )


def run_simulation(name: str) -> Measures:
    loaded = loads_any(scenario_text(name), f"{name}.toml")
    result = simulate(loaded, loaded.scenario.seed)
    steps = [r["t_ms"] for r in result.records if r.get("kind") == "step"]
    end = max(r["t_ms"] for r in result.records)
    return measure(sim_rounds(result.records), steps[0], end)


def _placement(url: str, workers: dict[str, Worker]) -> dict[str, int] | None:
    """RUNNING tasks per worker name, or None while a task is not running."""
    by_url = {w.url.removeprefix("http://"): n for n, w in workers.items()}
    status = rest_call(url, "GET", "/connectors?expand=status")
    assert isinstance(status, dict)
    counts: dict[str, int] = {}
    for entry in status.values():
        for task in entry["status"]["tasks"]:
            if task["state"] != "RUNNING":
                return None
            name = by_url.get(task["worker_id"], task["worker_id"])
            counts[name] = counts.get(name, 0) + 1
    return counts


def _wait_balanced(workers: dict[str, Worker], total: int, what: str) -> None:
    """Until every task runs, on live workers only, at most one apart, then 3 s more."""
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
        ):
            time.sleep(3)
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}: {counts}")
        time.sleep(0.5)


def run_real(name: str, work: Path) -> tuple[Measures, dict[str, Any]]:
    """The scenario on real Kafka: measures and the conformance of its trace."""
    raw = _toml(scenario_text(name))
    protocol = raw["cluster"]["config"].get("connect.protocol", "sessioned")
    gen = raw["workload"]["generate"]
    connectors = {
        f"{gen.get('prefix', 'connector')}{i + 1}": gen["tasks"] for i in range(gen["count"])
    }
    total = sum(connectors.values())
    settings: dict[str, str | int] = {
        "connect_protocol": protocol,
        "scheduled_rebalance_max_delay_ms": DELAY_MS,
    }
    out = work / "recorded"
    with kafka_broker(work, **{k.replace(".", "_"): v for k, v in BROKER.items()}) as broker:
        recorder = RecorderThread(("127.0.0.1", broker.port), out)
        stacks: dict[str, ExitStack] = {}
        live: dict[str, Worker] = {}

        def start(worker: str) -> None:
            stacks[worker] = ExitStack()
            live[worker] = stacks[worker].enter_context(
                connect_worker(work, recorder.bootstrap, worker, **settings)
            )

        def stop(worker: str) -> None:
            del live[worker]
            stacks.pop(worker).close()

        try:
            for i in range(int(raw["cluster"]["size"])):
                start(f"w{i + 1}")
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
            _wait_balanced(live, total, "the first balanced assignment")
            start_ms = int(time.time() * 1000)
            actions: dict[str, Callable[[str], None]] = {"join": start, "leave": stop}
            for step in raw.get("timeline", []):
                actions[step["action"]](step["member"])
                _wait_balanced(live, total, f"balance after {step['action']} {step['member']}")
            end_ms = int(time.time() * 1000)
        finally:
            for worker in list(stacks):
                stacks.pop(worker).close()
            recorder.stop()
        write_connect_configs(broker.bootstrap, out, DELAY_MS)
    rounds, first = real_rounds(out / "trace.jsonl")
    exchanges = read_exchanges(out / "trace.jsonl")
    coordinator = conform_coordinator(exchanges, CoordinatorConfig.from_mapping(BROKER))
    leaders = conform_leaders(exchanges, read_configs(out / "connect-configs.json"))
    conformance = {
        "answers": sum(coordinator.compared.values()),
        "answer_divergences": len(coordinator.divergences),
        "answer_timing": len(coordinator.timing),
        "rounds": leaders.compared,
        "round_divergences": len(leaders.divergences),
        "round_timing": len(leaders.timing),
    }
    return measure(rounds, start_ms - first, end_ms - first), conformance


def _toml(text: str) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(text)


MARK_START = "<!-- real-vs-sim:start (python -m tests.kafka_oracle.compare --write) -->"
MARK_END = "<!-- real-vs-sim:end -->"


def table(results: dict[str, tuple[Measures, Measures, dict[str, Any]]], version: str) -> str:
    """The markdown table (and the list of scenarios not run)."""
    lines = [
        f"Kafka {version}; `scheduled.rebalance.max.delay.ms` = {DELAY_MS} ms in both runs; "
        "counted from the first timeline action on. real / groupsim:",
        "",
        "| scenario | rebalances | tasks moved | tasks revoked | tasks per worker at the end "
        "| conformance of the real trace |",
        "|---|---|---|---|---|---|",
    ]
    for name, (real, sim, conf) in results.items():
        ends = " / ".join(
            " ".join(f"{w}:{n}" for w, n in m.workers_at_end.items()) for m in (real, sim)
        )
        verdict = (
            f"{conf['answers']} answers: {conf['answer_divergences']} divergences "
            f"({conf['answer_timing']} timing-only); {conf['rounds']} leader rounds: "
            f"{conf['round_divergences']} divergences ({conf['round_timing']} timing-only)"
        )
        lines.append(
            f"| {name} | {real.rebalances} / {sim.rebalances} | {real.tasks_moved} / "
            f"{sim.tasks_moved} | {real.tasks_revoked} / {sim.tasks_revoked} | {ends} "
            f"| {verdict} |"
        )
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
    args = parser.parse_args(argv)
    if args.work is None:
        import tempfile

        args.work = Path(tempfile.mkdtemp(prefix="real-vs-sim-"))
    results: dict[str, tuple[Measures, Measures, dict[str, Any]]] = {}
    for name in args.scenarios:
        if name not in RUNNABLE:
            parser.error(f"{name}: not runnable here ({NOT_RUN.get(name, 'unknown')})")
        work = args.work / name
        work.mkdir(parents=True, exist_ok=False)
        print(f"{name}: real run in {work} ...", flush=True)
        real, conformance = run_real(name, work)
        sim = run_simulation(name)
        results[name] = (real, sim, conformance)
        print(f"{name}: real {real}, groupsim {sim}, {conformance}", flush=True)
    text = table(results, requested_version() or _pinned_version())
    print(text)
    if args.write:
        doc = args.write.read_text()
        start, end = doc.index(MARK_START), doc.index(MARK_END)
        args.write.write_text(doc[: start + len(MARK_START)] + "\n" + text + "\n" + doc[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
