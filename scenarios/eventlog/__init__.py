"""The event log: the product's data (DESIGN.md §5).

Records are written by the engine (:mod:`scenarios.sim`), read back by the checkers
(:mod:`scenarios.check`) and saved as JSON Lines. ``docs/event-log.md`` describes every kind.
"""

from scenarios.eventlog.log import (
    LOG_VERSION,
    SUPPORTED_LOG_VERSIONS,
    EventLog,
    LogFormatError,
    Record,
    read_jsonl,
    write_jsonl,
    write_records_jsonl,
)

__all__ = [
    "LOG_VERSION",
    "SUPPORTED_LOG_VERSIONS",
    "EventLog",
    "LogFormatError",
    "Record",
    "read_jsonl",
    "write_jsonl",
    "write_records_jsonl",
]
