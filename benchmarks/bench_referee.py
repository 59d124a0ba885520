"""The Kafka referee's cost: CPU per chaos run with and without ``--referee kafka``.

Run: ``.venv/bin/python benchmarks/bench_referee.py [--runs N] [--members M] [--seed S]
[--protocol P,...] [--kind connect|streams] [--duration-min D]`` (default 60 runs of 10-member
Connect groups, 60 virtual minutes of faults, the three protocols Kafka has an assignor for;
``--kind streams`` runs Streams applications of M clients instead; ``--kind consumer`` runs
consumer groups: chaos runs once the kind has a chaos generator, until then the consumer test
scenarios, ``tests/scenarios/consumer/*.toml``, in turn with seeds S, S+1, ...). One process:
every run is simulated (CPU measured with ``time.process_time``), then its log is judged by
one referee JVM (this process's CPU plus the JVM's, read from ``/proc/<pid>/stat``).
The referee judges the coordinator's answers too, which needs the run to log its
coordinator's traffic (``coordinator_io``: what ``chaos --referee kafka`` does), and that
simulation costs more than the plain one (quiet stretches are no longer skipped); so each run
is simulated twice, plain (the baseline) and with the traffic (what the referee's campaign
pays), and the ratio is ``(simulation with traffic + referee CPU) / plain simulation CPU``.
Wall-clock runs/min on a shared machine mostly measures the other tenants; CPU seconds per run
do not. JVM start-up (and the harness build check) is
reported apart: a campaign pays it once per worker process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios import kinds, referee  # noqa: E402
from scenarios.campaigns.chaos import ChaosConfig, generate  # noqa: E402
from scenarios.campaigns.chaos.render import spec_to_toml  # noqa: E402
from scenarios.input.library import load_any  # noqa: E402
from scenarios.sim.runner import RunResult, simulate  # noqa: E402

_CONSUMER_SCENARIOS = sorted(
    (Path(__file__).resolve().parent.parent / "tests" / "scenarios" / "consumer").glob("*.toml")
)

_TICK = os.sysconf("SC_CLK_TCK")


def _jvm_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def _run(config: ChaosConfig | None, seed: int, index: int, io: bool) -> RunResult:
    """Run ``index`` (with its coordinator's traffic logged when ``io``): a chaos run, or for
    a kind without a chaos generator the next consumer test scenario with seed
    ``seed + index // scenarios``."""
    try:
        if config is None:
            raise NotImplementedError
        spec = generate(config, seed, index)
    except NotImplementedError:  # the kind has no chaos generator
        path = _CONSUMER_SCENARIOS[index % len(_CONSUMER_SCENARIOS)]
        return simulate(load_any(path), seed + index // len(_CONSUMER_SCENARIOS), coordinator_io=io)
    loaded = kinds.get(spec.group_kind).loads(spec_to_toml(spec), f"{spec.name}.toml")
    return simulate(loaded, spec.seed, max_cpu_s=spec.max_cpu_s, coordinator_io=io)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--protocol", default="eager,compatible,sessioned")
    parser.add_argument("--kind", choices=("connect", "streams", "consumer"), default="connect")
    parser.add_argument("--duration-min", type=int, default=60)
    args = parser.parse_args()
    try:
        config: ChaosConfig | None = ChaosConfig(
            members=(args.members, args.members),
            protocols=tuple(args.protocol.split(",")),
            kind=args.kind,
            duration_ms=args.duration_min * 60_000,
        )
    except ValueError:  # a kind campaigns do not run yet (consumer, before its generator)
        config = None
    sim_cpu = io_cpu = 0.0
    logs = []
    for index in range(args.runs):
        started = time.process_time()
        _run(config, args.seed, index, io=False)
        sim_cpu += time.process_time() - started
        started = time.process_time()
        result = _run(config, args.seed, index, io=True)
        io_cpu += time.process_time() - started
        logs.append(result.records)

    started_wall, started_cpu = time.perf_counter(), time.process_time()
    referee.prepare()
    oracle = referee.oracle()
    start_wall = time.perf_counter() - started_wall
    start_cpu = time.process_time() - started_cpu + _jvm_cpu_s(oracle.pid)

    passes = []
    for _ in range(2):  # the first pass includes the JVM's warm-up (JIT), the second not
        jvm_before = _jvm_cpu_s(oracle.pid)
        py_before, wall_before = time.process_time(), time.perf_counter()
        rounds = answers = disagreements = 0
        for records in logs:
            verdict = referee.judge(records)
            rounds += verdict.compared
            answers += verdict.answers
            disagreements += len(verdict.violations)
        py_cpu = time.process_time() - py_before
        jvm_cpu = _jvm_cpu_s(oracle.pid) - jvm_before
        passes.append((py_cpu, jvm_cpu, time.perf_counter() - wall_before))
    referee.stop()
    py_cpu, jvm_cpu, ref_wall = passes[0]
    ref_cpu = py_cpu + jvm_cpu

    n = args.runs
    what = {"connect": args.protocol, "streams": "Kafka Streams"}.get(args.kind, "consumer groups")
    if config is None:
        print(
            f"{n} runs of the {len(_CONSUMER_SCENARIOS)} consumer test scenarios in turn, "
            f"seeds {args.seed}..{args.seed + (n - 1) // len(_CONSUMER_SCENARIOS)}"
        )
    else:
        print(
            f"{n} runs, {args.members} members, {args.duration_min} min of faults, {what}, "
            f"seed {args.seed}"
        )
    print(f"  simulation CPU per run          {1000 * sim_cpu / n:8.0f} ms")
    print(f"  ... logging coordinator traffic {1000 * io_cpu / n:8.0f} ms")
    print(
        f"  referee CPU per run (py + JVM)  {1000 * ref_cpu / n:8.0f} ms "
        f"({rounds / n:.1f} leader rounds and {answers / n:.0f} coordinator answers per run; "
        f"wall {1000 * ref_wall / n:.0f} ms)"
    )
    print(f"  CPU ratio with / without        {(io_cpu + ref_cpu) / sim_cpu:8.2f}x")
    print(
        f"  runs/min on 2 idle cores        {2 * 60 * n / sim_cpu:8.0f} without, "
        f"{2 * 60 * n / (io_cpu + ref_cpu):.0f} with"
    )
    warm_py, warm_jvm, _ = passes[1]
    print(
        f"    of which Python {1000 * py_cpu / n:.0f} ms, JVM {1000 * jvm_cpu / n:.0f} ms; "
        f"warm JVM (second pass): Python {1000 * warm_py / n:.0f} ms, "
        f"JVM {1000 * warm_jvm / n:.0f} ms, ratio "
        f"{(io_cpu + warm_py + warm_jvm) / sim_cpu:.2f}x"
    )
    print(f"  JVM start (once per worker)     {start_wall:8.1f} s wall, {start_cpu:.1f} s CPU")
    print(f"  disagreements                   {disagreements:8d}")


if __name__ == "__main__":
    main()
