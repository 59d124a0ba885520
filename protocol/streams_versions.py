"""Kafka Streams' assignment-protocol versions and version probing (KIP-268).

The version constants of ``StreamsAssignmentProtocolVersions`` (and the two of
``SubscriptionInfo`` / ``Task`` both messages' codecs read), and the two decisions Kafka's
``StreamsPartitionAssignor`` makes from them: the leader's choice of the assignment version
(:func:`choose_assignment_version`) and a member's reaction to the versions of its assignment
(:func:`next_subscription_version`). The messages themselves are in
:mod:`protocol.streams_subscription` (``SubscriptionInfo``) and
:mod:`protocol.streams_assignment` (``AssignmentInfo``); their value types in
:mod:`protocol.streams_types`.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "LATEST_SUPPORTED_VERSION",
    "EARLIEST_PROBEABLE_VERSION",
    "MIN_VERSION_OFFSET_SUM_SUBSCRIPTION",
    "MIN_NAMED_TOPOLOGY_VERSION",
    "UNKNOWN",
    "StreamsVersionError",
    "choose_assignment_version",
    "next_subscription_version",
]

#: ``StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION``.
LATEST_SUPPORTED_VERSION = 11
#: ``StreamsAssignmentProtocolVersions.EARLIEST_PROBEABLE_VERSION``: version probing needs every
#: member at 3 or above (v3 added ``latest_supported_version``).
EARLIEST_PROBEABLE_VERSION = 3
#: ``SubscriptionInfo.MIN_VERSION_OFFSET_SUM_SUBSCRIPTION``: task offset sums replace the
#: prev/standby task sets from this version.
MIN_VERSION_OFFSET_SUM_SUBSCRIPTION = 7
#: ``StreamsAssignmentProtocolVersions.MIN_NAMED_TOPOLOGY_VERSION``.
MIN_NAMED_TOPOLOGY_VERSION = 10
#: ``StreamsAssignmentProtocolVersions.UNKNOWN``: the latest/commonly supported version of a
#: v1/v2 message, which does not carry one.
UNKNOWN = -1


class StreamsVersionError(ValueError):
    """Versions Kafka refuses to work with (its ``TaskAssignmentException`` /
    ``IllegalStateException`` in ``StreamsPartitionAssignor``), e.g. a future subscription next
    to a pre-v3 one, or an assignment of a higher version than the member subscribed with.
    """


# ----------------------------------------------------------------------------------------------
# Version probing


def choose_assignment_version(
    subscription_versions: Iterable[int],
    latest_supported_versions: Iterable[int],
    latest: int = LATEST_SUPPORTED_VERSION,
) -> tuple[int, int, bool]:
    """The leader's version choice (``StreamsPartitionAssignor.assign`` +
    ``checkMetadataVersions``).

    Args:
        subscription_versions: every member's subscription header (``version``).
        latest_supported_versions: every member's ``latest_supported_version`` (-1 for v1/v2).
        latest: the leader's own ``LATEST_SUPPORTED_VERSION`` (11 for this release; lower to
            emulate a leader of an older Streams release: a subscription above it is "future").

    Returns:
        ``(used_version, commonly_supported_version, is_version_probing)``:
        ``used_version`` = min(latest, every subscription version) — the version of every
        assignment; ``commonly_supported_version`` = min(latest, every latest supported
        version); ``is_version_probing`` = some member sent a future (> latest)
        subscription. A probing rebalance forces a follow-up rebalance
        (``rebalanceRequired``); the future member gets an assignment it decodes at
        ``used_version`` and then resubscribes lower.

    Raises:
        StreamsVersionError: a future subscription together with one below
            ``EARLIEST_PROBEABLE_VERSION`` (3) — Kafka's "incompatible pre Kafka 2.0
            subscription", which newer releases turn into an ``ASSIGNMENT_ERROR`` assignment.
    """
    min_received = latest
    future = UNKNOWN
    for v in subscription_versions:
        min_received = min(min_received, v)
        if v > latest:
            future = v
    min_supported = min([latest, *latest_supported_versions])
    if future == UNKNOWN:
        return min_received, min_supported, False
    if min_received >= EARLIEST_PROBEABLE_VERSION:
        return min_received, min_supported, True
    raise StreamsVersionError(
        f"received a future (version probing) subscription (version {future}) and an "
        f"incompatible pre Kafka 2.0 subscription (version {min_received}) in the same group"
    )


def next_subscription_version(
    used_version: int,
    assignment_version: int,
    commonly_supported_version: int,
    latest_supported_version: int = LATEST_SUPPORTED_VERSION,
) -> tuple[int, bool]:
    """A member's reaction to its assignment's versions (``StreamsPartitionAssignor
    .validateMetadataVersions`` + ``maybeUpdateSubscriptionVersion``).

    Applies only to an assignment with ``error_code == 0`` (Kafka returns before looking at
    versions otherwise).

    Args:
        used_version: the version the member subscribed with.
        assignment_version / commonly_supported_version: from the received assignment.
        latest_supported_version: the member's own latest version (11 for this release).

    Returns:
        ``(version to subscribe with next, rejoin at once)``. From an assignment of version
        >= 3: a higher commonly supported version upgrades to it (end of a rolling upgrade); an
        assignment version below ``used_version`` downgrades to the commonly supported version
        (successful probe). Either asks for an immediate rebalance. Otherwise no change.

    Raises:
        StreamsVersionError: the assignment version exceeds ``used_version``, or the commonly
            supported version exceeds ``latest_supported_version``.
    """
    if assignment_version > used_version:
        raise StreamsVersionError(
            f"sent a version {used_version} subscription but got an assignment with higher "
            f"version {assignment_version}"
        )
    if commonly_supported_version > latest_supported_version:
        raise StreamsVersionError(
            f"commonly supported version {commonly_supported_version} is above this member's "
            f"latest supported version {latest_supported_version}"
        )
    if assignment_version >= EARLIEST_PROBEABLE_VERSION:
        if commonly_supported_version > used_version:
            return commonly_supported_version, True
        if assignment_version < used_version:
            return commonly_supported_version, True
    return used_version, False
