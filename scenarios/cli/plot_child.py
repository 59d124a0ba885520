"""``timeline.png`` drawn by a forked child process, so that importing matplotlib overlaps the run.

Importing matplotlib costs about as much CPU as the rest of a flagship ``groupsim run``
(docs/benchmarks.md, "Start-up"). :func:`start_plotter` forks a child at the start of the
command; the child imports :mod:`scenarios.cli.plots` (and matplotlib) while the parent loads
the scenario and simulates, then waits for the records. :meth:`ForkedPlotter.submit` hands it
the timeline series computed from the records (pickled through a pipe); the child sends the
PNG's bytes back and :meth:`ForkedPlotter.wait` writes them to the path, so the command's
outputs are complete when it exits. The child imports matplotlib and
:mod:`scenarios.cli.timeline_series` only: neither the kinds nor the event-log package. The
PNG is the one :func:`scenarios.cli.plots.write_timeline_png` writes in-process: same code,
same bytes.

Where ``os.fork`` is not the platform's safe default (anything but Linux) :func:`start_plotter`
returns ``None`` and the caller draws in-process.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["ForkedPlotter", "start_plotter", "start_early", "take_early"]


class ForkedPlotter:
    """A child process that draws one timeline (use :func:`start_plotter`)."""

    def __init__(self, pid: int, data_w: int, status_r: int) -> None:
        self._pid: int | None = pid
        self._data_w: int | None = data_w
        self._status_r: int | None = status_r
        self._path: Path | None = None

    def submit(self, records: Sequence[dict[str, Any]], path: Path) -> None:
        """Send the run's timeline and where to write the PNG; the child starts drawing.

        The series is computed here (:meth:`scenarios.kinds.GroupKind.timeline_series`, no
        matplotlib) from ``records``: this process has the kind's module loaded already, the
        child would have to import it, and the series pickles smaller than the records.
        """
        import pickle

        from scenarios import kinds
        from scenarios.cli.timeline_series import TimelineWords

        kind = kinds.of_log(records)
        words = TimelineWords(app=kind.words.app, member=kind.words.member)
        drawing = (kind.timeline_series(records), kind.standby_tasks, words)
        payload = pickle.dumps(drawing, protocol=pickle.HIGHEST_PROTOCOL)
        fd = self._data_w
        if fd is None:
            raise RuntimeError("a ForkedPlotter draws one timeline")
        self._data_w = None
        self._path = path
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(payload)
        except BrokenPipeError:
            pass  # the child is gone: wait() reports why

    def wait(self) -> None:
        """Wait for the child's PNG and write it (atomically) to the path given to
        :meth:`submit`; nothing is written if the child exited without drawing.

        Raises:
            OSError: the file cannot be written (no partial file is left behind), or the
                child failed with an ``OSError`` (its errno and message).
            RuntimeError: the child failed otherwise (its exception's type and message).
        """
        self._close_data()
        report = b""
        if self._status_r is not None:
            with os.fdopen(self._status_r, "rb") as status:
                self._status_r = None
                report = status.read()
        code = self._reap()
        if report:
            import pickle

            kind, args = pickle.loads(report)
            if kind == "png" and code == 0 and self._path is not None:
                from scenarios.eventlog.atomic import atomic_open

                with atomic_open(self._path, "wb") as out:
                    out.write(args)
                return
            if kind == "oserror":
                raise OSError(*args)
            raise RuntimeError(f"drawing timeline.png failed: {args}")
        if code != 0:
            raise RuntimeError(f"drawing timeline.png failed (child exit status {code})")

    def cancel(self) -> None:
        """Kill the child if it still runs (the run failed, or never came to plotting) and
        reap it; nothing happens after :meth:`wait`. A staged PNG it leaves is the caller's
        to discard."""
        self._close_data()
        if self._status_r is not None:
            os.close(self._status_r)
            self._status_r = None
        if self._pid is not None:
            import signal

            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
        self._reap()

    def _close_data(self) -> None:
        if self._data_w is not None:
            os.close(self._data_w)
            self._data_w = None

    def _reap(self) -> int:
        if self._pid is None:
            return 0
        pid, self._pid = self._pid, None
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except ChildProcessError:
            return 0


def start_plotter() -> ForkedPlotter | None:
    """Fork the drawing child now (Linux), or ``None`` where the caller should draw itself."""
    if not sys.platform.startswith("linux"):
        return None
    data_r, data_w = os.pipe()
    status_r, status_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(data_w)
        os.close(status_r)
        _child(data_r, status_w)
    os.close(data_r)
    os.close(status_w)
    return ForkedPlotter(pid, data_w, status_r)


_early: ForkedPlotter | None = None


def start_early(argv: Sequence[str]) -> None:
    """Fork the child before the CLI's own imports when ``argv`` (without the program name)
    is a plotting ``run``: ``run`` first, no ``--no-plot``, no help. :func:`take_early` hands
    it to the command; a child nobody takes is killed at exit (a usage error, say)."""
    global _early
    args = list(argv)
    if not args or args[0] != "run" or {"--no-plot", "--help", "-h"} & set(args):
        return
    _early = start_plotter()
    if _early is not None:
        import atexit

        atexit.register(_early.cancel)


def take_early() -> ForkedPlotter | None:
    """The child :func:`start_early` forked, once (``None`` if there is none)."""
    global _early
    plotter, _early = _early, None
    return plotter


def _child(data_r: int, status_w: int) -> None:
    code = 1
    try:
        # a short-lived process: no collections (which would walk, and so copy, every page
        # inherited from the parent)
        gc.disable()
        import pickle
        import warnings

        with warnings.catch_warnings():
            # the timeline is 2-D: matplotlib.projections registers the 3-D axes only when
            # mpl_toolkits.mplot3d imports (~35 ms CPU); a None module makes that import fail,
            # and its warning is silenced. Only in this throwaway process.
            warnings.simplefilter("ignore")
            sys.modules.setdefault("mpl_toolkits.mplot3d", None)  # type: ignore[arg-type]
            from scenarios.cli.plots import timeline_png  # overlaps the parent's run

        with os.fdopen(data_r, "rb") as inp:
            payload = inp.read()
        if payload:  # empty: the parent cancelled
            series, streams, words = pickle.loads(payload)
            png = timeline_png(series, streams=streams, words=words)
            # the parent writes the file: it has the atomic writer's package loaded already
            with contextlib.suppress(OSError):  # the parent gone: nothing to report to
                _write_all(status_w, pickle.dumps(("png", png), protocol=pickle.HIGHEST_PROTOCOL))
        code = 0
    except OSError as exc:
        _report(status_w, ("oserror", (exc.errno, exc.strerror or str(exc))))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, never raised here
        _report(status_w, ("error", f"{type(exc).__name__}: {exc}"))
    finally:
        os._exit(code)  # no atexit handlers, no flush of buffers copied from the parent


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _report(fd: int, what: tuple[str, Any]) -> None:
    import pickle

    with contextlib.suppress(OSError):  # the exit status still says it failed
        os.write(fd, pickle.dumps(what))
