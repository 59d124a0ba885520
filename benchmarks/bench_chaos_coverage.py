"""Branch coverage of ``members/`` and ``coordinator/`` under a chaos campaign, per kind.

Run: ``nice -n 19 .venv/bin/python benchmarks/bench_chaos_coverage.py [--runs N] [--seed S]
[--kind connect|streams|consumer ...] [--json FILE]`` (default 100 runs of each of the three
kinds, seed 1, the defaults of ``groupsim chaos``: 3..10 members, every fault kind, a 1 h fault
window). Needs
coverage.py in the venv (``.venv/bin/pip install coverage``; not a project dependency).

Each kind's runs go through :func:`scenarios.campaigns.chaos.run_one` in this process (what a
``groupsim chaos --jobs 1`` worker does for run ``i``, without the pool or the shrinker) under
one ``coverage.Coverage(branch=True)`` measuring only ``members/`` and ``coordinator/``. Prints,
per kind, branches hit / total per package, then every unreached branch as
``file:line -> line  source`` (``exit`` when the branch leaves the function), and the same
figures for the kind's own files (:data:`OWN_FILES`) and the shared group-client modules
(:data:`GROUP_CLIENT_FILES`). Issue 23 item 5;
the figures and the reason for each unreached branch are in docs/chaos.md ("Branch coverage
under chaos"). Not a test: it takes minutes (coverage's tracer slows a run ~3x).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PACKAGES = ("members", "coordinator")

# The group client every kind runs (Kafka's AbstractCoordinator), split into its modules:
# the client, its state machine, its heartbeat thread, its JoinGroup/SyncGroup round and its
# coordinator lookup. Counted in each kind's "own files" figure and on its own.
GROUP_CLIENT_FILES = (
    "members/group_client.py",
    "members/member_state.py",
    "members/heartbeat.py",
    "members/join_group.py",
    "members/coordinator_lookup.py",
)

# A kind's own files: its member, herder/restore and assignor modules (a path ending in "/"
# is every file under it). With GROUP_CLIENT_FILES they make the "own files" column of
# docs/chaos.md ("Branch coverage under chaos"); `_wire.py` and `members/config.py` are
# outside it, as in the earlier rows.
OWN_FILES: dict[str, tuple[str, ...]] = {
    "connect": (
        "members/worker.py",
        "members/worker_leader.py",
        "members/worker_snapshot.py",
        "members/session_keys.py",
        "members/herder.py",
        "members/assignors/base.py",
        "members/assignors/eager.py",
        "members/assignors/incremental_cooperative.py",
        "members/assignors/incremental_balance.py",
        "members/assignors/incremental_delay.py",
        "members/assignors/incremental_load.py",
        "members/assignors/incremental_round.py",
        "members/assignors/incremental_sets.py",
        "members/assignors/static.py",
    ),
    "streams": (
        "members/streams_client.py",
        "members/streams_on_assignment.py",
        "members/streams_state.py",
        "members/restore.py",
        "members/assignors/streams/",
    ),
    "consumer": ("members/consumer.py", "members/assignors/consumer/"),
}


def file_group_figures(
    kind: str, per_file: dict[str, tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    """``{"own": (hit, total), "group_client": (hit, total)}`` for ``kind`` from
    :func:`summarise`'s per-file figures (``{"members/x.py": (hit, total)}``, branches): "own"
    is the kind's :data:`OWN_FILES` plus :data:`GROUP_CLIENT_FILES`, "group_client" the
    latter alone. Raises ``KeyError`` for a kind without an entry."""

    def total(paths: tuple[str, ...]) -> tuple[int, int]:
        chosen = [
            figures
            for name, figures in per_file.items()
            if any(name == p or (p.endswith("/") and name.startswith(p)) for p in paths)
        ]
        return sum(h for h, _ in chosen), sum(t for _, t in chosen)

    return {
        "own": total(OWN_FILES[kind] + GROUP_CLIENT_FILES),
        "group_client": total(GROUP_CLIENT_FILES),
    }


def measure(kind: str, runs: int, seed: int) -> dict[str, Any]:
    """Run ``runs`` chaos runs of ``kind`` (campaign ``seed``) under coverage; coverage.py's
    JSON report (``files`` -> ``summary``/``missing_branches``) plus ``wall_s`` and the
    runs' new violations."""
    import coverage

    cov = coverage.Coverage(
        branch=True,
        source=[str(ROOT / p) for p in PACKAGES],
        data_file=None,
    )
    cov.start()
    # imported under the tracer, so module-level branches count as they would in a worker
    from scenarios.campaigns.chaos import ChaosConfig, run_one

    config = ChaosConfig(kind=kind)
    started = time.perf_counter()
    failed: dict[str, int] = {}
    for index in range(runs):
        outcome = run_one(config, seed, index)
        for name, count in outcome.new_violations.items():
            failed[name] = failed.get(name, 0) + count
        if (index + 1) % 100 == 0:
            print(f"{kind}: {index + 1}/{runs} runs", file=sys.stderr, flush=True)
    wall = time.perf_counter() - started
    cov.stop()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cov.json"
        cov.json_report(outfile=str(out))
        report: dict[str, Any] = json.loads(out.read_text())
    report["wall_s"] = wall
    report["new_violations"] = failed
    return report


def summarise(
    report: dict[str, Any],
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]], list[str]]:
    """``({package: (branches hit, branches total)}, {file: (hit, total)},
    ["file:line -> line  source", ...])``."""
    per_package: dict[str, tuple[int, int]] = {p: (0, 0) for p in PACKAGES}
    per_file: dict[str, tuple[int, int]] = {}
    unreached: list[str] = []
    for name, data in sorted(report["files"].items()):
        rel = Path(name).resolve().relative_to(ROOT)
        package = rel.parts[0]
        summary = data["summary"]
        per_file[str(rel)] = (summary["covered_branches"], summary["num_branches"])
        hit, total = per_package[package]
        per_package[package] = (
            hit + summary["covered_branches"],
            total + summary["num_branches"],
        )
        lines = (ROOT / rel).read_text().splitlines()
        for src, dst in data["missing_branches"]:
            target = "exit" if dst < 0 else str(dst)
            unreached.append(f"{rel}:{src} -> {target}  {lines[src - 1].strip()}")
    return per_package, per_file, unreached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs per kind (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="campaign seed (default 1)")
    parser.add_argument(
        "--kind",
        action="append",
        choices=("connect", "streams", "consumer"),
        help="default: all three",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    kinds = args.kind or ["connect", "streams", "consumer"]
    if len(kinds) > 1:
        # one process per kind, one after the other: each measures its imports afresh
        figures: dict[str, Any] = {}
        for kind in kinds:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "kind.json"
                argv = [sys.argv[0], "--runs", str(args.runs), "--seed", str(args.seed)]
                subprocess.run(
                    [sys.executable, *argv, "--kind", kind, "--json", str(out)], check=True
                )
                figures.update(json.loads(out.read_text()))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        return
    figures = {}
    for kind in kinds:
        report = measure(kind, args.runs, args.seed)
        per_package, per_file, unreached = summarise(report)
        print(f"## {kind}: {args.runs} runs, seed {args.seed}, {report['wall_s']:.0f} s")
        print(f"new violations: {report['new_violations'] or 'none'}")
        for package, (hit, total) in per_package.items():
            print(f"{package}/: {hit}/{total} branches ({100 * hit / total:.1f}%)")
        groups = file_group_figures(kind, per_file)
        for label, (hit, total) in groups.items():
            print(f"{label} files: {hit}/{total} branches ({100 * hit / total:.1f}%)")
        print(f"unreached branches ({len(unreached)}):")
        for line in unreached:
            print(f"  {line}")
        print()
        figures[kind] = {
            "runs": args.runs,
            "seed": args.seed,
            "wall_s": report["wall_s"],
            "new_violations": report["new_violations"],
            "branches": {p: {"hit": h, "total": t} for p, (h, t) in per_package.items()},
            "files": {f: {"hit": h, "total": t} for f, (h, t) in per_file.items()},
            "file_groups": {g: {"hit": h, "total": t} for g, (h, t) in groups.items()},
            "unreached": unreached,
        }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
