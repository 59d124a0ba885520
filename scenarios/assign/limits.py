"""Size limits of ``groupsim assign`` input, checked right after JSON decoding (before any
assignor runs; :mod:`scenarios.input.limits`, docs/limits.md).

Only sizes are checked here: a value of the wrong type is left to the input readers, which
name it with its key path.
"""

from __future__ import annotations

from typing import Any

from scenarios.input.limits import check_limit

__all__ = ["check_assign_limits"]


def _count(value: Any) -> int:
    return len(value) if isinstance(value, dict | list) else 0


def check_assign_limits(doc: Any) -> None:
    """Raise :class:`scenarios.input.limits.LimitExceeded` when a size of a decoded ``assign``
    input exceeds its limit: Connect rounds, members, connectors, tasks per connector and
    tasks per round; Streams clients and tasks.

    Raises:
        LimitExceeded: naming the key path, the value and the limit.
    """
    if not isinstance(doc, dict):
        return
    rounds = doc.get("rounds")
    if isinstance(rounds, list):
        check_limit("rounds", len(rounds), "rounds")
        for r, round_ in enumerate(rounds):
            if not isinstance(round_, dict):
                continue
            check_limit(f"rounds[{r}].members", _count(round_.get("members")), "members")
            connectors = round_.get("connectors")
            if not isinstance(connectors, dict):
                continue
            check_limit(f"rounds[{r}].connectors", len(connectors), "connectors")
            total = 0
            for name, tasks in connectors.items():
                if isinstance(tasks, int) and not isinstance(tasks, bool):
                    check_limit(f"rounds[{r}].connectors.{name}", tasks, "tasks_per_connector")
                    total += max(0, tasks)
            check_limit(f"rounds[{r}].connectors", total, "tasks")
    check_limit("clients", _count(doc.get("clients")), "members")
    tasks = doc.get("tasks")
    if isinstance(tasks, dict):
        total = _count(tasks.get("stateful")) + _count(tasks.get("stateless"))
        check_limit("tasks", total, "tasks")
