"""Translation between kio's group messages and :mod:`protocol.group` values.

The coordinator (:class:`coordinator.group.GroupCoordinator`) takes and returns the
:mod:`protocol.group` Structs; a client sends and reads kio's dataclasses of one API version.
Fields follow Kafka's ``JoinGroup``/``SyncGroup``/``Heartbeat``/``LeaveGroup`` message JSON;
fields a version lacks are left out by :func:`scenarios.serve.wire.build`.
"""

from __future__ import annotations

from typing import Any

from protocol import group as pg

from . import wire
from .wire import build, kio_error, td

__all__ = ["to_group_request", "error_response", "from_group_response"]


def to_group_request(request: wire.Request) -> pg.Request:
    """A kio group request as the :mod:`protocol.group` value the coordinator takes."""
    body, version = request.body, request.api_version
    instance = getattr(body, "group_instance_id", None)
    if request.api_key == 11:
        session_ms = wire.ms(body.session_timeout)
        rebalance_ms = wire.ms(getattr(body, "rebalance_timeout", None))
        if version == 0 or rebalance_ms < 0:
            rebalance_ms = session_ms  # JoinGroup v0: the rebalance timeout is the session's
        return pg.JoinGroupRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            protocol_type=body.protocol_type,
            protocols=tuple((p.name, bytes(p.metadata)) for p in body.protocols),
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            client_id=request.client_id,
            group_instance_id=instance,
            reason=getattr(body, "reason", None),
            api_version=version,
        )
    if request.api_key == 14:
        return pg.SyncGroupRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            generation_id=body.generation_id,
            protocol_type=getattr(body, "protocol_type", None),
            protocol_name=getattr(body, "protocol_name", None),
            assignments=tuple((a.member_id, bytes(a.assignment)) for a in body.assignments),
            group_instance_id=instance,
        )
    if request.api_key == 12:
        return pg.HeartbeatRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            generation_id=body.generation_id,
            group_instance_id=instance,
        )
    if version < 3:
        return pg.LeaveGroupRequest(group_id=body.group_id, member_ids=(body.member_id,))
    reason = next((m.reason for m in body.members if getattr(m, "reason", None)), None)
    identity = getattr(pg, "MemberIdentity", None)
    if identity is not None:
        # A KIP-345 coordinator takes full identities (member id and/or group.instance.id).
        members = tuple(
            identity(m.member_id, m.group_instance_id, getattr(m, "reason", None))
            for m in body.members
        )
        extra: dict[str, Any] = {"members": members}
        return pg.LeaveGroupRequest(group_id=body.group_id, reason=reason, **extra)
    ids = tuple(m.member_id for m in body.members)
    return pg.LeaveGroupRequest(group_id=body.group_id, member_ids=ids, reason=reason)


def error_response(req: pg.Request, error: pg.ErrorCode) -> pg.Response:
    """The response of ``req``'s type carrying only ``error`` (what a broker that cannot serve
    the group answers, e.g. NOT_COORDINATOR during a failover)."""
    if isinstance(req, pg.JoinGroupRequest):
        return pg.JoinGroupResponse(error, member_id=req.member_id)
    if isinstance(req, pg.SyncGroupRequest):
        return pg.SyncGroupResponse(error)
    if isinstance(req, pg.HeartbeatRequest):
        return pg.HeartbeatResponse(error)
    return pg.LeaveGroupResponse(error)


def from_group_response(request: wire.Request, req: pg.Request, answer: Any) -> Any:
    """A :mod:`protocol.group` response as the kio response of the request's version."""
    version = request.api_version
    cls = wire.response_class(request.api_key, version)
    mod = wire.module(request.api_key, version, True)
    error = kio_error(int(answer.error))
    if isinstance(answer, pg.JoinGroupResponse):
        members = tuple(
            build(
                mod.JoinGroupResponseMember,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata,
            )
            for m in answer.members
        )
        return build(
            cls,
            throttle_time=td(0),
            error_code=error,
            generation_id=answer.generation_id,
            protocol_type=answer.protocol_type,
            protocol_name=answer.protocol_name,
            leader=answer.leader,
            skip_assignment=answer.skip_assignment,
            member_id=answer.member_id,
            members=members,
        )
    if isinstance(answer, pg.SyncGroupResponse):
        return build(
            cls,
            throttle_time=td(0),
            error_code=error,
            protocol_type=answer.protocol_type,
            protocol_name=answer.protocol_name,
            assignment=answer.assignment,
        )
    if isinstance(answer, pg.HeartbeatResponse):
        return build(cls, throttle_time=td(0), error_code=error)
    assert isinstance(req, pg.LeaveGroupRequest)
    errors = dict(answer.member_errors)
    leaving: tuple[Any, ...] = ()
    answers = getattr(answer, "members", ())  # a KIP-345 coordinator's per-member answers
    if version >= 3 and answers:
        leaving = tuple(
            build(
                mod.MemberResponse,
                member_id=a.member_id,
                group_instance_id=a.group_instance_id,
                error_code=kio_error(int(a.error)),
            )
            for a in answers
        )
    elif version >= 3:
        leaving = tuple(
            build(
                mod.MemberResponse,
                member_id=mid,
                group_instance_id=None,
                error_code=kio_error(int(errors.get(mid, answer.error))),
            )
            for mid in req.member_ids
        )
    return build(cls, throttle_time=td(0), error_code=error, members=leaving)
