"""``quiet_period_balance`` for Kafka Streams: the application settles and is balanced at the
end of every quiet period of a run, not only at its end.

Disturbances and quiet periods are Connect's (:func:`scenarios.check.quiet_periods.quiet_periods`:
steps, faults, clients starting, stopping or crashing). A quiet period from ``E`` that lasts
longer than the Streams liveness bound ``B`` (:func:`scenarios.check.streams_bounds.
streams_bound_for`, evaluated at ``E``: the changelogs grow, so the bound does too) must end
settled by ``E + B``: the end-of-run rules of
:func:`scenarios.check.streams_summary.streams_end_violations` (every task running exactly
once, the last assignment valid per KIP-441 and held by every live client, no probing
rebalance still asked for, balanced) applied to the log up to ``E + B``. What the end-of-run
rules name (``static-member-kept``) carries its ``known_issue`` here too.

The bound needs the scenario (changelog sizes and the restore rate are not in the log), so
this check runs with the simulation (``groupsim run``, chaos), not on a bare log
(``groupsim check``).
"""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.check.quiet_periods import as_quiet_period_violation, quiet_periods
from scenarios.check.streams_bounds import streams_bound_for
from scenarios.check.streams_summary import streams_end_violations, summarize_streams
from scenarios.check.violation import Violation
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import LogRecord
from scenarios.input.streams import LoadedStreamsScenario

__all__ = ["streams_quiet_period_violations"]


def streams_quiet_period_violations(
    records: Sequence[LogRecord], loaded: LoadedStreamsScenario
) -> list[Violation]:
    """``quiet_period_balance`` violations of a Streams run's log (typed records:
    :data:`scenarios.eventlog.records.LogRecord`): one per unsettled end of a quiet period
    longer than the bound, with the end-of-run check's fields plus ``quiet_from_ms``,
    ``checked_at_ms``, ``bound_ms`` and ``cause_seq`` (the last record at or before the checked
    time). Times are virtual ms."""
    live = [r for r in records if not isinstance(r, k.Violation)]
    found: list[Violation] = []
    for start, next_disturbance in quiet_periods(live, 0):
        bound = streams_bound_for(loaded, start)
        at = start + bound
        if next_disturbance - start <= bound:
            continue
        prefix = [r for r in live if r.t_ms <= at]
        for violation in streams_end_violations(summarize_streams(prefix, loaded)):
            found.append(as_quiet_period_violation(violation, "settled", start, bound, prefix))
    return found
