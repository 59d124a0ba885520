"""``groupsim replay --conform``, leaders: hold groupsim's Connect assignors to the assignments
real leaders sent.

For every completed round of a Connect group in a trace (the leader's JoinGroup answer lists the
members; the leader's SyncGroup carries the assignments and was answered without error; a
round whose SyncGroup failed still runs the assignor, whose memory Kafka's keeps, uncompared),
groupsim's assignor for the elected protocol (``create_assignor``: ``eager`` for ``default``,
``incremental_cooperative`` for ``compatible``/``sessioned``, as Kafka's ``WorkerCoordinator``
picks) is given the inputs the real leader had and must produce the same bytes:

* the members and their metadata, in the order of the leader's JoinGroup answer;
* the generation of that answer, and the leader's last completed generation (the generation
  of its last SyncGroup answered without error; ``WorkerCoordinator.lastCompletedGenerationId``);
* the config snapshot the leader read. The trace does not decode the config topic; the
  snapshot comes from a side file, ``DIR/connect-configs.json`` (see :func:`read_configs`):
  the leader's cached snapshot is the one at the config offset of its own JoinGroup metadata,
  and when Kafka's ``ensureLeaderConfig`` reads afresh the snapshot is the one at the config
  offset the leader wrote into its assignments;
* the time: the leader's JoinGroup answer as the proxy saw it (ms since the trace began).

Kafka's leader keeps its assignor (and the incremental assignor's memory of the previous
assignment and scheduled delay) for its process's life: the replay keeps one assignor per
leader (group, client id).

Bytes that differ are decoded (``protocol.connect_codec.decode_assignment``) and compared field
by field; a ``delay_ms`` within ``tolerance_ms`` of the recorded one is a timing difference (the
real leader read its wall clock a few ms away from the proxy's), anything else a divergence
naming the round (generation), the member and the first differing field.

Kafka Streams leaders (protocol type ``consumer``, protocol ``stream``) are compared by
:mod:`.streams_leaders` when ``DIR/streams-app.json`` describes the application (active and
standby tasks per member); without it their rounds are counted under ``skipped``. Plain
consumer leaders (protocol type ``consumer`` with one of Kafka's built-in assignors) are
compared by :mod:`.consumer_leaders` given the trace's Metadata answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from members.assignors import create_assignor
from members.assignors.base import ConfigSnapshot, ConnectAssignor
from members.config import WORKER_DEFAULTS
from protocol.connect import ConnectProtocol
from protocol.connect_codec import decode_assignment, decode_subscription
from protocol.connect_json import assignment_to_json
from protocol.primitives import DecodeError
from scenarios.serve import wire

from .consumer_leaders import ASSIGNORS, MetadataAnswer, NoMetadata, consumer_round
from .exchanges import Exchange, TraceError, first_difference
from .frames import decode_response
from .streams_leaders import APP_FILE, StreamsApp, streams_round

__all__ = [
    "CONFIGS_FILE",
    "ConnectConfigs",
    "LeaderDifference",
    "LeaderConformance",
    "read_configs",
    "conform_leaders",
]

#: The side file holding what a Connect leader read from the config topic.
CONFIGS_FILE = "connect-configs.json"
#: ``WorkerCoordinator``'s assignor per elected protocol (KIP-415).
_ASSIGNOR_BY_PROTOCOL = {
    ConnectProtocol.EAGER: "eager",
    ConnectProtocol.COMPATIBLE: "incremental_cooperative",
    ConnectProtocol.SESSIONED: "incremental_cooperative",
}
#: Kafka's ``scheduled.rebalance.max.delay.ms`` default (``DistributedConfig``), ms.
DEFAULT_MAX_DELAY_MS = WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms


@dataclass(frozen=True, slots=True)
class ConnectConfigs:
    """The config topic's snapshots: ``snapshots`` in increasing offset, each
    ``(offset, {connector: task count})`` — the view of a worker that has read every record
    below ``offset`` (Kafka ``KafkaConfigBackingStore``: a snapshot's offset is the next record
    to read). ``max_delay_ms`` is the workers' ``scheduled.rebalance.max.delay.ms``."""

    snapshots: tuple[tuple[int, dict[str, int]], ...]
    max_delay_ms: int = DEFAULT_MAX_DELAY_MS

    def at(self, offset: int) -> ConfigSnapshot:
        """The snapshot of a worker at config offset ``offset`` (empty before the first)."""
        connectors: dict[str, int] = {}
        for at, view in self.snapshots:
            if at > offset:
                break
            connectors = view
        return ConfigSnapshot(offset, dict(connectors))


def read_configs(path: Path) -> ConnectConfigs:
    """Reads ``connect-configs.json``::

        {"scheduled.rebalance.max.delay.ms": 8000,
         "snapshots": [{"offset": 1, "connectors": {"c1": 0}},
                       {"offset": 9, "connectors": {"c1": 6}}]}

    ``snapshots`` lists each offset from which the view changes (connector → committed task
    count; a connector with a config and no committed tasks counts 0).

    Raises:
        TraceError: the file cannot be read or does not have this shape.
    """
    try:
        data = json.loads(path.read_text())
        snapshots = tuple(
            (int(s["offset"]), {str(c): int(n) for c, n in s["connectors"].items()})
            for s in data["snapshots"]
        )
        max_delay = int(data.get("scheduled.rebalance.max.delay.ms", DEFAULT_MAX_DELAY_MS))
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TraceError(f"{path}: not a connect-configs file ({exc!r})") from None
    return ConnectConfigs(tuple(sorted(snapshots, key=lambda s: s[0])), max_delay)


@dataclass(frozen=True, slots=True)
class LeaderDifference:
    """One assignment groupsim's assignor made otherwise than the real leader: ``kind`` is
    ``"divergence"`` or ``"timing"``; ``field`` the first differing field of ``member``'s
    assignment (``"members"`` when the two name different members)."""

    kind: str
    t_ms: int
    group: str
    generation: int
    leader: str
    member: str
    field: str
    recorded: Any
    groupsim: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "t_ms": self.t_ms,
            "group": self.group,
            "generation": self.generation,
            "leader": self.leader,
            "member": self.member,
            "field": self.field,
            "recorded": self.recorded,
            "groupsim": self.groupsim,
        }


@dataclass(slots=True)
class LeaderConformance:
    """Rounds ``compared``, ``equal`` (the same bytes for every member), the ``differences``
    and rounds ``skipped`` with why."""

    compared: int = 0
    equal: int = 0
    differences: list[LeaderDifference] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def divergences(self) -> list[LeaderDifference]:
        return [d for d in self.differences if d.kind == "divergence"]

    @property
    def timing(self) -> list[LeaderDifference]:
        return [d for d in self.differences if d.kind == "timing"]

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def count(
        self,
        first: tuple[str, str, Any, Any] | None,
        t_ms: int,
        group_id: str,
        generation: int,
        leader: str,
    ) -> None:
        """One compared leader round of group ``group_id``, generation ``generation``, led
        by member id ``leader`` at ``t_ms`` (ms of the recorded trace): equal when ``first``
        is None, else a divergence at its first difference (``(member, field, recorded,
        groupsim)``)."""
        self.compared += 1
        if first is None:
            self.equal += 1
        else:
            self.differences.append(
                LeaderDifference("divergence", t_ms, group_id, generation, leader, *first)
            )

    def to_json(self) -> dict[str, Any]:
        """``conformance.json``'s ``leaders`` object."""
        return {
            "rounds": self.compared,
            "equal": self.equal,
            "timing_differences": len(self.timing),
            "divergences": len(self.divergences),
            "skipped": dict(sorted(self.skipped.items())),
            "differences": [d.to_json() for d in self.differences],
        }


@dataclass(slots=True)
class _Join:
    """A leader's JoinGroup answer awaiting its SyncGroup."""

    t_ms: int
    client: str
    protocol_type: str
    protocol_name: str
    members: list[tuple[str, bytes]]
    #: (member id, group.instance.id, metadata) of the answer, for consumer assignors
    consumer_members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


def conform_leaders(
    exchanges: list[Exchange],
    configs: ConnectConfigs | None,
    tolerance_ms: int = 100,
    app: StreamsApp | None = None,
    end_offsets: list[tuple[int, str, dict[tuple[str, int], int]]] | None = None,
    metadata: list[MetadataAnswer] | None = None,
) -> LeaderConformance:
    """Runs groupsim's assignor on every completed Connect round of the trace.

    Args:
        exchanges: :func:`scenarios.record.conform.read_exchanges`' output.
        configs: the config topic's snapshots (``connect-configs.json``); None skips every
            Connect round (counted, with the reason).
        tolerance_ms: how far a ``delay_ms`` may stray from the recorded one (ms).
        app: the Streams application (``streams-app.json``); None skips Streams rounds.
        end_offsets: the trace's ListOffsets answers
            (:func:`scenarios.record.streams_leaders.read_end_offsets`).
        metadata: the trace's Metadata answers
            (:func:`scenarios.record.consumer_leaders.read_metadata`); None skips the rounds
            of plain consumer groups.

    Returns:
        the :class:`LeaderConformance` verdict.
    """
    verdict = LeaderConformance()
    joins: dict[tuple[str, str, int], _Join] = {}
    last_completed: dict[tuple[str, str], int] = {}
    assignors: dict[tuple[str, str, str], ConnectAssignor] = {}
    for ex in exchanges:
        if ex.api_key not in (11, 14):
            continue
        request = wire.decode_request(ex.request_raw)
        body = request.body
        answer = None
        if ex.response_raw is not None:
            _, answer = decode_response(ex.response_raw, ex.api_key, ex.version)
        ok = answer is not None and int(getattr(answer.error_code, "value", answer.error_code)) == 0
        if ex.api_key == 11:
            if ok and answer is not None and answer.members and answer.member_id == answer.leader:
                joins[(body.group_id, answer.member_id, int(answer.generation_id))] = _Join(
                    ex.response_t_ms or ex.t_ms,
                    request.client_id,
                    str(getattr(body, "protocol_type", "") or ""),
                    str(answer.protocol_name or ""),
                    [(m.member_id, bytes(m.metadata)) for m in answer.members],
                    [
                        (m.member_id, getattr(m, "group_instance_id", None), bytes(m.metadata))
                        for m in answer.members
                    ],
                )
            continue
        generation = int(body.generation_id)
        previous = last_completed.get((body.group_id, request.client_id), -1)
        if ok:  # a SyncGroup answered without error completes the generation for its member
            last_completed[(body.group_id, request.client_id)] = generation
        join = joins.pop((body.group_id, body.member_id, generation), None)
        if join is None or not body.assignments:
            continue
        recorded = {a.member_id: bytes(a.assignment) for a in body.assignments}
        if not ok:
            # The leader's assignor ran (and a Connect assignor keeps what it assigned), but
            # the round did not complete: run ours for its state, compare nothing.
            verdict.skip("rounds whose leader's SyncGroup failed (assignor run, not compared)")
            if join.protocol_type == "connect" and configs is not None:
                _compare_round(
                    LeaderConformance(),
                    assignors,
                    configs,
                    join,
                    body.group_id,
                    body.member_id,
                    generation,
                    previous,
                    recorded,
                    tolerance_ms,
                )
            continue
        if join.protocol_type == "consumer" and join.protocol_name == "stream" and app:
            first = streams_round(
                app,
                join.members,
                body.member_id,
                join.client,
                ex.t_ms,
                end_offsets or [],
                recorded,
            )
            verdict.count(first, join.t_ms, body.group_id, generation, body.member_id)
            continue
        if join.protocol_type == "consumer" and join.protocol_name in ASSIGNORS:
            if metadata is None:
                verdict.skip(f"consumer/{join.protocol_name} leaders (no metadata given)")
                continue
            try:
                first = consumer_round(
                    join.protocol_name,
                    join.consumer_members,
                    join.client,
                    ex.t_ms,
                    metadata,
                    recorded,
                )
            except NoMetadata:
                verdict.skip(
                    f"consumer/{join.protocol_name} leaders (no Metadata answer in the trace "
                    "names a subscribed topic)"
                )
                continue
            except DecodeError:
                # ConsumerProtocol#deserializeSubscription would throw in the real leader too
                verdict.skip(
                    f"consumer/{join.protocol_name} leaders (a member's subscription or the "
                    "leader's assignment bytes do not decode)"
                )
                continue
            verdict.count(first, join.t_ms, body.group_id, generation, body.member_id)
            continue
        if join.protocol_type != "connect":
            verdict.skip(
                f"{join.protocol_type or '?'}/{join.protocol_name} leaders"
                + (f" (no {APP_FILE} beside the trace)" if join.protocol_name == "stream" else "")
            )
            continue
        if configs is None:
            verdict.skip(f"Connect leaders: no {CONFIGS_FILE} beside the trace")
            continue
        _compare_round(
            verdict,
            assignors,
            configs,
            join,
            body.group_id,
            body.member_id,
            generation,
            previous,
            recorded,
            tolerance_ms,
        )
    return verdict


def _compare_round(
    verdict: LeaderConformance,
    assignors: dict[tuple[str, str, str], ConnectAssignor],
    configs: ConnectConfigs,
    join: _Join,
    group: str,
    leader: str,
    generation: int,
    last_completed: int,
    recorded: dict[str, bytes],
    tolerance_ms: int,
) -> None:
    protocol = ConnectProtocol.from_protocol_name(join.protocol_name)
    name = _ASSIGNOR_BY_PROTOCOL.get(protocol)
    if name is None:
        verdict.skip(f"Connect protocol {join.protocol_name} (KIP-987, not in Kafka)")
        return
    key = (group, join.client, name)
    assignor = assignors.get(key)
    if assignor is None:
        assignor = assignors[key] = create_assignor(name, max_delay_ms=configs.max_delay_ms)
    own = dict(join.members)[leader]
    cached = configs.at(decode_subscription(own).config_offset)
    written = decode_assignment(recorded[leader]).config_offset if leader in recorded else -1
    fresh = configs.at(max(written, cached.offset))
    result = assignor.perform_assignment(
        leader_id=leader,
        protocol=protocol,
        members=join.members,
        snapshot=cached,
        refresh_snapshot=lambda: fresh,
        last_completed_generation=last_completed,
        generation=generation,
        now_ms=join.t_ms,
    )
    verdict.compared += 1
    ours = result.assignments
    if set(ours) != set(recorded):
        verdict.differences.append(
            LeaderDifference(
                "divergence",
                join.t_ms,
                group,
                generation,
                leader,
                "",
                "members",
                sorted(recorded),
                sorted(ours),
            )
        )
        return
    kinds: list[LeaderDifference] = []
    for member, data in recorded.items():
        if ours[member] == data:
            continue
        mine, theirs = (
            assignment_to_json(decode_assignment(ours[member])),
            assignment_to_json(decode_assignment(data)),
        )
        first = first_difference(theirs, mine)
        if first is None:  # same fields, other bytes (an encoding difference)
            first = ("bytes", data.hex(), ours[member].hex())
        path, was, now = first
        timing = path == "delay_ms" and abs(int(was) - int(now)) <= tolerance_ms
        if timing:
            rest = dict(mine, delay_ms=theirs["delay_ms"])
            timing = first_difference(theirs, rest) is None
        kinds.append(
            LeaderDifference(
                "timing" if timing else "divergence",
                join.t_ms,
                group,
                generation,
                leader,
                member,
                path,
                was,
                now,
            )
        )
    if not kinds:
        verdict.equal += 1
    verdict.differences.extend(kinds)
