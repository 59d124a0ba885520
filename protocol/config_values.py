"""Validation of Kafka-named config values, shared by the coordinator's and the workers' configs.

Kafka's ``ConfigDef`` types most of these settings as a Java ``int`` (or a ``long`` holding
milliseconds that groupsim keeps within an int) with a lower bound of 0; a value of the wrong
type or out of range is rejected with a :class:`~protocol.connect.ConfigError` that names the
key (``where``).
"""

from __future__ import annotations

from typing import Any

from protocol.connect import ConfigError
from protocol.primitives import INT32_MAX

__all__ = ["JAVA_INT_MAX", "string_setting", "java_int_setting"]

#: ``Integer.MAX_VALUE``: the largest value of an int setting.
JAVA_INT_MAX = INT32_MAX


def string_setting(value: Any, where: str) -> str:
    """``value`` if it is a string; else ConfigError ``"<where>: expected a string, ..."``."""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def java_int_setting(value: Any, where: str) -> int:
    """``value`` if it is an int (not a bool) in ``0..JAVA_INT_MAX``; else ConfigError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: expected an integer, got {type(value).__name__}")
    if value < 0:
        raise ConfigError(f"{where}: must be >= 0, got {value}")
    if value > JAVA_INT_MAX:
        raise ConfigError(f"{where}: must be <= {JAVA_INT_MAX} (a Java int), got {value}")
    return value
