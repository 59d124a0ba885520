"""The campaign's worker processes (:mod:`scenarios.campaigns.chaos.workers`): results come
back, a worker's exception is raised in the parent, and no worker outlives the pool — killed,
closed, or when its parent dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scenarios.campaigns.chaos.workers import WorkerDied, WorkerPool

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

ROOT = Path(__file__).resolve().parents[4]


def _square(x: int) -> int:
    return x * x


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _gone(pids: list[int], limit_s: float = 5.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        alive = [p for p in pids if Path(f"/proc/{p}").exists() and _state(p) != "Z"]
        if not alive:
            return True
        time.sleep(0.02)
    return False


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def test_results_come_back_and_workers_end_with_the_block() -> None:
    with WorkerPool(2) as pool:
        pids = pool.pids
        assert sorted(pool.imap_unordered(_square, range(10))) == [x * x for x in range(10)]
    assert len(pids) == 2 and _gone(pids)


def test_an_exception_in_a_worker_is_raised_here_and_the_workers_are_killed() -> None:
    with pytest.raises(ValueError, match="three"), WorkerPool(2) as pool:
        pids = pool.pids
        list(pool.imap_unordered(_fail_on_three, range(6)))
    assert _gone(pids)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def test_kill_ends_busy_workers_at_once() -> None:
    """Ctrl-C (here a timer's) while both workers are in a minute-long call."""
    pool = WorkerPool(2)
    pool.start()
    pids = pool.pids
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            next(pool.imap_unordered(_sleep, [60.0, 60.0]))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        pool.kill()
    assert time.monotonic() - started < 2.0
    assert _gone(pids, 1.0)


def test_a_worker_killed_from_outside_is_reported() -> None:
    with pytest.raises(WorkerDied), WorkerPool(1) as pool:
        results = pool.imap_unordered(_sleep, [60.0])
        os.kill(pool.pids[0], signal.SIGKILL)
        next(results)


def test_workers_die_with_their_parent() -> None:
    """A parent killed with SIGKILL (no chance to clean up): its workers end too."""
    code = (
        f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
        "from scenarios.campaigns.chaos.workers import WorkerPool\n"
        "pool = WorkerPool(2); pool.start()\n"
        "print(*pool.pids, flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        proc.kill()
        proc.wait(timeout=10)
        assert _gone(pids)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
