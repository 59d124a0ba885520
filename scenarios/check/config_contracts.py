"""Contract checker of KIP-415's config-offset rule on the Connect worker side, registered
with the others in :mod:`scenarios.check.contracts`.

``config_behind_assignment`` — KIP-415, ``DistributedHerder#handleRebalanceCompleted``: an
    assignment carries the leader's config topic offset (``ExtendedAssignment#offset``); a
    worker whose own config is behind it reads the config topic to that offset
    (``readConfigToEnd``) before it starts any of the assignment's work (``startWork``), and
    a worker that cannot reach it rejoins and starts nothing. So every ``connector_start`` /
    ``task_start`` of a generation carries a ``config_offset`` (the worker's view as it
    starts the work) at least the ``config_offset`` of that member's ``assignment`` (error 0)
    of the generation. A CONFIG_MISMATCH assignment (error 1) assigns nothing and is not
    judged here (``protocol_mismatch`` and liveness see a worker that never rejoins).
    Records without ``config_offset`` (logs written before the field) are not judged.
"""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.check.log_rules import Record, Violation, reads, violation

__all__ = ["CONFIG_BEHIND_ASSIGNMENT", "check_config_before_work"]

CONFIG_BEHIND_ASSIGNMENT = "config_behind_assignment"

_STARTS = {"connector_start": "connector", "task_start": "task"}


@reads("member_start", "assignment", *_STARTS)
def check_config_before_work(records: Sequence[Record]) -> list[Violation]:
    """``config_behind_assignment``: a worker starts an assignment's work only at (or past)
    the assignment's config offset (module doc)."""
    found: list[Violation] = []
    offset_of: dict[tuple[str, int], int] = {}  # (member, generation) -> assignment's offset
    for r in records:
        kind = r.get("kind")
        member = str(r.get("member"))
        if kind == "member_start":
            for key in [k for k in offset_of if k[0] == member]:
                del offset_of[key]
        elif kind == "assignment" and r.get("error") == 0 and "config_offset" in r:
            offset_of[(member, int(r.get("generation") or 0))] = int(r["config_offset"])
        elif kind in _STARTS and isinstance(r.get("config_offset"), int):
            leader = offset_of.get((member, int(r.get("generation") or 0)))
            if leader is not None and r["config_offset"] < leader:
                what = _STARTS[str(kind)]
                found.append(
                    violation(
                        CONFIG_BEHIND_ASSIGNMENT,
                        f"{member} started {what} {r.get(what)} of generation "
                        f"{r.get('generation')} at config offset {r['config_offset']}, behind "
                        f"its assignment's offset {leader}: a worker behind the leader reads "
                        "the config first (KIP-415, DistributedHerder#handleRebalanceCompleted)",
                        r,
                        member=member,
                        generation=r.get("generation"),
                    )
                )
    return found
