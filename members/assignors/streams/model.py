"""The data model Kafka Streams' task assignors work on: task ids, process ids, client states.

Kafka classes followed: ``TaskId``, ``ProcessId`` (a ``java.util.UUID``), ``ClientState``
(``processor/internals/assignment/ClientState.java``), ``AssignmentConfigs`` and the
``StreamsConfig`` validators of the assignment configs.

Ordering is Kafka's everywhere an assignor iterates a sorted container:

* :class:`TaskId` orders by (subtopology, partition) — the natural order of a TaskId without a
  named topology.
* :class:`ProcessId` orders as ``UUID.compareTo``: most-significant 64 bits as a *signed* long,
  then least-significant as a signed long. ``PID_<n>`` means ``UUID(0, n)`` (Kafka's tests'
  ``processIdForInt``); any other label that is not a UUID orders by Java ``String.compareTo``,
  after every UUID-valued id (groupsim's rule for a mix; Kafka only ever has UUIDs).
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, get_args

from protocol.errors import InputError
from protocol.java_hashing import spread, string_hash, uuid_hash
from protocol.java_strings import java_string_key
from protocol.kafka_configs import STREAMS_DEFAULTS, RackAwareStrategy

__all__ = [
    "LATEST_OFFSET",
    "UNKNOWN_OFFSET_SUM",
    "JAVA_LONG_MAX",
    "JAVA_INT_MAX",
    "STRATEGIES",
    "MAX_CLIENT_TAGS",
    "MAX_TAG_KEY_LENGTH",
    "MAX_TAG_VALUE_LENGTH",
    "StreamsAssignmentError",
    "TaskId",
    "ProcessId",
    "ClientState",
    "AssignmentConfigs",
    "task_id_java_hash",
    "process_id_java_hash",
    "validate_client_tags",
]

#: ``Task.LATEST_OFFSET``: the offset sum (and lag) of a task the client ran as active.
LATEST_OFFSET = -2
#: ``SubscriptionInfo.UNKNOWN_OFFSET_SUM``: the client's offset sum is unknown (old subscription).
UNKNOWN_OFFSET_SUM = -3
JAVA_LONG_MAX = 2**63 - 1
JAVA_INT_MAX = 2**31 - 1

#: ``rack.aware.assignment.strategy`` values (``StreamsConfig.RACK_AWARE_ASSIGNMENT_STRATEGY_*``).
STRATEGIES: tuple[str, ...] = get_args(RackAwareStrategy)
#: ``StreamsConfig.validateRackAwarenessConfiguration`` limits.
MAX_CLIENT_TAGS = 5
MAX_TAG_KEY_LENGTH = 20
MAX_TAG_VALUE_LENGTH = 30

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1


class StreamsAssignmentError(InputError):
    """Input a Streams assignor cannot work on (Kafka would throw or refuse the config).

    The message is one line saying what is wrong.
    """


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x8000_0000 else value


def _signed64(value: int) -> int:
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


class TaskId(NamedTuple):
    """Kafka ``TaskId(subtopology, partition)`` (no named topology); written ``"0_1"``.

    Tuple order is Kafka's natural order (subtopology, then partition).
    """

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    def __repr__(self) -> str:
        return f"TaskId({self.subtopology}_{self.partition})"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        """``"<subtopology>_<partition>"`` → TaskId (both decimal, 0..2^31-1).

        Raises:
            StreamsAssignmentError: any other shape.
        """
        m = _TASK_RE.fullmatch(text)
        if m is None:
            raise StreamsAssignmentError(
                f"bad task id {text!r} (expected '<subtopology>_<partition>', e.g. '0_1')"
            )
        sub, part = int(m.group(1)), int(m.group(2))
        if sub > JAVA_INT_MAX or part > JAVA_INT_MAX:
            raise StreamsAssignmentError(
                f"bad task id {text!r} (numbers must be <= {JAVA_INT_MAX})"
            )
        return cls(sub, part)


_TASK_RE = re.compile(r"(0|[1-9][0-9]*)_(0|[1-9][0-9]*)")
_PID_RE = re.compile(r"PID_(0|[1-9][0-9]*)")
_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def task_id_java_hash(task: TaskId) -> int:
    """Java ``TaskId.hashCode()``: ``Objects.hash(subtopology, partition, null)`` as int32."""
    return _int32(31 * (31 * (31 + task.subtopology) + task.partition))


def process_id_java_hash(pid: ProcessId) -> int:
    """Java ``ProcessId.hashCode()`` = ``UUID.hashCode()`` of its id (int32).

    A label that is not a UUID (groupsim's extension; Kafka only has UUIDs) hashes as its
    ``String.hashCode()``.
    """
    return pid.java_hash


def _java_hash_of(label: str, key: tuple[int, int, int] | tuple[int, bytes]) -> int:
    if len(key) == 3:
        return uuid_hash(key[1], key[2])
    return string_hash(label)


class ProcessId:
    """A Streams client's process id (Kafka ``ProcessId`` wrapping a ``java.util.UUID``).

    ``label`` is how the id is written in groupsim's JSON: a UUID string, ``PID_<n>``
    (= ``UUID(0, n)``) or any other non-empty label. ``key`` is the sort key (see module doc);
    ids compare and hash by ``key``, so ``PID_1`` and ``00000000-0000-0000-0000-000000000001``
    are the same process. Build with :meth:`of`.
    """

    __slots__ = ("label", "key", "_hash", "java_hash", "java_spread")

    def __init__(self, label: str, key: tuple[int, int, int] | tuple[int, bytes]) -> None:
        self.label = label
        self.key = key
        self._hash = hash(key)
        #: Java ``ProcessId.hashCode()`` (:func:`process_id_java_hash`)
        self.java_hash = _java_hash_of(label, key)
        #: ``HashMap.hash`` of it (:func:`protocol.java_hashing.spread`)
        self.java_spread = spread(self.java_hash)

    @classmethod
    @functools.lru_cache(maxsize=4096)  # ids are values: one per label serves every leader
    def of(cls, label: str) -> ProcessId:
        """Parse ``label`` (see class doc); the same label gives the same (immutable) id.

        Raises:
            StreamsAssignmentError: an empty label, or ``PID_<n>`` with n >= 2^63.
        """
        if not label:
            raise StreamsAssignmentError("a process id must not be empty")
        m = _PID_RE.fullmatch(label)
        if m is not None:
            n = int(m.group(1))
            if n > JAVA_LONG_MAX:
                raise StreamsAssignmentError(f"bad process id {label!r} (n must be < 2^63)")
            return cls(label, (0, 0, n))
        if _UUID_RE.fullmatch(label):
            value = uuid.UUID(label).int
            return cls(label, (0, _signed64(value >> 64), _signed64(value)))
        return cls(label, (1, java_string_key(label)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProcessId) and self.key == other.key

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: ProcessId) -> bool:
        return self.key < other.key

    def __str__(self) -> str:
        return self.label

    def __repr__(self) -> str:
        return f"ProcessId({self.label})"


class ClientState:
    """One Streams client (process) as the leader's assignor sees it (Kafka ``ClientState``).

    Attributes:
        process_id: the client's :class:`ProcessId`.
        capacity: number of stream threads (consumers) of the client, >= 1.
        active / standby: the assignment being built (Kafka keeps TreeSets; iterate with
            :meth:`sorted_active` / :meth:`sorted_standby` where order matters).
        prev_active / prev_standby: tasks the client reported from its previous generation.
        lags: stateful task → lag as ``ClientState.lagFor`` returns it (``-2`` ran as active,
            ``-3`` unknown, else ``>= 0`` offsets behind; ``Long.MAX_VALUE`` allowed).
        tags: client tags (``client.tag.<key>``, KIP-708).
        rack: ``client.rack`` of the client's consumers, or ``None``.

    Invariant (Kafka's ``assignActive``/``assignStandby`` throw otherwise): a client never
    holds a task twice, in particular never both the active and a standby of one task.
    """

    __slots__ = (
        "process_id",
        "capacity",
        "active",
        "standby",
        "prev_active",
        "prev_standby",
        "lags",
        "tags",
        "rack",
    )

    def __init__(
        self,
        process_id: ProcessId,
        capacity: int = 1,
        *,
        prev_active: Iterable[TaskId] = (),
        prev_standby: Iterable[TaskId] = (),
        lags: Mapping[TaskId, int] | None = None,
        tags: Mapping[str, str] | None = None,
        rack: str | None = None,
        active: Iterable[TaskId] = (),
        standby: Iterable[TaskId] = (),
    ) -> None:
        if capacity < 1:
            raise StreamsAssignmentError(f"client {process_id}: capacity must be >= 1")
        self.process_id = process_id
        self.capacity = capacity
        self.prev_active: set[TaskId] = set(prev_active)
        self.prev_standby: set[TaskId] = set(prev_standby)
        self.lags: dict[TaskId, int] = dict(lags or {})
        self.tags: dict[str, str] = dict(tags or {})
        self.rack = rack
        self.active: set[TaskId] = set()
        self.standby: set[TaskId] = set()
        for t in active:
            self.assign_active(t)
        for t in standby:
            self.assign_standby(t)

    # --- assignment (Kafka ClientState.assignActive/assignStandby/unassign*) ---------------
    def assign_active(self, task: TaskId) -> None:
        """Add ``task`` as active; raises :class:`StreamsAssignmentError` if already held."""
        if task in self.active or task in self.standby:
            raise StreamsAssignmentError(f"client {self.process_id} already holds task {task}")
        self.active.add(task)

    def assign_standby(self, task: TaskId) -> None:
        """Add ``task`` as standby; raises :class:`StreamsAssignmentError` if already held."""
        if task in self.active or task in self.standby:
            raise StreamsAssignmentError(f"client {self.process_id} already holds task {task}")
        self.standby.add(task)

    def unassign_active(self, task: TaskId) -> None:
        """Remove the active ``task`` (must be held as active)."""
        self.active.remove(task)

    def unassign_standby(self, task: TaskId) -> None:
        """Remove the standby ``task`` (must be held as standby)."""
        self.standby.remove(task)

    def has_assigned_task(self, task: TaskId) -> bool:
        """Kafka ``hasAssignedTask``: held as active or standby."""
        return task in self.active or task in self.standby

    def sorted_active(self) -> list[TaskId]:
        return sorted(self.active)

    def sorted_standby(self) -> list[TaskId]:
        return sorted(self.standby)

    # --- loads (Java doubles; Python floats are the same IEEE binary64 operations) --------
    @property
    def assigned_task_count(self) -> int:
        """``|active| + |standby|``."""
        return len(self.active) + len(self.standby)

    @property
    def assigned_task_load(self) -> float:
        """``assignedTaskCount / capacity``."""
        return (len(self.active) + len(self.standby)) / self.capacity

    @property
    def active_task_load(self) -> float:
        """``|active| / capacity``."""
        return len(self.active) / self.capacity

    def lag_for(self, task: TaskId) -> int:
        """Kafka ``lagFor``; raises :class:`StreamsAssignmentError` for a task without a lag."""
        try:
            return self.lags[task]
        except KeyError:
            raise StreamsAssignmentError(
                f"client {self.process_id} has no lag for stateful task {task}"
            ) from None

    def copy(self) -> ClientState:
        """An independent copy (assignment, history, lags, tags)."""
        c = ClientState.__new__(ClientState)
        c.process_id = self.process_id
        c.capacity = self.capacity
        c.prev_active = set(self.prev_active)
        c.prev_standby = set(self.prev_standby)
        c.lags = dict(self.lags)
        c.tags = dict(self.tags)
        c.rack = self.rack
        c.active = set(self.active)
        c.standby = set(self.standby)
        return c

    def __repr__(self) -> str:
        act = ",".join(map(str, self.sorted_active()))
        sby = ",".join(map(str, self.sorted_standby()))
        return (
            f"ClientState({self.process_id}, cap={self.capacity}, active=[{act}], standby=[{sby}])"
        )


def validate_client_tags(tags: Mapping[str, str]) -> None:
    """Kafka ``StreamsConfig.validateRackAwarenessConfiguration`` limits on client tags.

    Raises:
        StreamsAssignmentError: more than 5 tags, a key longer than 20 or a value longer than
            30 characters.
    """
    if len(tags) > MAX_CLIENT_TAGS:
        raise StreamsAssignmentError(
            f"at most {MAX_CLIENT_TAGS} client tags are allowed, got {len(tags)}"
        )
    for key, value in tags.items():
        if len(key) > MAX_TAG_KEY_LENGTH:
            raise StreamsAssignmentError(
                f"client tag key {key!r} is longer than {MAX_TAG_KEY_LENGTH} characters"
            )
        if len(value) > MAX_TAG_VALUE_LENGTH:
            raise StreamsAssignmentError(
                f"client tag value {value!r} (key {key!r}) is longer than "
                f"{MAX_TAG_VALUE_LENGTH} characters"
            )


@dataclass(frozen=True)
class AssignmentConfigs:
    """The assignment configs (Kafka ``AssignorConfiguration.AssignmentConfigs``).

    Defaults are ``StreamsConfig``'s. ``traffic_cost``/``non_overlap_cost`` ``None`` mean the
    assignor's default (HighAvailabilityTaskAssignor: 10 and 1).
    """

    acceptable_recovery_lag: int = STREAMS_DEFAULTS.acceptable_recovery_lag
    max_warmup_replicas: int = STREAMS_DEFAULTS.max_warmup_replicas
    num_standby_replicas: int = STREAMS_DEFAULTS.num_standby_replicas
    probing_rebalance_interval_ms: int = STREAMS_DEFAULTS.probing_rebalance_interval_ms
    rack_aware_assignment_strategy: str = STREAMS_DEFAULTS.rack_aware_assignment_strategy
    rack_aware_assignment_tags: tuple[str, ...] = ()
    traffic_cost: int | None = None
    non_overlap_cost: int | None = None

    def __post_init__(self) -> None:
        if self.rack_aware_assignment_strategy not in STRATEGIES:
            raise StreamsAssignmentError(
                f"unknown rack.aware.assignment.strategy {self.rack_aware_assignment_strategy!r}"
                f" (expected one of {', '.join(STRATEGIES)})"
            )
        if len(self.rack_aware_assignment_tags) > MAX_CLIENT_TAGS:
            raise StreamsAssignmentError(
                f"rack.aware.assignment.tags: at most {MAX_CLIENT_TAGS} tags are allowed, "
                f"got {len(self.rack_aware_assignment_tags)}"
            )
        if self.acceptable_recovery_lag < 0:
            raise StreamsAssignmentError("acceptable.recovery.lag must be >= 0")
