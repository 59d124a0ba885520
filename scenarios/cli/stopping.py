"""Ctrl-C and SIGTERM for long commands: the first one stops the command, every later one is
ignored while it cleans up.

Python's default SIGINT handler raises :class:`KeyboardInterrupt` on *every* Ctrl-C, so a
second Ctrl-C (users press it twice; ``timeout -s INT`` and process managers repeat it) lands
inside the cleanup of the first — killing worker processes, writing the partial results — and
the command exits with a traceback or silently, losing what had finished. :func:`stopping`
installs a handler that raises once and sets both signals to ``SIG_IGN`` before it does; the
command then always ends the same way: one line, exit ``128 + signal`` (130 for Ctrl-C, 143 for
SIGTERM, as a shell reports a process the signal killed).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from scenarios.analysis.interrupt import start_watchdog

__all__ = ["Stop", "stopping", "quiet_ctrl_c"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stop:
    """What stopped the command: ``signum`` (``None`` while nothing has)."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def ignore_further(self) -> None:
        """Ignore SIGINT and SIGTERM from now on (a ``KeyboardInterrupt`` that did not come
        through :func:`stopping`'s handler arrived; the command is cleaning up). The handlers
        then stay as they are when the block ends: a Ctrl-C while the process exits must not
        find a Python handler, which Python resets to the default (death by SIGINT) as it
        finalizes."""
        if self.signum is None:
            self.signum = signal.SIGINT
            start_watchdog(self.exit_code)
        if threading.current_thread() is threading.main_thread():
            for each in _SIGNALS:
                signal.signal(each, signal.SIG_IGN)

    @property
    def exit_code(self) -> int:
        """``128 + signal``; 130 when the ``KeyboardInterrupt`` came from elsewhere."""
        return 128 + (self.signum or signal.SIGINT)

    @property
    def name(self) -> str:
        """``SIGINT`` or ``SIGTERM``."""
        return signal.Signals(self.signum or signal.SIGINT).name


def _interrupted(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stderr.write("groupsim: interrupted\n")
    raise SystemExit(128 + signum)


def quiet_ctrl_c() -> None:
    """Until a command takes charge of Ctrl-C (:func:`stopping`), the first one ends
    ``groupsim`` with one line, ``groupsim: interrupted``, and exit 130 — ``SystemExit``, so
    ``finally`` blocks run — and later ones are ignored. Called by the program before its
    slow imports: without it a Ctrl-C while Python imports the command prints a traceback,
    and one inside a command that does not handle it exits 130 silently (typer's way)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupted)


@contextlib.contextmanager
def stopping() -> Iterator[Stop]:
    """Within the block, the first SIGINT or SIGTERM raises :class:`KeyboardInterrupt` and
    every later one is ignored (for the rest of the process: it is about to exit). Without a
    signal the previous handlers come back at the end, where the block's own handler is
    still in place (code inside may have set its own, which then stays). Outside the main
    thread (where Python cannot set handlers) it changes nothing."""
    stop = Stop()

    def handler(signum: int, frame: Any) -> None:
        # Signals that arrive before SIG_IGN takes effect run this handler again, nested in
        # this one (Python runs a pending handler at the next bytecode boundary, even inside
        # signal.signal): only the first may raise, or the second KeyboardInterrupt escapes
        # from within the first handler's clean-up with a traceback.
        if stop.signum is not None:
            return
        stop.signum = signum
        for each in _SIGNALS:
            signal.signal(each, signal.SIG_IGN)
        start_watchdog(stop.exit_code)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {each: signal.signal(each, handler) for each in _SIGNALS}
    try:
        yield stop
    finally:
        if stop.signum is None:
            # Only a handler that is still this block's comes back to the previous one: a
            # command that took Ctrl-C over inside the block (a Spark campaign's
            # plain_sigint, which sets SIG_IGN after its first Ctrl-C and ends with one line
            # of its own) must keep what it set, or a second Ctrl-C during the exit finds
            # quiet_ctrl_c's handler and prints a second line from threading's shutdown.
            try:
                for each, old in previous.items():
                    if signal.getsignal(each) is handler:
                        signal.signal(each, old)
            except KeyboardInterrupt:
                # A Ctrl-C as the block ends: signal.signal runs a pending handler first, so
                # this block's handler raised from inside the restore, over the block's own
                # outcome (typer.Exit), and printed a traceback. The work is over: the
                # command ends as it was ending; the handler has set both signals to SIG_IGN,
                # so nothing interrupts the exit.
                pass
