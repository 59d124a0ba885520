"""The chaos campaign's vocabulary (protocols, assignors, fault kinds) without its machinery.

``groupsim chaos`` builds its option help from these names when the CLI starts; importing
:mod:`scenarios.campaigns.chaos` itself pulls in the engine and every assignor, which would
slow down every ``groupsim`` command (``groupsim --help`` included). The campaign uses the
same values (``tests/scenarios/cli/test_startup.py`` checks that they agree).
"""

from __future__ import annotations

__all__ = [
    "KINDS",
    "PROTOCOLS",
    "ASSIGNOR_OF",
    "FAULT_KINDS",
    "OWN_STREAM_FAULTS",
    "DEFAULT_MAX_CPU_S",
]

#: What a campaign generates: Connect groups, Kafka Streams applications or plain consumer
#: groups (``--kind``).
KINDS = ("connect", "streams", "consumer")

#: ``connect.protocol`` values a chaos run can start from.
PROTOCOLS = ("eager", "compatible", "sessioned", "static")
#: The assignor the group's leader runs under each protocol.
ASSIGNOR_OF = {
    "eager": "eager",
    "compatible": "incremental_cooperative",
    "sessioned": "incremental_cooperative",
    "static": "static",
}
#: Fault kinds: ``crash``/``leave`` (a worker stops, hard or clean, and mostly comes back),
#: ``partition``, ``loss``, ``latency`` (its coordinator link), ``slow`` (its herder stalls),
#: ``failover`` (the coordinator moves), ``config`` (connector writes and protocol changes;
#: for Streams: a restart with a wiped state directory),
#: ``delay`` (a ``delay_request``: a member's requests reach the coordinator late, overtaken),
#: ``zombie`` (Streams and consumers: a static member is cut off or stalled and a second
#: process with its ``group.instance.id`` joins meanwhile, KIP-345; Connect workers have no
#: instance id).
FAULT_KINDS = (
    "crash",
    "leave",
    "partition",
    "loss",
    "latency",
    "slow",
    "failover",
    "config",
    "delay",
    "zombie",
)
#: Fault kinds drawn from a stream of their own (after the others), so that enabling them
#: leaves every other draw of a run as it was.
OWN_STREAM_FAULTS = ("delay", "zombie")

#: A chaos run's CPU budget by default (seconds; ``--max-cpu-seconds``). Clean runs take
#: 0.01–0.6 s with 3–10 members and ~5 s with 50 Streams clients; a livelocked one would run
#: for minutes.
DEFAULT_MAX_CPU_S = 300.0
