"""Broker-side settings of the classic group coordinator, with Kafka's names and defaults.

Kafka: ``GroupCoordinatorConfig.java`` (``group.initial.rebalance.delay.ms``,
``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``, ``group.max.size``) and
the hard-coded new-member join timeout of ``GroupMetadataManager`` (KAFKA-7610). Times are
virtual milliseconds. The ``groupsim.*`` keys are not Kafka settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta

from protocol.config_values import JAVA_INT_MAX, java_int_setting, string_setting
from protocol.connect import ConfigError

__all__ = ["CoordinatorConfig", "COORDINATOR_CONFIG_KEYS", "TIE_BREAKS", "ConfigError"]

#: The protocol-vote tie-break rules (see :meth:`GroupCoordinator` docs, "Protocol vote").
TieBreak = Literal["java", "first_listed"]
TIE_BREAKS: tuple[str, ...] = get_args(TieBreak)


#: A Java ``int`` setting of at least 0.
JavaInt = Annotated[int, Meta(ge=0, le=JAVA_INT_MAX)]


class CoordinatorConfig(msgspec.Struct, frozen=True):
    """Settings of one group coordinator (all times in virtual ms).

    Attributes:
        initial_rebalance_delay_ms: ``group.initial.rebalance.delay.ms`` (3000): how long the
            first rebalance of an Empty group waits for more members (extended while members
            keep arriving, up to the group rebalance timeout).
        min_session_timeout_ms / max_session_timeout_ms: ``group.{min,max}.session.timeout.ms``
            (6000 / 1800000): a JoinGroup outside these bounds gets INVALID_SESSION_TIMEOUT.
        max_size: ``group.max.size`` (Integer.MAX_VALUE): beyond it GROUP_MAX_SIZE_REACHED.
        new_member_join_timeout_ms: heartbeat timeout of a newly added member until its first
            join completes (300000; KAFKA-7610, not configurable in Kafka).
        protocol_tie_break: ``"java"`` (Kafka's: first tied protocol in the iteration order of
            the votes ``HashMap``) or ``"first_listed"`` (the tied protocol the earliest-added
            member ranks highest).

    Raises:
        ConfigError (a ``ValueError``): on construction with a negative value, a value above a
            Java int, min session timeout above max, a max size below 1 or an unknown
            tie-break rule.
    """

    #: ``GroupCoordinatorConfig.GROUP_INITIAL_REBALANCE_DELAY_MS_DEFAULT``: 3 seconds.
    initial_rebalance_delay_ms: JavaInt = msgspec.field(
        default=3000, name="group.initial.rebalance.delay.ms"
    )
    #: ``GroupCoordinatorConfig.GROUP_MIN_SESSION_TIMEOUT_MS_DEFAULT``: 6 seconds.
    min_session_timeout_ms: JavaInt = msgspec.field(
        default=6000, name="group.min.session.timeout.ms"
    )
    #: ``GroupCoordinatorConfig.GROUP_MAX_SESSION_TIMEOUT_MS_DEFAULT``: 30 minutes.
    max_session_timeout_ms: JavaInt = msgspec.field(
        default=1_800_000, name="group.max.session.timeout.ms"
    )
    #: ``GroupCoordinatorConfig.GROUP_MAX_SIZE_DEFAULT``: ``Integer.MAX_VALUE`` (at least 1).
    max_size: Annotated[int, Meta(ge=1, le=JAVA_INT_MAX)] = msgspec.field(
        default=JAVA_INT_MAX, name="group.max.size"
    )
    #: ``GroupMetadataManager``'s hard-coded new-member join timeout: 5 minutes (KAFKA-7610).
    new_member_join_timeout_ms: JavaInt = msgspec.field(
        default=300_000, name="groupsim.new.member.join.timeout.ms"
    )
    protocol_tie_break: TieBreak = msgspec.field(default="java", name="groupsim.protocol.tie.break")

    def __post_init__(self) -> None:
        _check({f: getattr(self, f) for f in self.__struct_fields__}, "coordinator", {})

    @classmethod
    def from_mapping(
        cls, values: Mapping[str, Any], where: str = "coordinator"
    ) -> CoordinatorConfig:
        """Build a config from Kafka-named keys, e.g. ``{"group.max.size": 10}``.

        Args:
            values: keys of :data:`COORDINATOR_CONFIG_KEYS` (or the field names) to values.
            where: a prefix naming the source, used in error messages (``where.key: ...``).

        Raises:
            ConfigError: an unknown key, a key given twice (Kafka name and field name), a
                value of the wrong type, a negative value, or an inconsistent combination;
                the message names the key.
        """
        kwargs: dict[str, Any] = {}
        spelled: dict[str, str] = {}
        fields = set(COORDINATOR_CONFIG_KEYS.values())
        for key, value in values.items():
            field = COORDINATOR_CONFIG_KEYS.get(key, key if key in fields else None)
            if field is None:
                known = ", ".join(sorted(COORDINATOR_CONFIG_KEYS))
                raise ConfigError(f"{where}.{key}: unknown coordinator setting (known: {known})")
            if field in kwargs:
                raise ConfigError(f"{where}.{key}: given twice (also as {spelled[field]})")
            kwargs[field] = _convert(field, value, f"{where}.{key}")
            spelled[field] = key
        default = cls()
        merged = {f: kwargs.get(f, getattr(default, f)) for f in cls.__struct_fields__}
        _check(merged, where, {field: f"{where}.{key}" for field, key in spelled.items()})
        kafka_names = {field: key for key, field in COORDINATOR_CONFIG_KEYS.items()}
        return msgspec.convert({kafka_names[f]: v for f, v in kwargs.items()}, cls)


#: Kafka-style key → field name, in field order. Field names are accepted as aliases by
#: :meth:`CoordinatorConfig.from_mapping`.
COORDINATOR_CONFIG_KEYS: dict[str, str] = {
    f.encode_name: f.name for f in msgspec.structs.fields(CoordinatorConfig)
}


def _convert(field: str, value: Any, where: str) -> Any:
    if field == "protocol_tie_break":
        if string_setting(value, where) not in TIE_BREAKS:
            raise ConfigError(f"{where}: expected one of {', '.join(TIE_BREAKS)}, got {value!r}")
        return value
    return java_int_setting(value, where)


def _check(values: dict[str, Any], where: str, names: dict[str, str]) -> None:
    def name(field: str) -> str:
        return names.get(field, f"{where}.{field}")

    for field, value in values.items():
        _convert(field, value, name(field))
    low, high = values["min_session_timeout_ms"], values["max_session_timeout_ms"]
    if low > high:
        raise ConfigError(
            f"{name('min_session_timeout_ms')}: {low} is above "
            f"{name('max_session_timeout_ms')} ({high})"
        )
    if values["max_size"] < 1:
        raise ConfigError(f"{name('max_size')}: must be >= 1, got {values['max_size']}")
