"""Messages between a worker and the simulated Connect config topic.

Kafka Connect workers share configuration through a compacted Kafka topic
(``KafkaConfigBackingStore``). groupsim models it as an address ``"config"``: the runtime
delivers every new record to every worker after that worker's read lag, and answers a
read-to-end request (``configBackingStore.refresh``) with the latest snapshot.
"""

from __future__ import annotations

import msgspec

__all__ = ["CONFIG_ADDRESS", "ConfigUpdate", "ReadConfigToEnd"]

#: Network address of the simulated config topic.
CONFIG_ADDRESS = "config"


class ConfigUpdate(msgspec.Struct, frozen=True):
    """The config topic as of ``offset``: every connector and its task count."""

    offset: int
    connectors: dict[str, int]


class ReadConfigToEnd(msgspec.Struct, frozen=True):
    """A worker asks to read the config topic to its end (answered with a ConfigUpdate)."""
