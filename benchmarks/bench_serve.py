"""``groupsim serve`` at scale: N real aiokafka consumers join one group over loopback.

Run: ``python benchmarks/bench_serve.py [--clients 200] [--delay-ms 1000]``. Prints a table:
the time from the first and from the last member joining to the group being Stable with every
member's SyncGroup answered, and whether the first is within ``group.initial.rebalance.delay.ms``
+ 2 s (Kafka's initial delay re-arms once more when members arrived during the first one, so
the join phase alone takes up to two delays). The consumers share one asyncio loop
in a thread; the broker runs under trio in the main thread (same process, same GIL).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordinator.config import CoordinatorConfig  # noqa: E402
from scenarios.serve import ServeOptions, open_broker  # noqa: E402

GROUP = "bench"
TOPIC = "bench"


def _clients(port: int, count: int, stop: threading.Event, failures: list[str]) -> None:
    from aiokafka import AIOKafkaConsumer

    async def member(i: int) -> None:
        consumer = AIOKafkaConsumer(
            TOPIC,
            bootstrap_servers=f"127.0.0.1:{port}",
            group_id=GROUP,
            client_id=f"b{i}",
            session_timeout_ms=30_000,
            heartbeat_interval_ms=3_000,
            fetch_max_wait_ms=500,
            request_timeout_ms=60_000,
        )
        try:
            await consumer.start()
            while not stop.is_set():
                await consumer.getmany(timeout_ms=200)
        except Exception as exc:  # reported in the table
            failures.append(f"b{i}: {exc!r}")
        finally:
            await consumer.stop()

    async def everyone() -> None:
        await asyncio.gather(*(member(i) for i in range(count)))

    asyncio.run(everyone())


async def _run(count: int, delay_ms: int, partitions: int) -> dict[str, float]:
    options = ServeOptions(
        port=0,
        topics={TOPIC: partitions},
        coordinator=CoordinatorConfig(initial_rebalance_delay_ms=delay_ms),
        fetch_wait_cap_ms=500,
    )
    stop = threading.Event()
    failures: list[str] = []
    async with open_broker(options) as broker:
        started = time.perf_counter()
        thread = threading.Thread(
            target=_clients, args=(broker.port, count, stop, failures), daemon=True
        )
        thread.start()
        stable_at = None
        with trio.move_on_after(120):
            while True:
                snap = broker.snapshot(GROUP)
                answered = sum(
                    1
                    for r in broker.log.records
                    if r["kind"] == "wire_response"
                    and r["api"] == "SyncGroup"
                    and r["error"] == "NONE"
                    and r.get("generation") == snap.generation
                )
                if snap.state == "Stable" and len(snap.members) == count and answered >= count:
                    stable_at = broker.now_ms()
                    break
                await trio.sleep(0.02)
        stop.set()
        await trio.to_thread.run_sync(thread.join, 60)
        added = [r["t_ms"] for r in broker.log.records if r["kind"] == "member_added"]
    if stable_at is None or not added:
        raise SystemExit(f"the group did not reach Stable with {count} members: {failures[:3]}")
    return {
        "clients": count,
        "first_join_ms": added[0],
        "last_join_ms": added[count - 1],
        "stable_ms": stable_at,
        "from_first_s": (stable_at - added[0]) / 1000,
        "from_last_s": (stable_at - added[count - 1]) / 1000,
        "wall_s": time.perf_counter() - started,
        "failures": len(failures),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--delay-ms", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=400)
    args = parser.parse_args()
    result = trio.run(_run, args.clients, args.delay_ms, args.partitions)
    budget = args.delay_ms / 1000 + 2
    print(
        f"{'clients':>8} {'delay':>7} {'first join->Stable':>19} {'last join->Stable':>18} "
        f"{'budget':>7} {'ok':>3}"
    )
    ok = result["from_first_s"] <= budget
    print(
        f"{result['clients']:>8} {args.delay_ms / 1000:>6.1f}s {result['from_first_s']:>18.2f}s "
        f"{result['from_last_s']:>17.2f}s {budget:>6.1f}s {'yes' if ok else 'NO':>3}"
    )
    print(
        f"(members joined over {(result['last_join_ms'] - result['first_join_ms']) / 1000:.2f} s; "
        f"{result['failures']} client failures; whole run {result['wall_s']:.1f} s wall)"
    )


if __name__ == "__main__":
    main()
