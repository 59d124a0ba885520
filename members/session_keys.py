"""KIP-507: signed internal REST requests between Connect workers, and session-key rotation.

A worker that runs a connector forwards the connector's new task configurations to the leader
(``DistributedHerder.reconfigureConnector`` → ``POST /connectors/<name>/tasks``), signed with
the session key the leader distributes through the config topic; a v2+ leader rotates the key
every ``inter.worker.key.ttl.ms`` and verifies signatures (``InternalRequestSignature``). Below
protocol v2 requests are not signed and not verified.

Timer keys: ``session-key`` (the key expires), ``reconfigure:<connector>:<tasks>`` (retry).
"""

from __future__ import annotations

import hashlib
import hmac

from members.config import WorkerConfig
from members.group_client import GroupClient
from members.member_state import MemberState
from members.messages import (
    CONFIG_ADDRESS,
    SessionKey,
    TaskConfigsRequest,
    TaskConfigsResponse,
    WriteSessionKey,
    WriteTaskConfigs,
    worker_address,
)
from protocol.connect import ConnectAssignment, ConnectProtocol
from protocol.effects import Send

__all__ = ["SessionKeys"]

#: DistributedHerder's backoff for retrying a failed task reconfiguration (doubling, capped).
RECONFIGURE_BACKOFF_INITIAL_MS = 250
RECONFIGURE_BACKOFF_MAX_MS = 60_000


class SessionKeys(GroupClient):
    """KIP-507 for :class:`members.worker.ConnectWorker`: signing, verifying, rotating."""

    config: WorkerConfig
    current_protocol: ConnectProtocol
    assignment_snapshot: ConnectAssignment | None
    session_key: SessionKey | None
    _key_write_pending: bool
    _reconfigure_backoff: dict[str, int]

    def _is_leader(self) -> bool:
        return self.leader_id is not None and self.leader_id == self.member_id

    def _maybe_rotate_session_key(self, now_ms: int) -> None:
        """DistributedHerder.tick: a v2+ leader writes a new key when there is none or it expired.

        The key lives ``inter.worker.key.ttl.ms``; the leader wakes up when it expires.
        """
        if not self._is_leader() or self.current_protocol.version < 2 or self._leaving:
            return
        ttl = self.config.inter_worker_key_ttl_ms
        key = self.session_key
        if key is not None and key.created_ms + ttl > now_ms:
            self._set("session-key", key.created_ms + ttl)
            return
        if self._key_write_pending:
            return
        key_id = key.key_id + 1 if key is not None else 1
        # Deterministic stand-in for KeyGenerator("HmacSHA256"): no randomness outside the seed.
        secret = hashlib.sha256(f"{self.member_id}/{now_ms}/{key_id}".encode()).digest()
        self._key_write_pending = True
        self._log(
            "session_key",
            key_id=key_id,
            created_ms=now_ms,
            reason="expired" if key is not None else "none yet",
        )
        self._fx.append(Send(CONFIG_ADDRESS, WriteSessionKey(SessionKey(key_id, secret, now_ms))))

    def _reconfigure_tasks(self, connector: str, tasks: int, now_ms: int) -> None:
        """The connector here has new task configs: write them (leader) or forward them."""
        if self.state is MemberState.STOPPED:
            return
        if self._is_leader():
            self._reconfigure_backoff.pop(connector, None)
            self._fx.append(Send(CONFIG_ADDRESS, WriteTaskConfigs(connector, tasks)))
            return
        leader = self._leader_name()
        key = self.session_key
        signed = self.current_protocol.version >= 2
        signature = None
        if signed and key is not None:
            signature = hmac.new(
                key.secret, _task_configs_body(connector, tasks), "sha256"
            ).digest()
        self._log(
            "internal_request",
            to=leader,
            connector=connector,
            tasks=tasks,
            key_id=key.key_id if signed and key is not None else None,
            signed=signature is not None,
        )
        if leader is None:
            self._retry_reconfigure(connector, tasks, now_ms)
            return
        self._fx.append(
            Send(
                worker_address(leader),
                TaskConfigsRequest(
                    origin=self.name,
                    connector=connector,
                    tasks=tasks,
                    key_id=key.key_id if signature is not None and key is not None else None,
                    signature=signature,
                ),
            )
        )

    def _on_task_configs_request(self, request: TaskConfigsRequest, now_ms: int) -> None:
        """The leader's REST handler: verify the signature (KIP-507), then write the configs."""
        reason = ""
        if not self._is_leader():
            reason = "not the leader"
        elif self.current_protocol.version >= 2:
            key = self.session_key
            if request.signature is None or request.key_id is None:
                reason = "request is not signed"
            elif key is None or request.key_id != key.key_id:
                reason = f"unknown session key {request.key_id}"
            elif key.created_ms + self.config.inter_worker_key_ttl_ms <= now_ms:
                reason = f"expired session key {request.key_id}"
            else:
                body = _task_configs_body(request.connector, request.tasks)
                expected = hmac.new(key.secret, body, "sha256").digest()
                if not hmac.compare_digest(expected, request.signature):
                    reason = "signature does not match"
        accepted = not reason
        self._log(
            "internal_request_verified" if accepted else "internal_request_rejected",
            origin=request.origin,
            connector=request.connector,
            tasks=request.tasks,
            validation=self.current_protocol.version >= 2,
            reason=reason or None,
        )
        if accepted:
            self._fx.append(
                Send(CONFIG_ADDRESS, WriteTaskConfigs(request.connector, request.tasks))
            )
        self._fx.append(
            Send(
                worker_address(request.origin),
                TaskConfigsResponse(request.connector, request.tasks, accepted, reason),
            )
        )

    def _on_task_configs_response(self, response: TaskConfigsResponse, now_ms: int) -> None:
        if response.accepted:
            self._reconfigure_backoff.pop(response.connector, None)
            return
        self._retry_reconfigure(response.connector, response.tasks, now_ms)

    def _retry_reconfigure(self, connector: str, tasks: int, now_ms: int) -> None:
        backoff = self._reconfigure_backoff.get(connector, RECONFIGURE_BACKOFF_INITIAL_MS)
        self._reconfigure_backoff[connector] = min(backoff * 2, RECONFIGURE_BACKOFF_MAX_MS)
        self._set(f"reconfigure:{connector}:{tasks}", now_ms + backoff)

    def _leader_name(self) -> str | None:
        """The leader's host, from the leader url of the last assignment (``http://w1:8083``)."""
        snapshot = self.assignment_snapshot
        if snapshot is None or not snapshot.leader_url:
            return None
        return snapshot.leader_url.split("://", 1)[-1].rsplit(":", 1)[0] or None


def _task_configs_body(connector: str, tasks: int) -> bytes:
    """The bytes a task-configs request signs (its REST body, here reduced to what changes)."""
    return f"{connector}\n{tasks}".encode()
