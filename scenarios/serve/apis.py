"""The served broker's APIs besides the group ones: ApiVersions, Metadata, FindCoordinator,
OffsetCommit/OffsetFetch (in memory), ListOffsets, Fetch (empty partitions), DescribeGroups
and ListGroups, in the versions the clients of docs/serve.md send (messages built with kio).

:class:`OtherApis` is mixed into :class:`scenarios.serve.broker.Broker`; its methods read the
broker's state (options, groups, committed offsets, the failover flag).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import trio

from coordinator.group import GroupCoordinator
from protocol import group as pg

from . import wire
from .config import ServeOptions
from .wire import build, kio_error, td

__all__ = ["OtherApis"]

_CLUSTER_ID = "groupsim"
_NO_AUTH_OPS = -(2**31)  # "authorized operations not requested"
_E = pg.ErrorCode
_UNKNOWN_TOPIC_OR_PARTITION = 3
_UNKNOWN_TOPIC_ID = 100
_GROUP_ID_NOT_FOUND = 69
_UNSUPPORTED_VERSION = 35
_COORDINATOR_KEY_TYPE_GROUP = 0


if TYPE_CHECKING:
    from .connection import Connection


class OtherApis:
    """Answers to the non-group APIs (each takes the connection and the decoded request).

    The attributes below are the :class:`~scenarios.serve.broker.Broker`'s own.
    """

    options: ServeOptions
    port: int
    advertised_host: str
    groups: dict[str, GroupCoordinator]
    offsets: dict[tuple[str, str, int], tuple[int, str | None]]
    down: bool
    topic_ids: dict[str, uuid.UUID]
    _ids_topic: dict[uuid.UUID, str]
    _hosts: dict[str, str]

    def _emit(self, kind: str, **fields: Any) -> None:
        raise NotImplementedError

    async def _api_versions(self, conn: Connection, request: wire.Request) -> Any:
        """ApiVersions (KIP-511): the served ranges; an unknown version gets a v0 answer with
        UNSUPPORTED_VERSION and ApiVersions' own range only (``KafkaApis
        #handleApiVersionsRequest``, ``ApiVersionsRequest#getErrorResponse``)."""
        version = request.api_version
        error = 0
        served = sorted(wire.API_VERSIONS.items())
        if request.body is None:
            # ApiVersionsRequest#getErrorResponse: UNSUPPORTED_VERSION lists ApiVersions' own
            # range only, so the client can retry with a version both sides know
            version, error = 0, _UNSUPPORTED_VERSION
            served = [(wire.APIVERSIONS_KEY, wire.API_VERSIONS[wire.APIVERSIONS_KEY])]
        mod = wire.module(18, version, True)
        keys = tuple(
            build(mod.ApiVersion, api_key=key, min_version=low, max_version=high)
            for key, (low, high) in served
        )
        body = build(
            wire.response_class(18, version),
            error_code=kio_error(error),
            api_keys=keys,
            throttle_time=td(0),
        )
        return body

    async def _metadata(self, conn: Connection, request: wire.Request) -> Any:
        version = request.api_version
        mod = wire.module(3, version, True)
        req = request.body
        topics = self.options.topics
        if req.topics is None or (version == 0 and not req.topics):
            names = sorted(topics)
        else:
            names = []
            for t in req.topics:
                name = t.name
                if name is None and getattr(t, "topic_id", None) is not None:
                    name = self._ids_topic.get(t.topic_id)
                names.append(name or "")
        result = []
        for name in names:
            count = topics.get(name)
            if count is None:
                result.append(
                    build(
                        mod.MetadataResponseTopic,
                        error_code=kio_error(_UNKNOWN_TOPIC_OR_PARTITION),
                        name=name,
                        topic_id=uuid.UUID(int=0),
                        is_internal=False,
                        partitions=(),
                        topic_authorized_operations=_NO_AUTH_OPS,
                    )
                )
                continue
            partitions = tuple(
                build(
                    mod.MetadataResponsePartition,
                    error_code=kio_error(0),
                    partition_index=p,
                    leader_id=0,
                    leader_epoch=0,
                    replica_nodes=(0,),
                    isr_nodes=(0,),
                    offline_replicas=(),
                )
                for p in range(count)
            )
            result.append(
                build(
                    mod.MetadataResponseTopic,
                    error_code=kio_error(0),
                    name=name,
                    topic_id=self.topic_ids[name],
                    is_internal=False,
                    partitions=partitions,
                    topic_authorized_operations=_NO_AUTH_OPS,
                )
            )
        broker = build(
            mod.MetadataResponseBroker,
            node_id=0,
            host=self.advertised_host,
            port=self.port,
            rack=None,
        )
        return build(
            wire.response_class(3, version),
            throttle_time=td(0),
            brokers=(broker,),
            cluster_id=_CLUSTER_ID,
            controller_id=0,
            topics=tuple(result),
            cluster_authorized_operations=_NO_AUTH_OPS,
            error_code=kio_error(0),
        )

    async def _find_coordinator(self, conn: Connection, request: wire.Request) -> Any:
        """FindCoordinator: node 0 for every group; COORDINATOR_NOT_AVAILABLE while a
        failover is in progress or for transaction coordinators (none here)."""
        version = request.api_version
        mod = wire.module(10, version, True)
        req = request.body
        key_type = getattr(req, "key_type", _COORDINATOR_KEY_TYPE_GROUP)
        bad = self.down or key_type != _COORDINATOR_KEY_TYPE_GROUP
        error = _E.COORDINATOR_NOT_AVAILABLE if bad else _E.NONE
        node, host, port = (-1, "", -1) if bad else (0, self.advertised_host, self.port)
        if version >= 4:
            coordinators = tuple(
                build(
                    mod.Coordinator,
                    key=key,
                    node_id=node,
                    host=host,
                    port=port,
                    error_code=kio_error(error),
                    error_message=None,
                )
                for key in req.coordinator_keys
            )
            return build(
                wire.response_class(10, version), throttle_time=td(0), coordinators=coordinators
            )
        return build(
            wire.response_class(10, version),
            throttle_time=td(0),
            error_code=kio_error(error),
            error_message=None,
            node_id=node,
            host=host,
            port=port,
        )

    def _commit_error(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        version: int,
    ) -> int:
        """The error of an OffsetCommit, as Kafka 4.0 checks it for a classic group
        (``OffsetMetadataManager#validateOffsetCommit`` then ``ClassicGroup
        #validateOffsetCommit`` / ``#validateMember``).

        Groupsim does not create Kafka's "simple" group for a generation -1 commit to an
        unknown group; the commit is accepted and the group stays unknown.
        """
        if self.down:
            return _E.NOT_COORDINATOR
        coord = self.groups.get(group_id)
        if coord is None:
            if generation < 0:
                return _E.NONE
            return _GROUP_ID_NOT_FOUND if version >= 9 else _E.ILLEGAL_GENERATION
        state = coord.state.value
        if state == "Dead":
            return _E.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and state == "Empty":
            return _E.NONE
        if generation >= 0 or member_id or instance_id is not None:
            static_member_id = getattr(coord, "static_member_id", None)  # KIP-345 coordinators
            if instance_id is not None and static_member_id is not None:
                existing = static_member_id(instance_id)
                if existing is None:
                    return _E.UNKNOWN_MEMBER_ID
                if existing != member_id:
                    return _E.FENCED_INSTANCE_ID
            if coord.member(member_id) is None:
                return _E.UNKNOWN_MEMBER_ID
            if generation != coord.generation_id:
                return _E.ILLEGAL_GENERATION
        elif state != "Empty":
            return _E.UNKNOWN_MEMBER_ID
        if state == "CompletingRebalance":
            return _E.REBALANCE_IN_PROGRESS
        return _E.NONE

    async def _offset_commit(self, conn: Connection, request: wire.Request) -> Any:
        """OffsetCommit, kept in memory (survives a coordinator failover, as
        ``__consumer_offsets`` does)."""
        version = request.api_version
        mod = wire.module(8, version, True)
        req = request.body
        generation: int = getattr(
            req, "generation_id_or_member_epoch", getattr(req, "generation_id", -1)
        )
        error = self._commit_error(
            req.group_id,
            generation,
            req.member_id,
            getattr(req, "group_instance_id", None),
            version,
        )
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                if error == _E.NONE:
                    key = (req.group_id, t.name, p.partition_index)
                    self.offsets[key] = (p.committed_offset, p.committed_metadata)
                parts.append(
                    build(
                        mod.OffsetCommitResponsePartition,
                        partition_index=p.partition_index,
                        error_code=kio_error(error),
                    )
                )
            topics.append(
                build(mod.OffsetCommitResponseTopic, name=t.name, partitions=tuple(parts))
            )
        self._emit(
            "offset_commit",
            member=conn.address,
            group=req.group_id,
            member_id=req.member_id,
            generation=generation,
            error=kio_error(error).name.upper(),
            partitions=sum(len(t.partitions) for t in req.topics),
        )
        return build(wire.response_class(8, version), throttle_time=td(0), topics=tuple(topics))

    def _fetched_topics(self, mod: Any, group_id: str, topics: Any, names: tuple[str, ...]) -> Any:
        error = _E.NOT_COORDINATOR if self.down else _E.NONE
        if topics is None:  # all committed offsets of the group
            wanted: dict[str, list[int]] = {}
            for g, topic, part in sorted(self.offsets):
                if g == group_id:
                    wanted.setdefault(topic, []).append(part)
            pairs = list(wanted.items())
        else:
            pairs = [(t.name, list(getattr(t, names[0]))) for t in topics]
        result = []
        for topic, parts in pairs:
            entries = []
            for part in parts:
                offset, metadata = self.offsets.get((group_id, topic, part), (-1, ""))
                entries.append(
                    build(
                        getattr(mod, names[1]),
                        partition_index=part,
                        committed_offset=offset,
                        committed_leader_epoch=-1,
                        metadata=metadata if metadata is not None else "",
                        error_code=kio_error(error),
                    )
                )
            result.append(build(getattr(mod, names[2]), name=topic, partitions=tuple(entries)))
        return tuple(result), error

    async def _offset_fetch(self, conn: Connection, request: wire.Request) -> Any:
        version = request.api_version
        mod = wire.module(9, version, True)
        req = request.body
        if version >= 8:
            names = (
                "partition_indexes",
                "OffsetFetchResponsePartitions",
                "OffsetFetchResponseTopics",
            )
            groups = []
            for g in req.groups:
                topics, error = self._fetched_topics(mod, g.group_id, g.topics, names)
                groups.append(
                    build(
                        mod.OffsetFetchResponseGroup,
                        group_id=g.group_id,
                        topics=topics,
                        error_code=kio_error(error),
                    )
                )
            return build(wire.response_class(9, version), throttle_time=td(0), groups=tuple(groups))
        names = ("partition_indexes", "OffsetFetchResponsePartition", "OffsetFetchResponseTopic")
        topics, error = self._fetched_topics(mod, req.group_id, req.topics, names)
        return build(
            wire.response_class(9, version),
            throttle_time=td(0),
            topics=topics,
            error_code=kio_error(error),
        )

    async def _list_offsets(self, conn: Connection, request: wire.Request) -> Any:
        """ListOffsets: every partition is empty, so earliest = latest = 0."""
        version = request.api_version
        mod = wire.module(2, version, True)
        topics = []
        for t in request.body.topics:
            known = self.options.topics.get(t.name)
            parts = tuple(
                build(
                    mod.ListOffsetsPartitionResponse,
                    partition_index=p.partition_index,
                    error_code=kio_error(
                        0
                        if known is not None and 0 <= p.partition_index < known
                        else _UNKNOWN_TOPIC_OR_PARTITION
                    ),
                    timestamp=-1,
                    offset=0,
                    leader_epoch=0,
                )
                for p in t.partitions
            )
            topics.append(build(mod.ListOffsetsTopicResponse, name=t.name, partitions=parts))
        return build(wire.response_class(2, version), throttle_time=td(0), topics=tuple(topics))

    async def _fetch(self, conn: Connection, request: wire.Request) -> Any:
        """Fetch: no records; answered after ``min(max_wait_ms, fetch_wait_cap_ms)`` as a
        broker answers a fetch that finds no data (``DelayedFetch``)."""
        version = request.api_version
        mod = wire.module(1, version, True)
        req = request.body
        wait_ms = min(max(wire.ms(req.max_wait, 0), 0), self.options.fetch_wait_cap_ms)
        responses = []
        for t in req.topics:
            if version >= 13:
                name = self._ids_topic.get(t.topic_id)
                missing = _UNKNOWN_TOPIC_ID
            else:
                name = t.topic
                missing = _UNKNOWN_TOPIC_OR_PARTITION
            count = self.options.topics.get(name or "")
            parts = tuple(
                build(
                    mod.PartitionData,
                    partition_index=p.partition,
                    error_code=kio_error(
                        0 if count is not None and 0 <= p.partition < count else missing
                    ),
                    high_watermark=0,
                    last_stable_offset=0,
                    log_start_offset=0,
                    aborted_transactions=None,
                    preferred_read_replica=-1,
                    records=b"",
                )
                for p in t.partitions
            )
            responses.append(
                build(
                    mod.FetchableTopicResponse,
                    topic=name or "",
                    topic_id=getattr(t, "topic_id", None),
                    partitions=parts,
                )
            )
        if wait_ms and responses:
            with trio.move_on_after(wait_ms / 1000):
                await conn.watch_eof()
            if conn.eof:
                return None
        return build(
            wire.response_class(1, version),
            throttle_time=td(0),
            error_code=kio_error(0),
            session_id=0,
            responses=tuple(responses),
        )

    async def _describe_groups(self, conn: Connection, request: wire.Request) -> Any:
        """DescribeGroups (``GroupMetadataManager#describeGroups``, through
        :meth:`~coordinator.group.GroupCoordinator.describe`): the protocol and members' metadata
        only when Stable, members' assignments in every state; an unknown group is ``Dead``
        with no error."""
        version = request.api_version
        mod = wire.module(15, version, True)
        described = []
        for group_id in request.body.groups:
            coord = self.groups.get(group_id)
            error = _E.NOT_COORDINATOR if self.down else _E.NONE
            members = []
            if coord is None or self.down:
                state, protocol_type, protocol = "Dead", "", ""
            else:
                group = coord.describe()
                state, protocol_type, protocol = group.state, group.protocol_type, group.protocol
                for m in group.members:
                    members.append(
                        build(
                            mod.DescribedGroupMember,
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id,
                            client_id=m.client_id,
                            client_host="/" + self._hosts.get(m.source, "unknown"),
                            member_metadata=m.metadata,
                            member_assignment=m.assignment,
                        )
                    )
            described.append(
                build(
                    mod.DescribedGroup,
                    error_code=kio_error(error),
                    error_message=None,
                    group_id=group_id,
                    group_state=state,
                    protocol_type=protocol_type,
                    protocol_data=protocol,
                    members=tuple(members),
                    authorized_operations=_NO_AUTH_OPS,
                )
            )
        return build(wire.response_class(15, version), throttle_time=td(0), groups=tuple(described))

    async def _list_groups(self, conn: Connection, request: wire.Request) -> Any:
        version = request.api_version
        mod = wire.module(16, version, True)
        wanted = {s.lower() for s in getattr(request.body, "states_filter", ())}
        types = {s.lower() for s in getattr(request.body, "types_filter", ())}
        listed = []
        if not self.down and (not types or "classic" in types):
            for group_id in sorted(self.groups):
                coord = self.groups[group_id]
                state = coord.state.value
                if wanted and state.lower() not in wanted:
                    continue
                listed.append(
                    build(
                        mod.ListedGroup,
                        group_id=group_id,
                        protocol_type=coord.protocol_type or "",
                        group_state=state,
                        group_type="classic",
                    )
                )
        error = _E.COORDINATOR_NOT_AVAILABLE if self.down else _E.NONE
        return build(
            wire.response_class(16, version),
            throttle_time=td(0),
            error_code=kio_error(error),
            groups=tuple(listed),
        )
