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

from scenarios.check.log_rules import Violation, reads_typed, violation_at
from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_connect as kc
from scenarios.eventlog.records import LogRecord

__all__ = ["CONFIG_BEHIND_ASSIGNMENT", "check_config_before_work"]

CONFIG_BEHIND_ASSIGNMENT = "config_behind_assignment"


@reads_typed("member_start", "assignment", "connector_start", "task_start")
def check_config_before_work(records: Sequence[LogRecord]) -> list[Violation]:
    """``config_behind_assignment``: a worker starts an assignment's work only at (or past)
    the assignment's config offset (module doc)."""
    found: list[Violation] = []
    offset_of: dict[tuple[str, int], int] = {}  # (member, generation) -> assignment's offset
    for r in records:
        match r:
            case k.MemberStart(member=member):
                for key in [key for key in offset_of if key[0] == member]:
                    del offset_of[key]
            case k.Assignment(member=member, error=0, config_offset=int() as offset):
                offset_of[(member, r.generation)] = offset
            case (
                kc.ConnectorStart(member=member, connector=job, config_offset=int() as at)
                | kc.TaskStart(member=member, task=job, config_offset=int() as at)
            ):
                leader = offset_of.get((member, r.generation))
                if leader is not None and at < leader:
                    what = "connector" if isinstance(r, kc.ConnectorStart) else "task"
                    found.append(
                        violation_at(
                            CONFIG_BEHIND_ASSIGNMENT,
                            f"{member} started {what} {job} of generation {r.generation} at "
                            f"config offset {at}, behind its assignment's offset {leader}: a "
                            "worker behind the leader reads the config first (KIP-415, "
                            "DistributedHerder#handleRebalanceCompleted)",
                            r,
                            member=member,
                            generation=r.generation,
                        )
                    )
    return found
