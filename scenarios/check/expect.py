"""Check a scenario's ``[expect]`` table against a run summary
(:func:`scenarios.check.metrics.summarize`).

Each failed expectation gives one human line, ``"<key>: expected <what>, got <value>"``,
e.g. ``"max_rebalances: expected <= 40, got 53"``. Unset expectations (``None``) are not
checked. ``no_violations`` is true by default: any violation fails it unless its invariant is
listed in ``expected_violations``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from scenarios.check.summary_types import SummaryBase
from scenarios.input.schema import Expect

__all__ = ["evaluate", "normalize_protocol"]


def normalize_protocol(name: str | None) -> str | None:
    """A ``connect.protocol`` setting or JoinGroup protocol name → the protocol name
    (``eager`` → ``default``)."""
    if name is None:
        return None
    name = name.lower()
    return "default" if name == "eager" else name


def _ms(value: int | None) -> str:
    return "null" if value is None else f"{value} ms"


def evaluate(expect: Expect | Mapping[str, Any] | None, summary: SummaryBase) -> list[str]:
    """The failed expectations, one line each (``[]`` when all hold).

    Args:
        expect: the scenario's :class:`~scenarios.input.schema.Expect`, a mapping with its keys, or
            ``None`` (the defaults: only ``no_violations = true``).
        summary: the run's summary (Connect's or Streams').

    Raises:
        msgspec.ValidationError: ``expect`` is a mapping that is not a valid ``[expect]``.
    """
    if expect is None:
        expect = Expect()
    elif not isinstance(expect, Expect):
        expect = msgspec.convert(dict(expect), type=Expect)
    failures: list[str] = []

    if expect.converged is not None and summary.converged != expect.converged:
        want = "true" if expect.converged else "false"
        got = "true" if summary.converged else "false"
        failures.append(f"converged: expected {want}, got {got}")

    if expect.no_violations:
        allowed = set(expect.expected_violations)
        unexpected = {
            name: count
            for name, count in summary.violations.items()
            if count and name not in allowed
        }
        if unexpected:
            listed = ", ".join(f"{count} {name}" for name, count in sorted(unexpected.items()))
            failures.append(f"no_violations: expected none, got {listed}")

    rebalances = summary.rebalances
    if expect.max_rebalances is not None and rebalances > expect.max_rebalances:
        failures.append(f"max_rebalances: expected <= {expect.max_rebalances}, got {rebalances}")
    if expect.min_rebalances is not None and rebalances < expect.min_rebalances:
        failures.append(f"min_rebalances: expected >= {expect.min_rebalances}, got {rebalances}")

    task_max = summary.task_downtime_ms_max
    if expect.max_task_downtime_ms is not None and task_max > expect.max_task_downtime_ms:
        failures.append(
            f"max_task_downtime_ms: expected <= {expect.max_task_downtime_ms} ms, got {task_max} ms"
        )
    total = summary.task_downtime_ms_total
    if expect.max_total_downtime_ms is not None and total > expect.max_total_downtime_ms:
        failures.append(
            f"max_total_downtime_ms: expected <= {expect.max_total_downtime_ms} ms, got {total} ms"
        )

    movements = summary.task_movements
    if expect.max_task_movements is not None and movements > expect.max_task_movements:
        failures.append(
            f"max_task_movements: expected <= {expect.max_task_movements}, got {movements}"
        )

    if expect.final_protocol is not None:
        want_p = normalize_protocol(expect.final_protocol)
        got_p = normalize_protocol(summary.final_protocol)
        if want_p != got_p:
            failures.append(f"final_protocol: expected {want_p!r}, got {got_p!r}")

    if expect.max_time_to_converge_ms is not None:
        ttc = summary.time_to_converge_ms
        if ttc is None:
            failures.append(
                f"max_time_to_converge_ms: expected <= {expect.max_time_to_converge_ms} ms, "
                "got null (not converged)"
            )
        elif ttc > expect.max_time_to_converge_ms:
            failures.append(
                f"max_time_to_converge_ms: expected <= {expect.max_time_to_converge_ms} ms, "
                f"got {_ms(ttc)}"
            )
    return failures
