"""The JSON forms of Kafka Connect's group-protocol messages (``groupsim codec``,
docs/cli-contracts.md).

:func:`assignment_to_json` / :func:`subscription_to_json` show a decoded
:class:`~protocol.connect.ConnectAssignment` (Kafka ``ConnectProtocol.Assignment`` /
``ExtendedAssignment``) or :class:`~protocol.connect.WorkerSubscription` (``WorkerState`` /
``ExtendedWorkerState``); :func:`assignment_from_json` / :func:`subscription_from_json` read
them back, strictly, raising :class:`CodecInputError` for the CLI. The bytes are
:mod:`protocol.connect_codec`'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from protocol.connect import ConnectAssignment, ConnectorTaskId, WorkerSubscription
from protocol.connect_codec import MAX_VERSION
from protocol.errors import InputError
from protocol.primitives import INT16_MAX, INT16_MIN, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

__all__ = [
    "CodecInputError",
    "assignment_to_json",
    "assignment_from_json",
    "subscription_to_json",
    "subscription_from_json",
]


class CodecInputError(InputError):
    """Invalid JSON input for the codec (``groupsim codec encode``).

    Attributes:
        key: dotted path of the offending key, e.g. ``allocation.tasks[2]``.
    """

    def __init__(self, key: str, detail: str) -> None:
        self.key = key
        self.detail = detail
        super().__init__(f"{key}: {detail}")


# ----------------------------------------------------------------------------------------------
# JSON forms (``groupsim codec``, docs/cli-contracts.md)


def _task_str(task: ConnectorTaskId) -> str:
    return f"{task[0]}-{task[1]}"


def assignment_to_json(a: ConnectAssignment) -> dict[str, Any]:
    """The ``groupsim codec`` JSON object of an assignment (docs/cli-contracts.md).

    Keys: ``version, error, leader, leader_url, config_offset, connectors, tasks`` and, from
    version 1, ``revoked_connectors, revoked_tasks, delay_ms``. Tasks are ``"<connector>-<n>"``
    strings; lists keep their order (wire order for a decoded assignment).
    """
    out: dict[str, Any] = {
        "version": a.version,
        "error": a.error,
        "leader": a.leader,
        "leader_url": a.leader_url,
        "config_offset": a.config_offset,
        "connectors": list(a.connectors),
        "tasks": [_task_str(t) for t in a.tasks],
    }
    if a.version != 0:
        out["revoked_connectors"] = list(a.revoked_connectors)
        out["revoked_tasks"] = [_task_str(t) for t in a.revoked_tasks]
        out["delay_ms"] = a.delay_ms
    return out


def subscription_to_json(s: WorkerSubscription) -> dict[str, Any]:
    """The ``groupsim codec`` JSON object of a subscription (docs/cli-contracts.md).

    Keys: ``version, url, config_offset``; from version 1 ``allocation`` (``null`` or an
    assignment object, see :func:`assignment_to_json`); in version 3 also
    ``static_connectors`` and ``static_tasks`` (``"<connector>-<n>"`` strings).
    """
    out: dict[str, Any] = {
        "version": s.version,
        "url": s.url,
        "config_offset": s.config_offset,
    }
    if s.version >= 1:
        out["allocation"] = None if s.allocation is None else assignment_to_json(s.allocation)
    if s.version >= 3:
        out["static_connectors"] = list(s.static_connectors)
        out["static_tasks"] = [_task_str(t) for t in s.static_tasks]
    return out


def _json_int(obj: dict[str, Any], key: str, path: str, low: int, high: int, kind: str) -> int:
    value = obj[key]
    if type(value) is not int:
        raise CodecInputError(_key(path, key), f"expected an integer, got {_json_type(value)}")
    if not low <= value <= high:
        raise CodecInputError(
            _key(path, key), f"{value} is out of range for {kind} [{low}, {high}]"
        )
    return value


def _json_str(obj: dict[str, Any], key: str, path: str) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise CodecInputError(_key(path, key), f"expected a string, got {_json_type(value)}")
    return value


def _json_list(obj: dict[str, Any], key: str, path: str) -> list[Any]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise CodecInputError(_key(path, key), f"expected a list, got {_json_type(value)}")
    return value


def _json_strings(obj: dict[str, Any], key: str, path: str) -> tuple[str, ...]:
    items = _json_list(obj, key, path)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise CodecInputError(
                f"{_key(path, key)}[{i}]", f"expected a string, got {_json_type(item)}"
            )
    return tuple(items)


def _json_tasks(obj: dict[str, Any], key: str, path: str) -> tuple[ConnectorTaskId, ...]:
    out = []
    for i, item in enumerate(_json_list(obj, key, path)):
        where = f"{_key(path, key)}[{i}]"
        if not isinstance(item, str):
            raise CodecInputError(
                where, f"expected a '<connector>-<n>' string, got {_json_type(item)}"
            )
        try:
            task = ConnectorTaskId.parse(item)
        except ValueError:
            raise CodecInputError(
                where, f"{item!r} is not of the form '<connector>-<n>' with n >= 0"
            ) from None
        if task.connector.endswith("-"):
            # "c1--1": a negative task number (or a connector name ending in '-', which the
            # "<connector>-<n>" form cannot tell apart). Connector instances go in the
            # connectors list, not as task -1.
            raise CodecInputError(
                where, f"{item!r}: negative task numbers are not allowed (n must be >= 0)"
            )
        if task.task > INT32_MAX:
            raise CodecInputError(where, f"task number {task.task} is out of range for INT32")
        out.append(task)
    return tuple(out)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "list",
        dict: "object",
    }.get(type(value), type(value).__name__)


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_keys(
    obj: object,
    path: str,
    required: Sequence[str],
    optional: Sequence[str],
    other_versions: dict[str, Any],
    what: str,
) -> dict[str, Any]:
    """Check the key set. ``other_versions``: keys of other layouts, accepted only when they
    hold their empty default (so a decoded v1 object can be re-encoded at v0 as long as
    nothing would be dropped)."""
    if not isinstance(obj, dict):
        raise CodecInputError(path or what, f"expected an object, got {_json_type(obj)}")
    for key in required:
        if key not in obj:
            raise CodecInputError(_key(path, key), f"missing required key for {what}")
    for key, value in obj.items():
        if key in required or key in optional:
            continue
        if key in other_versions:
            default = other_versions[key]
            if type(value) is not type(default) or value != default:
                raise CodecInputError(
                    _key(path, key),
                    f"not carried by {what}: only {json.dumps(default)} is accepted here",
                )
            continue
        raise CodecInputError(_key(path, str(key)), f"unknown key for {what}")
    return obj


def _json_version(obj: object, path: str) -> int:
    if not isinstance(obj, dict) or "version" not in obj:
        return -1  # reported by _check_keys
    value = obj["version"]
    if type(value) is not int or not 0 <= value <= MAX_VERSION:
        raise CodecInputError(
            _key(path, "version"), f"expected an integer 0..{MAX_VERSION}, got {value!r}"
        )
    return value


_ASSIGNMENT_V0_KEYS = ("version", "error", "leader", "leader_url", "config_offset")
_ASSIGNMENT_LISTS = ("connectors", "tasks")
_ASSIGNMENT_V1_EXTRA: dict[str, Any] = {
    "revoked_connectors": [],
    "revoked_tasks": [],
    "delay_ms": 0,
}
_SUBSCRIPTION_EXTRA: dict[str, Any] = {
    "allocation": None,
    "static_connectors": [],
    "static_tasks": [],
}


def _assignment_from_json(obj: object, path: str) -> ConnectAssignment:
    version = _json_version(obj, path)
    optional: tuple[str, ...]
    if version == 0:
        optional, others = _ASSIGNMENT_LISTS, _ASSIGNMENT_V1_EXTRA
    else:
        optional, others = _ASSIGNMENT_LISTS + tuple(_ASSIGNMENT_V1_EXTRA), {}
    what = f"a version {version} assignment" if version >= 0 else "an assignment"
    d = _check_keys(obj, path, _ASSIGNMENT_V0_KEYS, optional, others, what)
    return ConnectAssignment(
        version=version,
        error=_json_int(d, "error", path, INT16_MIN, INT16_MAX, "INT16"),
        leader=_json_str(d, "leader", path),
        leader_url=_json_str(d, "leader_url", path),
        config_offset=_json_int(d, "config_offset", path, INT64_MIN, INT64_MAX, "INT64"),
        connectors=_json_strings(d, "connectors", path),
        tasks=_json_tasks(d, "tasks", path),
        revoked_connectors=_json_strings(d, "revoked_connectors", path),
        revoked_tasks=_json_tasks(d, "revoked_tasks", path),
        delay_ms=(
            _json_int(d, "delay_ms", path, INT32_MIN, INT32_MAX, "INT32") if "delay_ms" in d else 0
        ),
    )


def assignment_from_json(obj: dict[str, Any]) -> ConnectAssignment:
    """Parse the ``groupsim codec`` JSON of an assignment, strictly.

    Required: ``version`` (0..3), ``error``, ``leader``, ``leader_url``, ``config_offset``.
    Optional (default empty / 0): ``connectors``, ``tasks`` and, for version >= 1,
    ``revoked_connectors``, ``revoked_tasks``, ``delay_ms`` (a version 0 object may carry
    these only empty / 0, since v0 cannot encode them). Tasks are ``"<connector>-<n>"``
    with n >= 0 (the number after the last ``-``; a ``--`` before it reads as a negative
    number and is rejected). Ints must fit their wire type.

    Raises:
        CodecInputError: unknown or missing key, wrong type, out-of-range value, bad task
            string; ``key`` names the culprit (e.g. ``revoked_tasks[1]``).
    """
    return _assignment_from_json(obj, "")


def subscription_from_json(obj: dict[str, Any]) -> WorkerSubscription:
    """Parse the ``groupsim codec`` JSON of a subscription, strictly.

    Required: ``version`` (0..3), ``url``, ``config_offset``. ``allocation`` (``null`` or an
    assignment object, :func:`assignment_from_json`; its version is ignored on encoding) is
    allowed from version 1, default ``null``; ``static_connectors`` / ``static_tasks`` from
    version 3, default empty. Keys of a later version are accepted only with that default
    (``null`` / ``[]``), as the layout would drop anything else.

    Raises:
        CodecInputError: as :func:`assignment_from_json`; keys inside the allocation are
            reported as ``allocation.<key>``.
    """
    version = _json_version(obj, "")
    optional: tuple[str, ...] = ()
    if version >= 1:
        optional += ("allocation",)
    if version >= 3:
        optional += ("static_connectors", "static_tasks")
    others = {k: v for k, v in _SUBSCRIPTION_EXTRA.items() if k not in optional}
    what = f"a version {version} subscription" if version >= 0 else "a subscription"
    d = _check_keys(obj, "", ("version", "url", "config_offset"), optional, others, what)
    raw_allocation = d.get("allocation")
    return WorkerSubscription(
        version=version,
        url=_json_str(d, "url", ""),
        config_offset=_json_int(d, "config_offset", "", INT64_MIN, INT64_MAX, "INT64"),
        allocation=(
            None if raw_allocation is None else _assignment_from_json(raw_allocation, "allocation")
        ),
        static_connectors=_json_strings(d, "static_connectors", ""),
        static_tasks=_json_tasks(d, "static_tasks", ""),
    )
