"""Ctrl-C during ``groupsim sweep``: what :func:`scenarios.analysis.pipeline.run_sweep` does
when SIGINT arrives (cancel the Spark jobs, keep every finished batch, leave no ``sweep.json``
behind when no run was written) and the exception it raises."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "SweepInterrupted",
    "quiet_interrupt",
    "drop_empty_meta",
    "plain_sigint",
    "start_own_session",
    "stop_jvm",
    "kill_descendants",
    "start_watchdog",
]


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped :func:`run_sweep` after its Spark jobs were cancelled.

    Attributes:
        written: runs in ``out/runs/`` now (earlier invocations' included); the runs of the
            batch that was interrupted are not among them and run again on resume.
        out: the output directory.
    """

    def __init__(self, written: int, out: str) -> None:
        super().__init__(f"interrupted after {written} runs")
        self.written = written
        self.out = out


def quiet_interrupt(spark: Any) -> None:
    """After Ctrl-C: cancel the Spark jobs and silence py4j's logging of the connection that
    the interrupt broke (its tracebacks would bury the one line the user needs)."""
    _mark_interrupted()
    with contextlib.suppress(Exception):
        spark.sparkContext.cancelAllJobs()


def drop_empty_meta(out: str) -> None:
    """Remove ``sweep.json`` when no run was ever written (``runs/`` is absent): an
    interrupted first invocation leaves no directory that looks like a sweep's results."""
    if "://" in out and not out.startswith("file://"):
        return  # a URL: sweep.json is written for local paths only
    directory = Path(out.removeprefix("file://"))
    if not (directory / "runs").exists():
        (directory / "sweep.json").unlink(missing_ok=True)


class _AfterInterrupt(logging.Filter):
    """Once Ctrl-C arrived, drop py4j's log records: it logs the call the interrupt broke, and
    closing that connection, as full tracebacks (some with ``logging.exception`` on the root
    logger). Before an interrupt nothing is dropped."""

    interrupted = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.interrupted:
            return True
        return not (record.name.startswith("py4j") or "while sending command" in record.msg)


_FILTER = _AfterInterrupt()

#: What ``SparkContext.stop`` warns when the JVM, which gets the Ctrl-C too, is already gone
#: (SPARK-18523): after an interrupt that is expected, and noise beside the one line.
_JVM_GONE_WARNING = "Unable to cleanly shutdown Spark JVM process"


def _mark_interrupted() -> None:
    """From now on, drop py4j's log records (:class:`_AfterInterrupt`) and pyspark's warning
    that the JVM stopped uncleanly."""
    import warnings

    _FILTER.interrupted = True
    warnings.filterwarnings("ignore", message=_JVM_GONE_WARNING, category=RuntimeWarning)


def _on_sigint(signum: int, frame: Any) -> None:
    import signal

    # A Ctrl-C that arrives before SIG_IGN takes effect runs this handler again, nested in
    # this one (Python runs a pending handler at the next bytecode boundary, even inside
    # signal.signal) or in the command's clean-up: only the first may raise, or the second
    # KeyboardInterrupt escapes the clean-up and Python dies of SIGINT (exit -2, no line).
    if _FILTER.interrupted:
        return
    _mark_interrupted()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # later Ctrl-Cs: the command is stopping
    start_watchdog(128 + signum)
    raise KeyboardInterrupt


#: Seconds a stopping command may take to clean up before :func:`start_watchdog` ends it.
CLEANUP_LIMIT_S = 30.0

_watchdog_started = False


def start_watchdog(exit_code: int) -> None:
    """The last resort that makes a stop always end (started once, by the first Ctrl-C): if
    the process is still cleaning up :data:`CLEANUP_LIMIT_S` later — a library call that
    never returns, such as a py4j call on the connection the Ctrl-C broke — SIGKILL its child
    processes, print one line and exit with ``exit_code`` at once."""
    import os
    import sys
    import threading
    import time

    global _watchdog_started
    if _watchdog_started:
        return
    _watchdog_started = True

    def expire() -> None:
        time.sleep(CLEANUP_LIMIT_S)
        kill_descendants()
        sys.stderr.write("groupsim: interrupted; cleaning up took too long, stopped\n")
        sys.stderr.flush()
        os._exit(exit_code)

    threading.Thread(target=expire, name="groupsim-stop-watchdog", daemon=True).start()


def plain_sigint() -> None:
    """Make the first Ctrl-C a plain :class:`KeyboardInterrupt` in the driver, and ignore
    every later one while the command stops (call in the main thread before the session
    starts, and again once it exists). pyspark's own SIGINT handler calls into the JVM from
    inside the interrupted py4j call (a reentrant call that fails with pages of tracebacks);
    :func:`quiet_interrupt` cancels the jobs afterwards instead. From the first Ctrl-C on,
    py4j's log records (the broken call's tracebacks) and pyspark's warning that the JVM
    stopped uncleanly are dropped."""
    import signal
    import threading

    _FILTER.interrupted = False
    for name in ("", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(name).addFilter(_FILTER)
    _quiet_accumulator_server()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)


def start_own_session(
    master: str | None,
    app_name: str,
    conf: Mapping[str, str] | None,
    out: str,
    drop_meta: Callable[[str], None],
) -> Any:
    """Start the command's own Spark session (:func:`scenarios.analysis.session.make_session`)
    with Ctrl-C made plain (:func:`plain_sigint`) before and after the JVM starts.

    Args:
        master: the Spark master URL (``None``: local, as ``make_session`` decides).
        app_name: the Spark application's name.
        conf: extra Spark settings (``spark.*`` keys).
        out: the command's output path, handed to ``drop_meta`` on Ctrl-C.
        drop_meta: removes the metadata file the command wrote for ``out`` before its runs.

    Returns:
        the ``pyspark.sql.SparkSession``.

    Raises:
        SweepInterrupted: Ctrl-C while the JVM started (0 runs written; ``drop_meta(out)``
            removed the metadata file written for no run).
    """
    from scenarios.analysis.session import make_session

    plain_sigint()  # Ctrl-C while the JVM starts: py4j's tracebacks stay quiet too
    try:
        spark = make_session(master, app_name=app_name, conf=conf)
    except KeyboardInterrupt:
        drop_meta(out)
        raise SweepInterrupted(0, out) from None
    plain_sigint()
    return spark


def _quiet_accumulator_server() -> None:
    """pyspark's accumulator server (a ``socketserver.TCPServer`` in the driver) prints a
    traceback to stderr when the JVM — which gets Ctrl-C too — drops its connection
    mid-request; once Ctrl-C arrived that traceback is noise, so it is dropped."""
    import sys

    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    server = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
    if server is None or getattr(server, "_groupsim_quiet", False):
        return
    report = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if not _FILTER.interrupted:
            report(request, client_address)

    server.handle_error = handle_error
    server._groupsim_quiet = True


def stop_jvm(timeout_s: float = 10.0) -> None:
    """After an interrupted sweep (its session stopped): close the py4j gateway and wait for
    the JVM to exit — it exits when its stdin closes, and Spark's Python daemon with it — so
    no process outlives ``groupsim``; killed if it takes longer than ``timeout_s``."""
    import subprocess
    import sys

    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:  # Ctrl-C while the JVM was starting: pyspark holds no handle to it
        _terminate_children(timeout_s)
        return
    proc = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is None:
        return
    workers = _descendants(proc.pid)  # Spark's Python daemon and its workers
    with contextlib.suppress(Exception):
        if proc.stdin is not None:
            proc.stdin.close()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    _wait_gone(workers, timeout_s)


def _terminate_children(timeout_s: float) -> None:
    """SIGTERM every process below this one (a JVM whose launch was interrupted, before
    pyspark kept a handle on it: it ignores SIGINT and has not started watching its stdin),
    then wait for them; killed after ``timeout_s``."""
    import os
    import signal

    children = _descendants(os.getpid())
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    _wait_gone(children, timeout_s)


def kill_descendants() -> None:
    """SIGKILL every process below this one (the last resort of a stop that hangs)."""
    import os
    import signal

    for pid in _descendants(os.getpid()):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux ``/proc``; elsewhere none are known)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # "pid (comm) state ppid ...": comm may hold spaces, so split after its ')'
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def _wait_gone(pids: list[int], timeout_s: float) -> None:
    """Wait until none of ``pids`` runs (they exit once the JVM closed their pipes); kill
    those still running after ``timeout_s``."""
    import os
    import signal
    import time

    def alive(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state != "Z"  # a zombie has exited; init reaps it

    deadline = time.monotonic() + timeout_s
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def save_finished_rows(out: str, rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> int:
    """Write the ``runs`` rows of an interrupted batch's finished runs to ``out/runs/`` with
    pyarrow (no Spark job: the user is waiting), as one more Parquet file of the dataset.
    Only for a local ``out`` whose events, if any, the executors wrote (each run's file exists
    before its row reaches the driver). Returns the rows written (0 when none or not local).
    """
    if not rows or ("://" in out and not out.startswith("file://")):
        return 0
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq

    from scenarios.analysis.arrow import arrow_type

    by_id = {row["run_id"]: row for row in rows}  # a retried task reports twice
    schema = pa.schema([pa.field(name, arrow_type(kind)) for name, kind in columns])
    table = pa.Table.from_pylist(
        [{name: row.get(name) for name, _ in columns} for row in by_id.values()], schema=schema
    )
    directory = Path(out.removeprefix("file://")) / "runs"
    directory.mkdir(parents=True, exist_ok=True)
    name = f"part-interrupted-{uuid.uuid4().hex}.parquet"
    tmp = directory / f".{name}.tmp"
    try:
        pq.write_table(table, tmp)
        tmp.replace(directory / name)
    finally:
        tmp.unlink(missing_ok=True)
    return len(by_id)
