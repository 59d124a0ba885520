"""The event log: the product's data (docs/event-log.md).

Records are written by the engine (:mod:`scenarios.sim`), read back by the checkers
(:mod:`scenarios.check`) and saved as JSON Lines. ``docs/event-log.md`` describes every kind;
:mod:`scenarios.eventlog.records` types them (``docs/event-log.schema.json``).
"""

from scenarios.eventlog.log import (
    LOG_VERSION,
    SUPPORTED_LOG_VERSIONS,
    EventLog,
    LogFormatError,
    Record,
    read_jsonl,
    read_typed,
    write_jsonl,
    write_records_jsonl,
)
from scenarios.eventlog.records import (
    RECORD_TYPES,
    LogRecord,
    decode_record,
    log_schema,
    record_to_dict,
)

__all__ = [
    "LOG_VERSION",
    "SUPPORTED_LOG_VERSIONS",
    "EventLog",
    "LogFormatError",
    "LogRecord",
    "RECORD_TYPES",
    "Record",
    "decode_record",
    "log_schema",
    "read_jsonl",
    "read_typed",
    "record_to_dict",
    "write_jsonl",
    "write_records_jsonl",
]
