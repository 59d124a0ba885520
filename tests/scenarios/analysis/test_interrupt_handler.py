"""The Spark commands' SIGINT handler (``scenarios.analysis.interrupt``), without a JVM."""

from __future__ import annotations

import signal
import warnings

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


def test_after_ctrl_c_the_jvm_gone_warning_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SparkContext.stop`` warns when the JVM, which got the Ctrl-C too, is gone
    (SPARK-18523); after the first Ctrl-C that warning would be two more lines beside the one
    the user needs (a fresh-clone CI saw it in
    ``test_ctrl_c_while_spark_starts_is_one_line[8.0-chaos]``). Other warnings still show."""
    monkeypatch.setattr(interrupt, "start_watchdog", lambda code: None)
    previous = signal.getsignal(signal.SIGINT)
    gone = "Unable to cleanly shutdown Spark JVM process. It is possible that the process died"

    def shown() -> list[str]:
        with warnings.catch_warnings(record=True) as caught:  # the filters in force kept
            warnings.warn(gone, RuntimeWarning, stacklevel=1)
            warnings.warn("another warning", RuntimeWarning, stacklevel=1)
        return [str(w.message) for w in caught]

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        try:
            interrupt.plain_sigint()
            assert shown() == [gone, "another warning"]  # before Ctrl-C both show
            with pytest.raises(KeyboardInterrupt):
                interrupt._on_sigint(signal.SIGINT, None)
            assert shown() == ["another warning"]
        finally:
            signal.signal(signal.SIGINT, previous)
