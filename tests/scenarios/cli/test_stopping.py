"""scenarios.cli.stopping: which SIGINT/SIGTERM handlers a ``stopping()`` block leaves behind."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from scenarios.cli.stopping import stopping


@pytest.fixture
def handlers() -> Iterator[None]:
    """Every test starts from Python's defaults and leaves them as it found them."""
    saved = {each: signal.getsignal(each) for each in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for each, old in saved.items():
            signal.signal(each, old)


def _previous(signum: int, frame: object) -> None:  # a handler to come back
    raise AssertionError("not called")


def test_a_block_without_a_signal_gives_the_previous_handlers_back(handlers: None) -> None:
    signal.signal(signal.SIGINT, _previous)
    with stopping() as stop:
        assert signal.getsignal(signal.SIGINT) is not _previous
    assert stop.signum is None
    assert signal.getsignal(signal.SIGINT) is _previous


def test_a_handler_set_inside_the_block_stays(handlers: None) -> None:
    # a Spark campaign takes Ctrl-C over (plain_sigint) and, after its first Ctrl-C, ignores
    # the rest and ends the command itself: a second Ctrl-C during the exit must stay ignored,
    # not find the handler from before the block (it printed a second line at exit)
    signal.signal(signal.SIGINT, _previous)
    with pytest.raises(SystemExit), stopping() as stop:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise SystemExit(130)
    assert stop.signum is None
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # still the block's: restored


def test_the_first_signal_raises_and_later_ones_are_ignored(
    handlers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the first signal also starts the watchdog that ends a stuck clean-up: not in pytest
    monkeypatch.setattr("scenarios.cli.stopping.start_watchdog", lambda exit_code: None)
    signal.signal(signal.SIGINT, _previous)
    with pytest.raises(KeyboardInterrupt), stopping() as stop:
        signal.raise_signal(signal.SIGINT)
    assert stop.signum == signal.SIGINT and stop.exit_code == 130
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    signal.raise_signal(signal.SIGINT)  # ignored


def test_a_signal_as_the_block_ends_leaves_the_blocks_outcome(
    handlers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # signal.signal runs a pending handler before it sets the new one: a Ctrl-C that lands
    # while the block gives the previous handlers back raised KeyboardInterrupt from there,
    # over the command's own exit, with a traceback (test_interrupt's "writing" moment)
    monkeypatch.setattr("scenarios.cli.stopping.start_watchdog", lambda exit_code: None)
    real_signal = signal.signal

    def signal_with_one_pending(signum: int, new: object) -> object:
        monkeypatch.setattr("scenarios.cli.stopping.signal.signal", real_signal)
        signal.raise_signal(signal.SIGINT)  # runs the block's handler, as a pending one would
        return real_signal(signum, new)  # type: ignore[arg-type]

    signal.signal(signal.SIGINT, _previous)
    with pytest.raises(SystemExit) as ended, stopping() as stop:
        monkeypatch.setattr("scenarios.cli.stopping.signal.signal", signal_with_one_pending)
        raise SystemExit(1)
    assert ended.value.code == 1
    assert stop.signum == signal.SIGINT
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # later ones: ignored
