"""Shared set-up for the sweep/report tests: the ``spark`` marker and one SparkSession.

The marker is registered here (pyproject's pytest table is shared). Spark tests are skipped
with the reason when pyspark, pyarrow, pandas or Java 17+ is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "spark: needs pyspark and Java 17+ (skipped when they are missing)"
    )


def spark_skip_reason() -> str | None:
    from scenarios.analysis.session import spark_problem

    problem = spark_problem()
    return f"Spark unavailable: {problem}" if problem else None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] SparkSession for every Spark test (started once, ~5 s)."""
    reason = spark_skip_reason()
    if reason:
        pytest.skip(reason)
    from scenarios.analysis.session import make_session

    session = make_session("local[2]", app_name="groupsim tests")
    yield session
    session.stop()
