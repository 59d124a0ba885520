"""A Connect run's summary kept up to date as its event log grows (issue 25: the runner
summarizes the log before its end-of-run checks and again after them, and reading the whole
log twice cost a run ~2 ms)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scenarios.check.metrics import ConnectSummarizer
from scenarios.check.summary_types import ConnectSummary
from scenarios.eventlog.records import DecodedLog

__all__ = ["GrowingLogSummary"]


class GrowingLogSummary:
    """:func:`connect_summary` of a log that grows between calls, without reading it again:
    :meth:`summary` feeds only the records added since its last call when it is given the
    same list, grown by appends (the engine's ``EventLog.records``: the runner summarizes the
    log before its end-of-run checks and again after their records and ``run_end``). Any
    other list is summarized from its start. The summaries are those of
    :func:`connect_summary` (:meth:`ConnectSummarizer.result_so_far`). ``decoded``: where
    the records are decoded (a :class:`scenarios.eventlog.records.DecodedLog` the caller's
    checks share; a new one by default)."""

    __slots__ = ("_records", "_fed", "_last", "_summarizer", "_decoded")

    def __init__(self, decoded: DecodedLog | None = None) -> None:
        self._records: Sequence[Mapping[str, Any]] | None = None
        self._fed = 0
        self._last: Mapping[str, Any] | None = None
        self._summarizer = ConnectSummarizer()
        self._decoded = DecodedLog() if decoded is None else decoded

    def summary(self, records: Sequence[Mapping[str, Any]]) -> ConnectSummary:
        """:func:`connect_summary` of ``records`` (record dicts in ``seq`` order).

        Raises:
            msgspec.ValidationError: a record does not match its kind's Struct.
        """
        fed = self._fed
        grown = records is self._records and len(records) >= fed
        if not grown or (fed and records[fed - 1] is not self._last):
            self._records, fed, self._summarizer = records, 0, ConnectSummarizer()
        summarizer = self._summarizer
        typed = self._decoded.of(records)
        for i in range(fed, len(records)):
            summarizer.feed(typed[i])
        self._fed = len(records)
        self._last = records[-1] if records else None
        return summarizer.result_so_far()
