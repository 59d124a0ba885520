"""The event log: records in memory, fanned out to subscribers, saved as JSON Lines.

A record is a plain dict ``{"t_ms": int, "seq": int, "kind": str, **fields}`` (key order as
written; schema in ``docs/event-log.md``). :meth:`EventLog.emit` routes every record through a
structlog logger (docs/event-log.md): its processor chain stamps the virtual time and sequence
number and its final step hands the record to :class:`_Sink`, which keeps it and calls the
subscribers. No stdlib logging and no global structlog configuration are involved.

Re-entrancy: a subscriber may itself emit (the runtime emits ``violation`` records from the
invariant checker's callback). Such records get their ``seq`` at once, but subscribers receive
them only after the current record has been delivered to every subscriber, so every
subscriber sees records in ``seq`` order.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import structlog

from protocol.errors import InputError
from scenarios.eventlog.records import LogRecord

__all__ = [
    "LOG_VERSION",
    "EventLog",
    "LogFormatError",
    "read_jsonl",
    "read_typed",
    "write_jsonl",
    "write_records_jsonl",
]

#: The event-log schema version written in ``run_start.log_version``.
LOG_VERSION = 1
#: Versions :func:`read_jsonl` accepts.
SUPPORTED_LOG_VERSIONS = frozenset({1})

Record = dict[str, Any]
Subscriber = Callable[[Record], object]

_SUPPORTED_TEXT = ", ".join(map(str, sorted(SUPPORTED_LOG_VERSIONS)))
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()
_typed_decoder = msgspec.json.Decoder(LogRecord)


class LogFormatError(InputError):
    """A saved log that cannot be read: ``"<file>:<line>: <problem>"`` (one line)."""


class _Sink:
    """The structlog "logger": receives finished records from the processor chain."""

    __slots__ = ("records", "keep", "subscribers", "pending", "dispatching")

    def __init__(self, keep: bool) -> None:
        self.records: list[Record] = []
        self.keep = keep
        self.subscribers: list[Subscriber] = []
        self.pending: deque[Record] = deque()
        self.dispatching = False

    def msg(self, record: Record) -> Record:
        if self.keep:
            self.records.append(record)
        if not self.subscribers:
            return record
        if self.dispatching:
            self.pending.append(record)
            return record
        self.dispatching = True
        try:
            for callback in self.subscribers:
                callback(record)
            pending = self.pending
            while pending:
                queued = pending.popleft()
                for callback in self.subscribers:
                    callback(queued)
        finally:
            self.dispatching = False
            self.pending.clear()
        return record


class EventLog:
    """The run's event log.

    Args:
        keep: keep every record in :attr:`records` (needed by :meth:`write_jsonl`). With
            ``keep=False`` records only go to subscribers.

    Attributes:
        records: the records emitted so far, in ``seq`` order.
    """

    def __init__(self, *, keep: bool = True) -> None:
        self._sink = _Sink(keep)
        self.records = self._sink.records
        self._t_ms = 0
        self._seq = 0
        # structlog: one cached bound logger; the chain stamps t_ms/seq, the sink keeps it.
        self._logger = structlog.wrap_logger(
            self._sink,
            processors=[self._stamp],
            wrapper_class=structlog.BoundLogger,
            context_class=dict,
            cache_logger_on_first_use=True,
        ).bind()
        self._msg = self._logger.msg

    def _stamp(self, _logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
        """structlog processor: ``{"event": kind, "f": fields}`` → the record, as the
        positional argument for :meth:`_Sink.msg`."""
        record = {"t_ms": self._t_ms, "seq": self._seq, "kind": event_dict["event"]}
        record.update(event_dict["f"])
        self._seq += 1
        return (record,), {}

    def emit(self, t_ms: int, kind: str, **fields: Any) -> Record:
        """Append a record at virtual time ``t_ms`` and deliver it to the subscribers.

        Returns:
            the record ``{"t_ms": t_ms, "seq": n, "kind": kind, **fields}``.

        Raises:
            ValueError: ``fields`` contains ``seq`` (it is assigned here).
        """
        return self.emit_fields(t_ms, kind, fields)

    def emit_fields(self, t_ms: int, kind: str, fields: Mapping[str, Any]) -> Record:
        """:meth:`emit` with the fields as one mapping, read and not kept (the engine's path
        for its members' ``Log`` effects: no keyword arguments unpacked and packed again per
        record).

        Raises:
            ValueError: ``fields`` contains ``seq`` (it is assigned here).
        """
        if "seq" in fields:
            raise ValueError("seq is assigned by the event log")
        self._t_ms = t_ms
        return self._msg(kind, f=fields)

    def subscribe(self, callback: Subscriber) -> None:
        """Call ``callback(record)`` for every record emitted from now on, in ``seq`` order."""
        self._sink.subscribers.append(callback)

    def unsubscribe(self, callback: Subscriber) -> None:
        """Stop calling ``callback``.

        Raises:
            ValueError: it was not subscribed.
        """
        self._sink.subscribers.remove(callback)

    def __len__(self) -> int:
        """Number of records emitted (also with ``keep=False``)."""
        return self._seq

    def write_jsonl(self, path: str | Path) -> None:
        """Write :attr:`records` to ``path`` as JSON Lines, atomically (see :func:`write_jsonl`).

        Raises:
            RuntimeError: the log was created with ``keep=False``.
            OSError: the file cannot be written (no partial file is left behind).
        """
        if not self._sink.keep:
            raise RuntimeError("EventLog(keep=False) has no records to write")
        write_jsonl(self.records, path)


def write_jsonl(records: Iterable[Record], path: str | Path) -> None:
    """Write records as JSON Lines (msgspec, key order as in each dict) to ``path``.

    Atomic: the data goes to a temporary file in the same directory, is flushed and fsynced,
    then renamed over ``path`` with :func:`os.replace`; on error the temporary file is removed.
    The file gets the umask's permissions, as a plain ``open`` would give it.

    Raises:
        OSError: the directory does not exist or is not writable.
    """
    from scenarios.eventlog.atomic import atomic_open

    with atomic_open(path, "wb", fsync=True) as out:
        batch: list[Record] = []
        for record in records:
            batch.append(record)
            if len(batch) >= 4096:
                out.write(_encoder.encode_lines(batch))
                batch.clear()
        if batch:
            out.write(_encoder.encode_lines(batch))


#: Alias of :func:`write_jsonl` (the name ``scenarios.sim.runner`` uses).
write_records_jsonl = write_jsonl


def read_jsonl(
    path: str | Path, *, validate: bool = False, max_line_bytes: int | None = None
) -> list[Record]:
    """Read a saved event log as dicts.

    Blank lines are skipped. The first record must carry a supported ``log_version``
    (``run_start``); every record must be a JSON object with an integer ``t_ms`` and ``seq``
    and a string ``kind``. With ``validate``, every record must also match its kind's Struct
    in :mod:`scenarios.eventlog.records` (no unknown kind or field, every value of its type).
    With ``max_line_bytes``, a longer line is refused before it is read whole (``groupsim
    check`` passes the ``log_line_bytes`` limit, docs/limits.md). Error messages never quote
    more than a few dozen characters of the log.

    Raises:
        LogFormatError: ``"<file>:<line>: <problem>"`` for a line over ``max_line_bytes``,
            JSON nested too deeply to decode, malformed JSON, a non-object line,
            missing/mistyped ``t_ms``/``seq``/``kind``, an empty log, a missing or
            unsupported ``log_version``, or (``validate``) a record that does not match its
            kind (``"<file>:<line>: <kind> record: <field>: <problem>"``).
        OSError: the file cannot be read.
    """
    records: list[Record] = []
    for lineno, line, record in _read_lines(Path(path), max_line_bytes):
        if validate:
            _typed(path, lineno, line, record)
        records.append(record)
    return records


def read_typed(path: str | Path) -> list[LogRecord]:
    """Read a saved event log as typed records (:data:`scenarios.eventlog.records.LogRecord`).

    Raises:
        LogFormatError: as :func:`read_jsonl` with ``validate=True``.
        OSError: the file cannot be read.
    """
    return [_typed(path, lineno, line, record) for lineno, line, record in _read_lines(Path(path))]


def _lines(src: BinaryIO, path: Path, max_line_bytes: int | None) -> Iterator[bytes]:
    """The lines of ``src``; one longer than ``max_line_bytes`` (newline excluded) is a
    :class:`LogFormatError` after reading at most that many bytes of it."""
    if max_line_bytes is None:
        yield from src
        return
    lineno = 0
    while line := src.readline(max_line_bytes + 2):  # room for "\r\n"
        lineno += 1
        if len(line.rstrip(b"\r\n")) > max_line_bytes:
            raise LogFormatError(
                f"{path}:{lineno}: line longer than the limit of {max_line_bytes} bytes "
                "(raise it with GROUPSIM_LIMITS=log_line_bytes=N)"
            )
        yield line


def _read_lines(
    path: Path, max_line_bytes: int | None = None
) -> Iterator[tuple[int, bytes, Record]]:
    """``(line number, raw line, record dict)`` for every non-blank line, envelope-checked."""
    first = True
    with path.open("rb") as src:
        for lineno, line in enumerate(_lines(src, path, max_line_bytes), start=1):
            if not line.strip():
                continue
            try:
                record = _decoder.decode(line)
            except msgspec.DecodeError as exc:
                raise LogFormatError(f"{path}:{lineno}: malformed JSON: {exc}") from None
            except RecursionError:
                raise LogFormatError(f"{path}:{lineno}: JSON nested too deeply") from None
            if not isinstance(record, dict):
                raise LogFormatError(
                    f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}"
                )
            for key, typ in (("t_ms", int), ("seq", int), ("kind", str)):
                value = record.get(key)
                if not isinstance(value, typ) or isinstance(value, bool):
                    raise LogFormatError(f"{path}:{lineno}: record has no {typ.__name__} {key!r}")
            if first:
                version = record.get("log_version")
                if version is None:
                    raise LogFormatError(
                        f"{path}:{lineno}: first record has no log_version "
                        f"(expected a run_start record with log_version {LOG_VERSION})"
                    )
                if version not in SUPPORTED_LOG_VERSIONS or isinstance(version, bool):
                    raise LogFormatError(
                        f"{path}:{lineno}: unsupported log_version {_shorten(repr(version))} "
                        f"(this groupsim reads {_SUPPORTED_TEXT})"
                    )
                first = False
            yield lineno, line, record
    if first:
        raise LogFormatError(f"{path}:1: empty log (no records)")


def _typed(path: str | Path, lineno: int, line: bytes, record: Record) -> LogRecord:
    """Decode one line against the record union, as a one-line :class:`LogFormatError`."""
    try:
        typed: LogRecord = _typed_decoder.decode(line)
    except msgspec.ValidationError as exc:
        problem = _explain(str(exc))
        kind = _shorten(record["kind"])
        raise LogFormatError(f"{path}:{lineno}: {kind} record: {problem}") from None
    return typed


_LONG_QUOTE = re.compile(r"([`'])([^`']{61,})\1")


def _shorten(text: str, keep: int = 60) -> str:
    """``text``, or its first ``keep`` characters and "…" (a log's values are echoed in errors
    this short, never whole)."""
    return text if len(text) <= keep else text[:keep] + "…"


def _explain(message: str) -> str:
    """msgspec's ``"<problem> - at `$.a[0].b`"`` → ``"a[0].b: <problem>"`` in our words
    (a field name or value quoted from the log shortened by :func:`_shorten`)."""
    message = _LONG_QUOTE.sub(lambda m: m[1] + _shorten(m[2]) + m[1], message)
    text, sep, where = message.rpartition(" - at `")
    if not sep:
        text, where = message, "$`"
    field = where.rstrip("`").removeprefix("$").removeprefix(".")
    if m := re.fullmatch(r"Object contains unknown field `(.+)`", text):
        return f"{_join(field, m.group(1))}: unknown field"
    if m := re.fullmatch(r"Object missing required field `(.+)`", text):
        return f"{_join(field, m.group(1))}: missing required field"
    if field == "kind" and (m := re.fullmatch(r"Invalid value '(.*)'", text)):
        return f"kind: unknown record kind {m.group(1)!r}"
    problem = text[:1].lower() + text[1:]
    return f"{field}: {problem}" if field else problem


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key
