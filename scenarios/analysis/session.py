"""Creating the SparkSession groupsim runs on.

Defaults (each can be overridden with ``conf``): the web UI off (``spark.ui.enabled=false``),
Hadoop's ``fs.permissions.umask-mode`` set to the process's umask (files Spark writes get the
permissions a plain ``open`` would give them),
no console progress bar (groupsim draws its own), logs at ERROR through a log4j2 file
written to the temp directory, ``spark.sql.shuffle.partitions`` small, and in local mode the
driver bound to 127.0.0.1 (``spark.driver.bindAddress``/``spark.driver.host``) with 2 GB of
memory. Executors run Python with the driver's interpreter: ``PYSPARK_PYTHON`` is set to
``sys.executable`` (in local mode always; on a cluster only when it is not set, since the
cluster's nodes may keep Python elsewhere; see docs/sweeps.md).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scenarios.eventlog.atomic import current_umask

__all__ = ["make_session", "spark_problem", "is_local_master", "jvm_log_path", "DEFAULT_MASTER"]

DEFAULT_MASTER = "local[*]"

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.shutdown.name = org.apache.spark.util.ShutdownHookManager
logger.shutdown.level = off
logger.blocks.name = org.apache.spark.storage
logger.blocks.level = off
"""


def is_local_master(master: str | None) -> bool:
    """True for ``local``, ``local[N]``, ``local[*]``, ``local[N,F]`` (and no master)."""
    return master is None or master == "local" or master.startswith("local[")


def spark_problem() -> str | None:
    """Why a SparkSession cannot be started here (one line), or ``None`` when it can:
    pyspark, pandas or pyarrow not importable, or no ``java`` 17+ (``JAVA_HOME`` or PATH)."""
    for module, extra in (("pyspark", "pyspark"), ("pyarrow", "pyarrow"), ("pandas", "pandas")):
        try:
            __import__(module)
        except ImportError:
            return f"{extra} is not installed (install the spark extra: pip install -e '.[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        return "no Java runtime (Spark needs Java 17+: set JAVA_HOME or put java on PATH)"
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        ).stderr
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {java}: {exc}"
    version = _java_major(out)
    if version is not None and version < 17:
        return f"Java {version} found; Spark 4 needs Java 17+"
    return None


def _java_major(text: str) -> int | None:
    import re

    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def make_session(
    master: str | None = DEFAULT_MASTER,
    *,
    app_name: str = "groupsim",
    conf: Mapping[str, str] | None = None,
) -> Any:
    """Get or create the SparkSession (``pyspark.sql.SparkSession``).

    Args:
        master: any Spark master URL (``local[2]``, ``spark://host:7077``, ``yarn``), or
            ``None`` to take it from ``spark-submit``.
        app_name: the application name.
        conf: more Spark settings (``{"spark.executor.memory": "4g"}``), applied last.

    Raises:
        RuntimeError: :func:`spark_problem` names why Spark cannot start.
    """
    problem = spark_problem()
    if problem is not None:
        raise RuntimeError(problem)
    local = is_local_master(master)
    if local or "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if local or "PYSPARK_DRIVER_PYTHON" not in os.environ:
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

    from pyspark.sql import SparkSession

    settings: dict[str, str] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.python.worker.reuse": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_log4j2_file()}",
        # Hadoop's local filesystem gives files 644 and directories 755 whatever the process's
        # umask (its own fs.permissions.umask-mode, default 022): pass the real one, so that
        # runs/ and aggregates/ get the permissions every other groupsim output gets
        "spark.hadoop.fs.permissions.umask-mode": f"{current_umask():03o}",
    }
    if local:
        settings.update(
            {
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.driver.host": "127.0.0.1",
                "spark.driver.memory": "2g",
            }
        )
    settings.update(conf or {})

    from pyspark import SparkConf, SparkContext

    # SparkContext installs its own SIGINT handler at the end of its __init__, which cancels
    # the jobs through the JVM from inside the py4j call the Ctrl-C interrupted (pages of
    # py4j tracebacks while Spark starts); the caller's handler goes back at once
    sigint = signal.getsignal(signal.SIGINT)
    main_thread = threading.current_thread() is threading.main_thread()
    if SparkContext._active_spark_context is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Start the JVM ourselves so that its console (start-up banners, JVM warnings) goes
        # to a log file instead of the user's terminal.
        from pyspark.java_gateway import launch_gateway

        spark_conf = SparkConf(loadDefaults=True).setAppName(app_name)
        if master is not None:
            spark_conf = spark_conf.setMaster(master)
        for key, value in settings.items():
            spark_conf = spark_conf.set(key, value)
        log = open(jvm_log_path(), "ab")  # noqa: SIM115 - the JVM keeps writing to it
        gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
        SparkContext(conf=spark_conf, gateway=gateway)
        if main_thread and sigint is not None:
            signal.signal(signal.SIGINT, sigint)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if main_thread and sigint is not None:
        signal.signal(signal.SIGINT, sigint)
    session.sparkContext.setLogLevel("ERROR")
    return session


def jvm_log_path() -> Path:
    """Where the JVM's console output goes: ``<tmp>/groupsim-spark-<user>.log``."""
    user = os.environ.get("USER") or (str(os.getuid()) if hasattr(os, "getuid") else "user")
    return Path(tempfile.gettempdir()) / f"groupsim-spark-{user}.log"


def _log4j2_file() -> Path:
    path = Path(tempfile.gettempdir()) / "groupsim-spark-log4j2.properties"
    if not path.exists() or path.read_text(encoding="utf-8") != _LOG4J2:
        from scenarios.eventlog.atomic import atomic_write_text

        atomic_write_text(path, _LOG4J2)
    return path
