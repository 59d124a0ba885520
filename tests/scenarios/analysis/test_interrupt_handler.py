"""The Spark commands' SIGINT handler (``scenarios.analysis.interrupt``), without a JVM."""

from __future__ import annotations

import signal

import pytest

from scenarios.analysis import interrupt


def test_only_the_first_ctrl_c_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second Ctrl-C whose handler runs before SIG_IGN took effect (nested in the first, or
    in the command's clean-up) must not raise again: its KeyboardInterrupt would escape the
    clean-up and Python would die of SIGINT (exit -2, no line; a fresh-clone CI saw it in
    ``test_ctrl_c_while_spark_starts_is_one_line[1.0-chaos]``)."""
    watchdogs: list[int] = []
    monkeypatch.setattr(interrupt, "start_watchdog", watchdogs.append)
    previous = signal.getsignal(signal.SIGINT)
    try:
        interrupt.plain_sigint()
        with pytest.raises(KeyboardInterrupt):
            interrupt._on_sigint(signal.SIGINT, None)
        interrupt._on_sigint(signal.SIGINT, None)  # the second: ignored, no raise
        assert watchdogs == [130]
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        interrupt.plain_sigint()  # a new session: the next Ctrl-C raises again
        with pytest.raises(KeyboardInterrupt):
            interrupt._on_sigint(signal.SIGINT, None)
    finally:
        signal.signal(signal.SIGINT, previous)
