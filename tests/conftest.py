"""Shared test set-up: hypothesis profiles (``HYPOTHESIS_PROFILE=long`` for deeper runs) and
the ``running_in_group`` fixture of the Ctrl-C tests."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from hypothesis import settings

settings.register_profile("default", max_examples=50, deadline=None)
settings.register_profile("long", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _running_in_group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` still running. A zombie has exited: whoever inherited
    it reaps it, and a container's init may be slow to."""
    import subprocess
    from pathlib import Path

    found = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout
    running = []
    for pid in found.split():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            running.append(int(pid))
    return running


@pytest.fixture
def running_in_group() -> Callable[[int], list[int]]:
    """``running_in_group(pgid)``: pids of the process group still running (zombies aside)."""
    return _running_in_group


# --------------------------------------------------------------------------------------------
# The Kafka oracle (tests/kafka_oracle): one harness JVM for the whole session
# --------------------------------------------------------------------------------------------

_oracle_state: dict[str, object] = {}


@pytest.fixture(scope="session")
def kafka_oracle(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A running :class:`tests.kafka_oracle.oracle.KafkaOracle` (Kafka's own classes).

    Skips with one line where Java or Maven is missing, or where Maven cannot build the harness
    (unless ``GROUPSIM_REQUIRE_KAFKA=1``, as ``.ci/run`` sets, which turns that into a failure).
    The JVM is stopped by its pid at the end of the session, also when tests fail.
    """
    from tests.kafka_oracle import oracle as oracle_mod

    if "skip" in _oracle_state:
        pytest.skip(str(_oracle_state["skip"]))
    reason = oracle_mod.unavailable_reason()
    if reason:
        _oracle_state["skip"] = reason
        pytest.skip(reason)
    try:
        oracle = oracle_mod.start(tmp_path_factory.mktemp("kafka-oracle"))
    except oracle_mod.OracleUnavailable as e:
        if os.environ.get("GROUPSIM_REQUIRE_KAFKA") == "1":
            raise
        _oracle_state["skip"] = str(e)
        pytest.skip(str(e))
    _oracle_state["oracle"] = oracle
    try:
        yield oracle
    finally:
        oracle.close()


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """One closing line for the Kafka oracle: why it was skipped, or what it compared."""
    if "skip" in _oracle_state:
        terminalreporter.write_line(str(_oracle_state["skip"]))
    oracle = _oracle_state.get("oracle")
    if oracle is not None:
        counts = oracle.compared  # type: ignore[attr-defined]
        figures = ", ".join(f"{label} {n}" for label, n in sorted(counts.items())) or "none"
        terminalreporter.write_line(
            f"Kafka oracle {oracle.version} ({oracle.commit}): examples equal to Kafka: {figures}"  # type: ignore[attr-defined]
        )
