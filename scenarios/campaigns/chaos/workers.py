"""The worker processes of a chaos campaign: ``jobs`` forked processes, each with its own pipe.

Why not :class:`multiprocessing.pool.Pool`: its workers share one task queue guarded by one
lock, and a worker killed while it holds that lock (Ctrl-C reaches the whole process group,
``terminate()`` sends SIGTERM at any moment) leaves ``terminate()``/``close()``/``join()``
waiting for ever — ``groupsim chaos`` once sat 11 minutes there after a Ctrl-C. Here every
worker has a pipe of its own and shares nothing with the others, so the parent can SIGKILL
them all at any moment and reap them at once (:meth:`WorkerPool.kill`).

A worker ignores SIGINT (the terminal's Ctrl-C goes to the whole process group; the parent
decides what a Ctrl-C means) and dies with its parent, however the parent ends (SIGTERM,
SIGKILL, a crash): on Linux it asks the kernel with ``prctl(PR_SET_PDEATHSIG, SIGKILL)``;
elsewhere a daemon thread checks ``getppid()`` twice a second. It also ends when the parent
closes its pipe (:meth:`WorkerPool.close`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from typing import Any

__all__ = ["WorkerPool", "WorkerDied"]

_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _died(process: Any) -> WorkerDied:
    """The error for a worker that ended without answering (reaped first, for its exit code)."""
    process.join(1.0)
    return WorkerDied(f"worker process {process.pid} ended (exit code {process.exitcode})")


class WorkerDied(RuntimeError):
    """A worker process ended in the middle of a task (killed from outside, out of memory)."""


class WorkerPool:
    """``jobs`` worker processes running ``func(arg)`` calls sent one at a time.

    Use it as a context manager: the workers start on entry; a normal exit ends them politely
    (:meth:`close`), an exception (a Ctrl-C among them) kills them (:meth:`kill`). Either way no
    worker outlives the ``with`` block.

    Args:
        jobs: worker processes (≥ 1).
    """

    def __init__(self, jobs: int) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be >= 1, got {jobs}")
        self.jobs = jobs
        self._workers: list[tuple[Any, Connection]] = []  # (process, parent's end)

    def __enter__(self) -> WorkerPool:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            self.close()
        else:
            self.kill()

    @property
    def pids(self) -> list[int]:
        """The workers' process ids."""
        return [process.pid for process, _ in self._workers]

    def start(self) -> None:
        """Fork the workers (spawn where there is no fork). SIGINT and SIGTERM are blocked
        while they start, so that a Ctrl-C can neither reach a child before it ignores SIGINT
        nor interrupt the parent between starting a worker and recording it."""
        methods = multiprocessing.get_all_start_methods()
        # fork where the OS has it: children start at once, never re-import ``__main__`` and
        # inherit what the parent patched (tests plant bugs that way)
        context: Any = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        blocked = hasattr(signal, "pthread_sigmask")
        if blocked:
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            for _ in range(self.jobs - len(self._workers)):
                mine, theirs = context.Pipe()
                process = context.Process(
                    target=_serve, args=(theirs, os.getpid()), name="groupsim-chaos", daemon=True
                )
                process.start()
                theirs.close()
                self._workers.append((process, mine))
        finally:
            if blocked:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def imap_unordered(self, func: Callable[[Any], Any], args: Iterable[Any]) -> Iterator[Any]:
        """``func(arg)`` for every ``arg``, one call per worker at a time, yielded as they
        finish. ``func`` must be picklable (a module-level function).

        Raises:
            WorkerDied: a worker ended without answering.
            Exception: what ``func`` raised in a worker (re-raised here).
        """
        pending = iter(args)
        busy: dict[Connection, Any] = {}

        def feed(process: Any, conn: Connection) -> None:
            for arg in pending:
                try:
                    conn.send((func, arg))
                except OSError:  # the worker died before its job reached it (broken pipe)
                    raise _died(process) from None
                busy[conn] = process
                return

        for process, conn in self._workers:
            feed(process, conn)
        while busy:
            for ready in wait(list(busy)):
                assert isinstance(ready, Connection)
                process = busy.pop(ready)
                try:
                    ok, value = ready.recv()
                except (EOFError, OSError):
                    raise _died(process) from None
                feed(process, ready)
                if not ok:
                    raise value
                yield value

    def kill(self) -> None:
        """SIGKILL every worker and reap it (at most a second each; SIGKILL cannot be
        ignored, so it takes milliseconds)."""
        for process, _ in self._workers:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                process.kill()
        self._reap(1.0)

    def close(self) -> None:
        """Tell every idle worker to exit and wait for it; kill any that does not within
        a second."""
        for _, conn in self._workers:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
        self._reap(1.0)

    def _reap(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for process, conn in self._workers:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.exitcode is None:
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    process.kill()
                process.join(timeout_s)
            conn.close()
        self._workers = []


def _serve(conn: Connection, parent: int) -> None:
    """A worker's loop: ``(func, arg)`` in, ``(True, result)`` or ``(False, exception)`` out;
    ``None`` or a closed pipe ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with(parent)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        func, arg = item
        try:
            reply: tuple[bool, Any] = (True, func(arg))
        except Exception as exc:  # sent to the parent, which raises it
            reply = (False, exc)
        try:
            conn.send(reply)
        except Exception as exc:  # an unpicklable result or exception
            conn.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """End this process when ``parent`` ends: PR_SET_PDEATHSIG on Linux, else a watcher
    thread. (PR_SET_PDEATHSIG fires when the parent *thread* that forked this process ends:
    :meth:`WorkerPool.start` forks from the caller's thread, the main one for the CLI.)"""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent ended before prctl took effect
                    os._exit(1)
                return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="groupsim-parent-watch", daemon=True).start()
