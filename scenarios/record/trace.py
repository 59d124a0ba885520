"""What ``groupsim record`` writes: ``trace.jsonl`` (the wire) and ``events.jsonl`` (our log).

``trace.jsonl`` — one JSON object per line, written as it happens (nothing is held back, so
memory stays bounded whatever the traffic, and a killed recorder leaves every line it wrote):

* a frame: ``{"t_ms": wall-clock ms, "conn": n, "client_id", "dir": "request"|"response",
  "api", "api_key", "version", "correlation_id", "fields": {...}, "raw": base64}`` —
  ``fields`` (kio's decoded body) for the recorded APIs (:data:`.frames.RECORDED_APIS`),
  ``raw`` the whole frame as it crossed the proxy (after the address rewrite for a response);
* a connection event: ``{"t_ms", "conn", "event": "open"|"close"|"error", "detail"}``.

``events.jsonl`` — groupsim's event log (docs/event-log.md), the same record kinds as a
``groupsim serve`` log (``wire_request``, ``wire_response``, ``generation``,
``connection_error``), with ``run_start.mode = "record"`` and virtual ms = ms since the recording
started, so ``groupsim check`` judges a real cluster with the checkers it runs on simulations.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import msgspec

from scenarios.eventlog import LOG_VERSION, EventLog

from .frames import RequestHead, to_json

__all__ = ["Recording"]

_GROUP_APIS = {11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup"}
_ENCODER = msgspec.json.Encoder()


def _error_name(code: Any) -> str:
    """kio's error enum or code as Kafka's name (``NONE``, ``REBALANCE_IN_PROGRESS``, …)."""
    name = getattr(code, "name", None)
    return str(name).upper() if name is not None else str(code)


class Recording:
    """Both output files of one recording, appended line by line.

    Args:
        out: the directory (created if missing).
        epoch_ms: wall-clock ms at the start (``trace.jsonl`` times are wall-clock ms;
            ``events.jsonl`` times are ms since this instant).
        upstream / host / port: what the recorder proxies, for ``run_start``.

    Raises:
        OSError: ``out`` cannot be created or the files cannot be opened.
    """

    def __init__(self, out: Path, epoch_ms: int, upstream: str, host: str, port: int) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self._trace: IO[bytes] = (out / "trace.jsonl").open("wb")
        self._events: IO[bytes] = (out / "events.jsonl").open("wb")
        self._epoch_ms = epoch_ms
        self._now_ms = 0
        self.log = EventLog(keep=False)
        self.log.subscribe(self._write_event)
        # member id -> the label of the connection that last used it (for ``generation``)
        self._labels: dict[str, str] = {}
        # connection label -> its client.id, for every connection that sent a group request
        self._clients: dict[str, str] = {}
        # group -> (last generation written, its members' ids by group.instance.id)
        self._generations: dict[str, tuple[int, dict[str, str]]] = {}
        self.log.emit(
            0,
            "run_start",
            log_version=LOG_VERSION,
            scenario=f"record {upstream}",
            seed=0,
            mode="record",
            host=host,
            port=port,
            topics={},
            workers=[],
            connectors={},
        )

    def _write_event(self, record: dict[str, Any]) -> None:
        self._events.write(_ENCODER.encode(record) + b"\n")
        self._events.flush()

    def _trace_line(self, entry: dict[str, Any]) -> None:
        self._trace.write(_ENCODER.encode(entry) + b"\n")
        self._trace.flush()

    def at(self, wall_ms: int) -> None:
        """Sets the clock for the next lines (wall-clock ms, never moving back)."""
        self._now_ms = max(self._now_ms, wall_ms - self._epoch_ms)

    @property
    def wall_ms(self) -> int:
        return self._epoch_ms + self._now_ms

    # ------------------------------------------------------------------ connections

    def connection(self, conn: int, event: str, detail: str = "", label: str = "") -> None:
        """A connection opened, closed, or was closed for an error (also logged as
        ``connection_error`` in ``events.jsonl``)."""
        self._trace_line({"t_ms": self.wall_ms, "conn": conn, "event": event, "detail": detail})
        if event == "error":
            self.log.emit(self._now_ms, "connection_error", member=label, error=detail)

    def fault(self, fault: str, member: str, duration_ms: int) -> None:
        """A fault the harness put on the wire (:meth:`.proxy.Proxy.cut`) on the client
        ``member`` (a ``client.id``; its ``<client.id>-…`` clients too): a ``cut`` line in
        ``trace.jsonl``; in ``events.jsonl`` a ``step`` (``action``: the fault) and a ``fault``
        record for each recorded member of that client, named as ``groupsim check`` reads them
        (``<client.id>#<connection>``, every connection that has sent a group request so far),
        or for ``member`` itself when none has yet."""
        self._trace_line(
            {
                "t_ms": self.wall_ms,
                "event": "cut",
                "detail": f"{fault} of {member} for {duration_ms} ms",
            }
        )
        labels = [
            label
            for label, client in self._clients.items()
            if client == member or client.startswith(member + "-")
        ] or [member]
        for label in labels:
            self.log.emit(self._now_ms, "step", action=fault, member=label, duration_ms=duration_ms)
            self.log.emit(self._now_ms, "fault", fault=fault, member=label, duration_ms=duration_ms)

    def listening(self, host: str, port: int, upstream: str) -> None:
        """A listener stands in for the broker at ``upstream``."""
        self._trace_line(
            {"t_ms": self.wall_ms, "event": "listening", "detail": f"{host}:{port} -> {upstream}"}
        )
        self.log.emit(self._now_ms, "listening", host=host, port=port)

    # ------------------------------------------------------------------ frames

    def frame(
        self,
        conn: int,
        label: str,
        head: RequestHead,
        direction: str,
        body: Any | None,
        raw: bytes,
        request: Any | None = None,
    ) -> None:
        """One request or response crossed the proxy (``body``: kio's decoded object, None
        when not decoded; ``request``: for a response, its request's decoded body)."""
        entry: dict[str, Any] = {
            "t_ms": self.wall_ms,
            "conn": conn,
            "client_id": head.client_id,
            "dir": direction,
            "api": head.api,
            "api_key": head.api_key,
            "version": head.api_version,
            "correlation_id": head.correlation_id,
        }
        if body is not None:
            entry["fields"] = to_json(body)
        entry["raw"] = to_json(raw)
        self._trace_line(entry)
        if head.api_key in _GROUP_APIS and body is not None:
            if direction == "request":
                self._group_request(label, head, body)
            elif request is not None:
                self._group_response(label, head, request, body)

    def _group_request(self, label: str, head: RequestHead, req: Any) -> None:
        fields: dict[str, Any] = {
            "api": _GROUP_APIS[head.api_key],
            "version": head.api_version,
            "member": label,
            "client_id": head.client_id,
            "group": req.group_id,
        }
        self._clients[label] = head.client_id
        if head.api_key == 13:  # LeaveGroup: v3+ batches members (KIP-345)
            ids = [req.member_id] if getattr(req, "member_id", None) else []
            fields["member_ids"] = ids + [m.member_id for m in getattr(req, "members", ())]
        else:
            fields["member_id"] = req.member_id
            self._labels.setdefault(req.member_id, label)
        if head.api_key == 11:
            fields["protocols"] = [p.name for p in req.protocols]
            fields["group_instance_id"] = getattr(req, "group_instance_id", None)
        elif head.api_key in (12, 14):
            fields["generation"] = int(req.generation_id)
        self.log.emit(self._now_ms, "wire_request", **fields)

    def _group_response(self, label: str, head: RequestHead, req: Any, answer: Any) -> None:
        fields: dict[str, Any] = {
            "api": _GROUP_APIS[head.api_key],
            "member": label,
            "group": req.group_id,
            "error": _error_name(answer.error_code),
        }
        if head.api_key == 11:
            self._labels[answer.member_id] = label
            fields.update(
                member_id=answer.member_id,
                generation=int(answer.generation_id),
                protocol=getattr(answer, "protocol_name", None) or None,
                leader_id=answer.leader,
            )
            if hasattr(answer, "skip_assignment"):  # JoinGroup v9+ (KIP-814)
                fields["skip_assignment"] = bool(answer.skip_assignment)
        elif head.api_key == 14:
            fields.update(member_id=req.member_id, generation=int(req.generation_id))
        self.log.emit(self._now_ms, "wire_response", **fields)
        if head.api_key == 11 and int(answer.error_code) == 0:
            if answer.members:
                self._generation(req.group_id, answer)
            elif getattr(req, "group_instance_id", None):
                self._follower_rejoin(req.group_id, req.group_instance_id, answer)

    def _generation(self, group: str, answer: Any) -> None:
        """The leader's JoinGroup answer lists the generation's members: Kafka's
        ``initNextGeneration`` as seen from outside (``GroupMetadataManager``).

        A static leader that rejoins a Stable group under a new member id (KIP-345) is
        answered with the members of the generation it already leads, not a new one
        (``updateStaticMemberThenRebalanceOrCompleteJoin``; ``skip_assignment`` from v9,
        KIP-814): that answer is written as the ``member_replaced`` it is.
        """
        ids = [m.member_id for m in answer.members]
        generation = int(answer.generation_id)
        by_instance = {
            m.group_instance_id: m.member_id
            for m in answer.members
            if getattr(m, "group_instance_id", None)
        }
        last = self._generations.get(group)
        if last is not None and generation <= last[0]:
            for instance, member_id in by_instance.items():
                old = last[1].get(instance)
                if old is not None and old != member_id:
                    self.log.emit(
                        self._now_ms,
                        "member_replaced",
                        group=group,
                        member=self._labels.get(member_id, member_id),
                        member_id=member_id,
                        old_member_id=old,
                    )
            self._generations[group] = (last[0], {**last[1], **by_instance})
            return
        self._generations[group] = (generation, by_instance)
        self.log.emit(
            self._now_ms,
            "generation",
            group=group,
            generation=generation,
            protocol=getattr(answer, "protocol_name", None) or None,
            leader=self._labels.get(answer.leader, answer.leader),
            leader_id=answer.leader,
            members=[self._labels.get(m, m) for m in ids],
            member_ids=ids,
        )

    def _follower_rejoin(self, group: str, instance: str, answer: Any) -> None:
        """A static follower's JoinGroup answer (no member list): when it hands the generation
        already written to a new member id for the ``group.instance.id`` (KIP-345: a static
        member that rejoins a Stable group under a new id is answered with the current
        generation, ``GroupMetadataManager#updateStaticMemberThenRebalanceOrCompleteJoin``),
        it is written as ``member_replaced``, as for a leader (:meth:`_generation`). A
        follower's answer for a newer generation than the last written one is not: its
        leader's answer, which lists the members, writes that generation."""
        last = self._generations.get(group)
        if last is None or int(answer.generation_id) != last[0]:
            return
        old = last[1].get(instance)
        if old is None or old == answer.member_id:
            return
        self.log.emit(
            self._now_ms,
            "member_replaced",
            group=group,
            member=self._labels.get(answer.member_id, answer.member_id),
            member_id=answer.member_id,
            old_member_id=old,
        )
        self._generations[group] = (last[0], {**last[1], instance: answer.member_id})

    def close(self) -> None:
        """Writes ``run_end`` and closes both files (safe to call twice)."""
        if self._events.closed:
            return
        self.log.emit(self._now_ms, "run_end")
        self._trace.close()
        self._events.close()
