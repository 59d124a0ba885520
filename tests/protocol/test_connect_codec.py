"""Connect encodings against Kafka's golden vectors, plus the codec's own contracts.

Vectors (in ``tests/vectors/``): ``connect_encodings.json`` (bytes from
Kafka's own serializers), the ``"kind": "encoding"`` cases of ``connect_cases.json`` (Kafka's
unit tests as data, run through a small interpreter below) and the ``assignment_hex`` of
``connect_assignor_sequences_examples.json``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from protocol.connect import (
    CONFIG_MISMATCH,
    NO_ERROR,
    ConnectAssignment,
    ConnectorTaskId,
    ConnectProtocol,
    WorkerSubscription,
)
from protocol.connect_codec import (
    decode_assignment,
    decode_assignment_v0,
    decode_assignment_v1,
    decode_subscription,
    decode_subscription_v0,
    decode_subscription_v1,
    encode_assignment,
    encode_subscription,
    join_group_protocols,
)
from protocol.connect_json import (
    CodecInputError,
    assignment_from_json,
    assignment_to_json,
    subscription_from_json,
    subscription_to_json,
)
from protocol.primitives import DecodeError, EncodeError, Reader

VECTORS = Path(__file__).resolve().parent.parent / "vectors"


@cache
def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


ENCODINGS = load("connect_encodings.json")
ASSIGNMENT_CASES = ENCODINGS["assignment_cases"]
METADATA_CASES = ENCODINGS["metadata_cases"]
ENCODING_CASES = [c for c in load("connect_cases.json")["cases"] if c["kind"] == "encoding"]

READERS = {"v0": decode_assignment_v0, "v1": decode_assignment_v1}
SUBSCRIPTION_READERS = {"v0": decode_subscription_v0, "v1": decode_subscription_v1}


def ids(cases: list[dict[str, Any]], key: str = "id") -> list[str]:
    return [c[key] for c in cases]


# ----------------------------------------------------------------------------------------------
# Vector <-> value helpers


def task_from_vector(t: Any) -> ConnectorTaskId:
    if isinstance(t, dict):
        return ConnectorTaskId(t["connector"], t["task"])
    connector, task = t
    return ConnectorTaskId(connector, task)


def assignment_from_vector(obj: dict[str, Any], version: int) -> ConnectAssignment:
    """The ``input`` objects of connect_encodings.json (and the camelCase ones of the cases)."""
    return ConnectAssignment(
        version=version,
        error=obj.get("error", NO_ERROR),
        leader=obj["leader"],
        leader_url=obj["leader_url"] if "leader_url" in obj else obj["leaderUrl"],
        config_offset=obj["config_offset"] if "config_offset" in obj else obj["offset"],
        connectors=tuple(obj["connectors"]),
        tasks=tuple(map(task_from_vector, obj["tasks"])),
        revoked_connectors=tuple(obj.get("revoked_connectors", ())),
        revoked_tasks=tuple(map(task_from_vector, obj.get("revoked_tasks", ()))),
        delay_ms=obj.get("delay", 0),
    )


def assignment_view(a: ConnectAssignment, reader: str) -> dict[str, Any]:
    """A decoded assignment in the vectors' ``vX_decoded_by_vY`` shape."""
    view: dict[str, Any] = {
        "error": a.error,
        "leader": a.leader,
        "leader_url": a.leader_url,
        "config_offset": a.config_offset,
        "connectors": list(a.connectors),
        "tasks": [{"connector": c, "task": n} for c, n in a.tasks],
    }
    if reader == "v1":
        view |= {
            "version": a.version,
            "revoked_connectors": list(a.revoked_connectors),
            "revoked_tasks": [{"connector": c, "task": n} for c, n in a.revoked_tasks],
            "delay": a.delay_ms,
            "is_empty_singleton": False,
        }
    return view


def wire_entry_names(data: bytes) -> list[str]:
    """Connector names of the assigned ConnectorAssignment entries, in wire order."""
    r = Reader(data)
    r.int16("version")
    r.int16("error")
    r.string("leader")
    r.string("leader_url")
    r.int64("config_offset")
    names = []
    for _ in range(r.array_count("assignment", 6) or 0):
        names.append(r.string("connector"))
        r.int32_array("tasks")
    return names


# ----------------------------------------------------------------------------------------------
# connect_encodings.json


@pytest.mark.parametrize("entry", ENCODINGS["protocol_compatibility"], ids=lambda e: e["setting"])
def test_protocol_compatibility(entry: dict[str, Any]) -> None:
    proto = ConnectProtocol.from_setting(entry["setting"])
    assert proto.name == entry["enum"]
    assert proto.protocol_name == entry["protocol_name"]
    assert proto.version == entry["protocol_version"]


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize("case", ASSIGNMENT_CASES, ids=ids(ASSIGNMENT_CASES))
def test_assignment_encoding_golden(case: dict[str, Any], version: int) -> None:
    a = assignment_from_vector(case["input"], version)
    expected = bytes.fromhex(case[f"v{version}_hex"])
    assert encode_assignment(a) == expected
    assert encode_assignment(a, version) == expected
    # decode -> encode gives the same bytes (docs/cli-contracts.md)
    assert encode_assignment(decode_assignment(expected)) == expected
    assert encode_assignment(decode_assignment_v0(expected), 0) == bytes.fromhex(case["v0_hex"])


@pytest.mark.parametrize("case", ASSIGNMENT_CASES, ids=ids(ASSIGNMENT_CASES))
def test_assignment_cross_version_decodes(case: dict[str, Any]) -> None:
    checked = 0
    for key, expected in case.items():
        if "_decoded_by_" not in key:
            continue
        written, reader = key.split("_decoded_by_")
        decoded = READERS[reader](bytes.fromhex(case[f"{written}_hex"]))
        assert assignment_view(decoded, reader) == expected, key
        if reader == "v0":
            assert decoded.version == int(written[1:])
        checked += 1
    assert checked == 5


@pytest.mark.parametrize("case", ASSIGNMENT_CASES, ids=ids(ASSIGNMENT_CASES))
def test_java_assignment_key_order(case: dict[str, Any]) -> None:
    for version in (0, 1, 2):
        data = encode_assignment(assignment_from_vector(case["input"], version))
        assert wire_entry_names(data) == case["java_assignment_key_order"]


def subscription_from_vector(case: dict[str, Any], version: int) -> WorkerSubscription:
    inp = case["input"]
    allocation = inp["allocation"]
    return WorkerSubscription(
        version=version,
        url=inp["url"],
        config_offset=inp["config_offset"],
        # the embedded allocation's own version is ignored: it takes the outer header
        allocation=None if allocation is None else assignment_from_vector(allocation, 0),
    )


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize("case", METADATA_CASES, ids=ids(METADATA_CASES))
def test_subscription_encoding_golden(case: dict[str, Any], version: int) -> None:
    s = subscription_from_vector(case, version)
    expected = bytes.fromhex(case[f"v{version}_hex"])
    assert encode_subscription(s) == expected
    assert encode_subscription(decode_subscription(expected)) == expected
    if version:
        inner = case[f"v{version}_allocation_inner_hex"]
        if inner is None:
            assert s.allocation is None
        else:
            assert encode_assignment(s.allocation, version) == bytes.fromhex(inner)
            assert expected.endswith(bytes.fromhex(inner))


def subscription_view(s: WorkerSubscription, reader: str) -> dict[str, Any]:
    view: dict[str, Any] = {"url": s.url, "config_offset": s.config_offset}
    if reader == "v1":
        if s.allocation is None:
            # Kafka's ExtendedAssignment.empty() singleton
            view["assignment"] = {
                "error": 0,
                "leader": None,
                "leader_url": None,
                "config_offset": -1,
                "connectors": [],
                "tasks": [],
                "version": 1,
                "revoked_connectors": [],
                "revoked_tasks": [],
                "delay": 0,
                "is_empty_singleton": True,
            }
        else:
            view["assignment"] = assignment_view(s.allocation, "v1")
    return view


@pytest.mark.parametrize("case", METADATA_CASES, ids=ids(METADATA_CASES))
def test_subscription_cross_version_decodes(case: dict[str, Any]) -> None:
    checked = 0
    for key, expected in case.items():
        if "_decoded_by_" not in key:
            continue
        written, reader = key.split("_decoded_by_")
        data = bytes.fromhex(case[f"{written}_hex"])
        decoded = SUBSCRIPTION_READERS[reader](data)
        assert subscription_view(decoded, reader) == expected, key
        assert decoded.version == int(written[1:])
        checked += 1
    assert checked == 3


@pytest.mark.parametrize("case", METADATA_CASES, ids=ids(METADATA_CASES))
def test_join_group_protocols_golden(case: dict[str, Any]) -> None:
    inp = case["input"]
    allocation = subscription_from_vector(case, 1).allocation
    for setting, expected in case["join_group_protocols"].items():
        got = join_group_protocols(
            ConnectProtocol.from_setting(setting), inp["url"], inp["config_offset"], allocation
        )
        assert [(name, data.hex()) for name, data in got] == [
            (e["name"], e["metadata_hex"]) for e in expected
        ]


# ----------------------------------------------------------------------------------------------
# connect_cases.json, "kind": "encoding": an interpreter over steps / expect


class EncodingCaseRunner:
    """Runs one connect_cases.json encoding case against the codec API.

    Each step has the expectation at the same index. Every expectation key is either
    checked or rejected (an unknown key fails the test), so nothing is skipped silently.
    ``performAssignment`` is the assignor's job: here only its codec half is checked (the
    members' metadata decode and re-encode byte for byte; with no configured connectors
    the leader's answer is the empty assignment, whose bytes must equal the derived ones).
    ``onJoinComplete`` stores the decoded assignment as the snapshot: the merge belongs to
    the worker, and with no earlier snapshot it is the assignment itself.
    """

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.config = case["config"]
        self.snapshot: ConnectAssignment | None = self.config.get("assignment_snapshot")
        self.data: bytes | None = None

    def run(self) -> None:
        steps, expects = self.case["steps"], self.case["expect"]
        assert len(steps) == len(expects)
        for step, expect in zip(steps, expects, strict=True):
            remaining = dict(expect)
            remaining.pop("note", None)
            getattr(self, "step_" + step["event"])(step, remaining)
            assert not remaining, f"unchecked expectation keys {sorted(remaining)}"

    # -- steps ------------------------------------------------------------------------------

    def step_performAssignment(self, step: dict[str, Any], expect: dict[str, Any]) -> None:  # noqa: N802
        proto = ConnectProtocol.from_protocol_name(step["protocol_name"])
        assert step["configured_connectors"] == {}, "needs the assignor, not only the codec"
        members = {}
        for m in step["members"]:
            data = bytes.fromhex(m["metadata_hex"])
            members[m["member_id"]] = decode_subscription_v1(data)
            assert encode_subscription(decode_subscription(data)) == data
        leader_url = members[step["leader"]].url
        version = expect.pop("assignment_version_for_every_member")
        derived = expect.pop("derived_bytes_hex")
        assert set(derived) == set(members)
        for member, hexed in derived.items():
            data = bytes.fromhex(hexed)
            assert decode_assignment(data).version == version == proto.version
            empty = ConnectAssignment(
                version=proto.version,
                error=NO_ERROR,
                leader=step["leader"],
                leader_url=leader_url,
                config_offset=step["leader_config_snapshot_offset"],
            )
            assert encode_assignment(empty) == data, member

    def step_onJoinComplete(self, step: dict[str, Any], expect: dict[str, Any]) -> None:  # noqa: N802
        data = bytes.fromhex(step["assignment_hex"])
        self.snapshot = decode_assignment(data)
        assert encode_assignment(self.snapshot) == data

    def step_metadata(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        order = expect.pop("protocols_in_order")
        # one configured protocol with its list, or {setting: expected protocol names}
        runs = {step["connect.protocol"]: order} if "connect.protocol" in step else order
        derived = expect.pop("derived_bytes_hex")
        first_v0 = expect.pop("first_metadata_v0_reader", None)
        first_v1 = expect.pop("first_metadata_v1_reader", None)
        checked: set[str] = set()
        for setting, names in runs.items():
            got = join_group_protocols(
                ConnectProtocol.from_setting(setting),
                self.config["rest_url"],
                self.config["config_offset"],
                self.snapshot,
            )
            assert [name for name, _ in got] == names
            by_name = dict(got)
            first = got[0][1]
            for key, hexed in derived.items():
                name, _, when = key.partition("(")
                if when:  # "compatible(first entry when connect.protocol=compatible)"
                    if when.rstrip(")").split("=")[-1] == setting:
                        assert got[0][0] == name
                        assert first == bytes.fromhex(hexed), key
                        checked.add(key)
                elif "connect.protocol" in step:
                    assert by_name[name] == bytes.fromhex(hexed), key
                    checked.add(key)
            if first_v0 is not None:
                assert decode_subscription_v0(first).config_offset == first_v0["offset"]
            if first_v1 is not None:
                self.check_first_v1(decode_subscription_v1(first), dict(first_v1))
        assert checked == set(derived)

    def check_first_v1(self, s: WorkerSubscription, expect: dict[str, Any]) -> None:
        assert s.config_offset == expect.pop("offset")
        if "assignment_not_empty" in expect:
            assert (s.allocation is not None) == expect.pop("assignment_not_empty")
        if "connectors" in expect:
            assert s.allocation is not None
            assert list(s.allocation.connectors) == expect.pop("connectors")
        if "tasks" in expect:
            assert s.allocation is not None
            assert s.allocation.tasks == tuple(map(task_from_vector, expect.pop("tasks")))
        assert not expect, f"unchecked first_metadata_v1_reader keys {sorted(expect)}"

    def step_encode_metadata(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        embedded = step["embedded_assignment"]
        version = 0 if embedded is None else embedded["version_header"]
        s = WorkerSubscription(
            version=version,
            url=step["url"],
            config_offset=step["config_offset"],
            allocation=None if embedded is None else assignment_from_vector(embedded, version),
        )
        self.data = encode_subscription(s)
        self.subscription = s
        assert self.data == bytes.fromhex(step["bytes_hex"])

    def step_decode_metadata(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        assert self.data is not None
        decoded = SUBSCRIPTION_READERS[step["reader"]](self.data)
        assert decoded.url == expect.pop("url")
        assert decoded.config_offset == expect.pop("config_offset")
        if step["reader"] == "v1":
            # null or absent allocation -> None (ExtendedAssignment.empty()); else the same value
            assert decoded.allocation == self.subscription.allocation
        else:
            assert decoded.allocation is None

    def step_encode_then_decode(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        writer_version = int(step["writer"][1])  # "v0 (ConnectProtocol)", "v1 (...)"
        a = assignment_from_vector(step["input"], writer_version)
        data = encode_assignment(a)
        assert data == bytes.fromhex(step["bytes_hex"])
        decoded = READERS[step["reader"]](data)
        assert decoded.failed is expect.pop("failed")
        assert decoded.leader == expect.pop("leader")
        assert decoded.config_offset == expect.pop("offset")
        assert list(decoded.connectors) == expect.pop("connectors")
        assert decoded.tasks == tuple(map(task_from_vector, expect.pop("tasks")))
        defaults = expect.pop("implied_defaults_if_v0_bytes", None)
        if defaults is not None:
            assert step["reader"] == "v1" and writer_version == 0
            assert list(decoded.revoked_connectors) == defaults["revoked_connectors"]
            assert list(decoded.revoked_tasks) == defaults["revoked_tasks"]
            assert decoded.delay_ms == defaults["delay"]
            assert decoded.version == 0


@pytest.mark.parametrize(
    "case", ENCODING_CASES, ids=[c["source"].split(".")[-1] for c in ENCODING_CASES]
)
def test_connect_cases_encoding(case: dict[str, Any]) -> None:
    EncodingCaseRunner(case).run()


def test_connect_cases_encoding_count() -> None:
    assert len(ENCODING_CASES) == 16


# ----------------------------------------------------------------------------------------------
# connect_assignor_sequences_examples.json: bytes from Kafka's real assignors


def assignor_outputs() -> list[tuple[str, dict[str, Any]]]:
    doc = load("connect_assignor_sequences_examples.json")
    out = []
    for group in ("sequences_incremental_full", "sequences_eager"):
        for seq in doc[group]:
            for rnd in seq["rounds"]:
                for worker, w in rnd["workers"].items():
                    if "assignment_hex" in w:
                        out.append((f"{seq['name']}-r{rnd['round']}-{worker}", w))
    return out


ASSIGNOR_OUTPUTS = assignor_outputs()


def test_assignor_outputs_present() -> None:
    assert len(ASSIGNOR_OUTPUTS) == 42


@pytest.mark.parametrize(("name", "w"), ASSIGNOR_OUTPUTS, ids=[n for n, _ in ASSIGNOR_OUTPUTS])
def test_assignor_output_bytes(name: str, w: dict[str, Any]) -> None:
    data = bytes.fromhex(w["assignment_hex"])
    decoded = decode_assignment(data)
    assert encode_assignment(decoded) == data
    # Encoding the assignor's lists, in Java's output order, gives Kafka's bytes.
    a = ConnectAssignment(
        version=decoded.version,
        error=w["error"],
        leader=w["leader"],
        leader_url=decoded.leader_url,
        config_offset=w["config_offset"],
        connectors=tuple(w["assigned_connectors"]),
        tasks=tuple(map(task_from_vector, w["assigned_tasks"])),
        revoked_connectors=tuple(w.get("revoked_connectors", ())),
        revoked_tasks=tuple(map(task_from_vector, w.get("revoked_tasks", ()))),
        delay_ms=w.get("delay", 0),
    )
    assert encode_assignment(a) == data
    assert sorted(decoded.connectors) == sorted(a.connectors)
    assert sorted(decoded.tasks) == sorted(a.tasks)


# ----------------------------------------------------------------------------------------------
# Documented examples (Kafka's ConnectProtocol / IncrementalCooperativeConnectProtocol tests)


def test_connect_md_subscription_example() -> None:
    s = WorkerSubscription(version=2, url="http://w1:8083", config_offset=5)
    assert encode_subscription(s).hex() == (
        "0002000e687474703a2f2f77313a383038330000000000000005ffffffff"
    )


def test_connect_md_assignment_example() -> None:
    a = ConnectAssignment(
        version=2,
        error=NO_ERROR,
        leader="w1",
        leader_url="http://w1:8083",
        config_offset=5,
        connectors=("c1",),
        tasks=(ConnectorTaskId("c1", 0),),
        revoked_tasks=(ConnectorTaskId("c2", 1),),
        delay_ms=40,
    )
    expected = (
        "0002 0000 0002 7731 000e 687474703a2f2f77313a38303833 0000000000000005"
        "00000001 0002 6331 00000002 ffffffff 00000000"
        "00000001 0002 6332 00000001 00000001"
        "00000028"
    )
    assert encode_assignment(a) == bytes.fromhex(expected.replace(" ", ""))
    assert decode_assignment(encode_assignment(a)) == a


# ----------------------------------------------------------------------------------------------
# v3 (static, KIP-987, docs/upgrades.md)

ALLOCATION = ConnectAssignment(
    version=2,
    error=NO_ERROR,
    leader="w1",
    leader_url="http://w1:8083",
    config_offset=7,
    connectors=("c1",),
    tasks=(ConnectorTaskId("c1", 0), ConnectorTaskId("c2", 1)),
)


# bytes before the assigned array: version, error, leader "w1", url "http://w1:8083", offset
HEAD_LEN = 2 + 2 + (2 + 2) + (2 + 14) + 8


def static_subscription() -> WorkerSubscription:
    return WorkerSubscription(
        version=3,
        url="http://w1:8083",
        config_offset=7,
        allocation=ALLOCATION,
        static_connectors=("c1", "c9"),
        static_tasks=(ConnectorTaskId("c1", 0), ConnectorTaskId("c2", 4), ConnectorTaskId("c1", 2)),
    )


def test_v3_subscription_layout() -> None:
    s = static_subscription()
    data = encode_subscription(s)
    v2 = encode_subscription(s, 2)
    # v3 = the v2 bytes (header 3, allocation re-serialized with header 3) + static fields
    inner = encode_assignment(ALLOCATION, 3)
    assert inner[:2] == b"\x00\x03"
    assert data[:2] == b"\x00\x03"
    assert data[2:].startswith(v2[2 : len(v2) - len(inner)] + inner)
    tail = data[len(v2) :]
    assert tail.hex() == (
        "00000002" "0002" "6331" "0002" "6339"  # static_connectors [c1, c9]
        "00000002"  # static_tasks: entries grouped per connector, first-seen order
        "0002" "6331" "00000002" "00000000" "00000002"
        "0002" "6332" "00000001" "00000004"
    )  # fmt: skip
    decoded = decode_subscription(data)
    assert decoded.version == 3
    assert decoded.allocation == ConnectAssignment(**{**_fields(ALLOCATION), "version": 3})
    assert decoded.static_connectors == ("c1", "c9")
    assert decoded.static_tasks == (
        ConnectorTaskId("c1", 0),
        ConnectorTaskId("c1", 2),
        ConnectorTaskId("c2", 4),
    )
    assert encode_subscription(decoded) == data


def _fields(a: ConnectAssignment) -> dict[str, Any]:
    return {f: getattr(a, f) for f in a.__struct_fields__}


def test_v2_and_v0_readers_read_a_v3_subscription() -> None:
    s = static_subscription()
    data = encode_subscription(s)
    v1 = decode_subscription_v1(data)
    assert (v1.version, v1.url, v1.config_offset) == (3, s.url, s.config_offset)
    assert v1.allocation is not None
    assert v1.allocation.connectors == ALLOCATION.connectors
    assert v1.allocation.tasks == ALLOCATION.tasks
    assert v1.static_connectors == () and v1.static_tasks == ()
    v0 = decode_subscription_v0(data)
    assert (v0.version, v0.url, v0.config_offset, v0.allocation) == (3, s.url, 7, None)


def test_v3_assignment_is_v2_layout_with_header_3() -> None:
    v2 = encode_assignment(ALLOCATION, 2)
    v3 = encode_assignment(ALLOCATION, 3)
    assert v3 == b"\x00\x03" + v2[2:]
    assert decode_assignment(v3).version == 3
    assert decode_assignment_v0(v3).connectors == ("c1",)


def test_join_group_protocols_static() -> None:
    got = join_group_protocols(
        ConnectProtocol.STATIC,
        "http://w1:8083",
        7,
        ALLOCATION,
        static_connectors=("c1",),
        static_tasks=(ConnectorTaskId("c1", 0),),
    )
    assert [name for name, _ in got] == ["static", "sessioned", "compatible", "default"]
    for (name, data), version in zip(got, (3, 2, 1, 0), strict=True):
        assert data[:2] == version.to_bytes(2, "big"), name
        decoded = decode_subscription(data)
        if version:
            assert decoded.allocation is not None
            assert decoded.allocation.version == version  # same header as the entry
        assert decoded.static_connectors == (("c1",) if version == 3 else ())


def test_decode_subscription_dispatches_on_header() -> None:
    data = encode_subscription(static_subscription())
    assert decode_subscription(encode_subscription(static_subscription(), 0)).allocation is None
    assert (
        decode_subscription(encode_subscription(static_subscription(), 1)).allocation.version == 1
    )
    # a header above 3 is read as its v3 prefix (as Kafka's readers do for unknown versions)
    future = decode_subscription(b"\x00\x07" + data[2:] + b"extra")
    assert future.version == 7 and future.static_connectors == ("c1", "c9")


# ----------------------------------------------------------------------------------------------
# Reader tolerance and errors


def test_v1_reader_tolerates_fields_missing_exactly_at_the_end() -> None:
    full = encode_assignment(ALLOCATION, 1)
    v0_prefix = encode_assignment(ALLOCATION, 0)
    # only the assigned array: revoked -> empty, delay -> 0
    a = decode_assignment_v1(b"\x00\x01" + v0_prefix[2:])
    assert (a.version, a.connectors, a.revoked_connectors, a.delay_ms) == (1, ("c1",), (), 0)
    # nothing after config_offset: the assigned array takes its default too
    header_only = full[:HEAD_LEN]
    a = decode_assignment_v1(header_only)
    assert (a.connectors, a.tasks, a.config_offset) == ((), (), 7)
    # without the delay
    a = decode_assignment_v1(full[:-4])
    assert a.delay_ms == 0 and a.tasks == ALLOCATION.tasks


def test_v1_reader_rejects_fields_cut_off_halfway() -> None:
    full = encode_assignment(ALLOCATION, 1)
    with pytest.raises(DecodeError) as info:
        decode_assignment_v1(full[:-2])
    assert info.value.field == "assignment.delay_ms"
    assert info.value.offset == len(full) - 4
    with pytest.raises(DecodeError) as info:
        decode_assignment_v1(full[: HEAD_LEN - 4])
    assert info.value.field == "assignment.config_offset"


def test_v1_reader_requires_fields_without_defaults() -> None:
    with pytest.raises(DecodeError, match=r"^assignment\.error: ") as info:
        decode_assignment_v1(b"\x00\x01")
    assert info.value.offset == 2
    with pytest.raises(DecodeError, match=r"^assignment\.leader_url: "):
        decode_assignment_v1(b"\x00\x01\x00\x00\x00\x01w")


def test_null_arrays() -> None:
    head = encode_assignment(ALLOCATION, 1)[:HEAD_LEN]
    null = b"\xff\xff\xff\xff"
    a = decode_assignment_v1(head + null + null + b"\x00\x00\x00\x05")
    assert (a.connectors, a.tasks, a.revoked_connectors, a.delay_ms) == ((), (), (), 5)
    with pytest.raises(DecodeError) as info:
        decode_assignment_v0(b"\x00\x00" + head[2:] + null)
    assert info.value.field == "assignment.assignment"
    assert "not nullable" in str(info.value)


def test_negative_version_is_rejected_by_every_reader() -> None:
    data = b"\xff\xff" + encode_assignment(ALLOCATION, 1)[2:]
    for decoder in (decode_assignment_v0, decode_assignment_v1):
        with pytest.raises(DecodeError, match="unsupported version -1") as info:
            decoder(data)
        assert (info.value.field, info.value.offset) == ("assignment.version", 0)
    sub = b"\xff\xfe" + encode_subscription(static_subscription())[2:]
    for decoder in (decode_subscription, decode_subscription_v0, decode_subscription_v1):
        with pytest.raises(DecodeError) as info:
            decoder(sub)
        assert info.value.field == "subscription.version"


def test_error_names_nested_field_and_offset() -> None:
    a = ConnectAssignment(
        version=1, error=0, leader="l", leader_url="u", config_offset=0,
        revoked_connectors=("abc",),
    )  # fmt: skip
    data = bytearray(encode_assignment(a))
    # header 2 + error 2 + "l" 3 + "u" 3 + offset 8 + assigned count 4 + revoked count 4 = 26
    assert data[26:28] == b"\x00\x03"
    data[26:28] = b"\x00\x28"  # claim 40 bytes
    with pytest.raises(DecodeError) as info:
        decode_assignment(bytes(data[:33]))
    assert str(info.value) == (
        "assignment.revoked[0].connector: string length 40 exceeds remaining 5 bytes at offset 26"
    )
    assert (info.value.field, info.value.offset) == ("assignment.revoked[0].connector", 26)


def test_error_offsets_inside_the_allocation_are_absolute() -> None:
    s = WorkerSubscription(version=1, url="u", config_offset=0, allocation=ALLOCATION)
    data = bytearray(encode_subscription(s))
    start = 2 + 3 + 8 + 4  # the allocation bytes
    data[start + 4 : start + 6] = b"\x80\x00"  # leader length -32768
    with pytest.raises(DecodeError) as info:
        decode_subscription(bytes(data))
    assert info.value.field == "subscription.allocation.leader"
    assert info.value.offset == start + 4
    assert "negative string length" in info.value.detail


def test_allocation_length_beyond_the_data() -> None:
    data = encode_subscription(WorkerSubscription(1, "u", 0, ALLOCATION))
    with pytest.raises(DecodeError) as info:
        decode_subscription_v1(data[:-1])
    assert info.value.field == "subscription.allocation"
    assert info.value.offset == 13


def test_invalid_utf8_is_a_decode_error() -> None:
    data = b"\x00\x00\x00\x02\xc3\x28" + bytes(8)
    with pytest.raises(DecodeError, match="invalid UTF-8") as info:
        decode_subscription_v0(data)
    assert (info.value.field, info.value.offset) == ("subscription.url", 2)


def test_huge_counts_are_rejected_before_allocating() -> None:
    head = encode_assignment(ALLOCATION, 0)[:HEAD_LEN]
    with pytest.raises(DecodeError, match="array count 2147483647 exceeds remaining 0"):
        decode_assignment_v0(head + b"\x7f\xff\xff\xff")
    entry = b"\x00\x00\x00\x01" + b"\x00\x01c" + b"\x10\x00\x00\x00" + bytes(12)
    with pytest.raises(DecodeError) as info:
        decode_assignment_v0(head + entry)
    assert info.value.field == "assignment.assignment[0].tasks"


def test_static_tasks_reject_connector_marker_and_null() -> None:
    base = encode_subscription(WorkerSubscription(3, "u", 0))
    assert base.endswith(b"\x00\x00\x00\x00" * 2)
    prefix = base[:-4]
    bad_entry = b"\x00\x00\x00\x01" + b"\x00\x01c" + b"\x00\x00\x00\x01" + b"\xff\xff\xff\xff"
    with pytest.raises(DecodeError, match="-1 is not allowed") as info:
        decode_subscription(prefix + bad_entry)
    assert info.value.field == "subscription.static_tasks[0].tasks"
    with pytest.raises(DecodeError) as info:
        decode_subscription(prefix + b"\xff\xff\xff\xff")
    assert info.value.field == "subscription.static_tasks"
    with pytest.raises(DecodeError) as info:
        decode_subscription(base[:-8])
    assert info.value.field == "subscription.static_connectors"


def test_decoding_keeps_wire_order_and_duplicates() -> None:
    # hand-made bytes Kafka's writer would not produce: -1 twice, tasks before -1
    head = encode_assignment(ALLOCATION, 0)[:HEAD_LEN]
    entries = (
        b"\x00\x00\x00\x02"
        + b"\x00\x01b" + b"\x00\x00\x00\x03" + b"\x00\x00\x00\x05\xff\xff\xff\xff\xff\xff\xff\xff"
        + b"\x00\x01a" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x01\x00\x00\x00\x01"
    )  # fmt: skip
    a = decode_assignment_v0(head + entries)
    assert a.connectors == ("b", "b")
    assert a.tasks == (ConnectorTaskId("b", 5), ConnectorTaskId("a", 1), ConnectorTaskId("a", 1))


def test_trailing_bytes_are_ignored() -> None:
    data = encode_assignment(ALLOCATION, 1)
    assert decode_assignment_v1(data + b"junk") == decode_assignment_v1(data)
    assert decode_assignment_v0(data + b"junk") == decode_assignment_v0(data)
    sub = encode_subscription(WorkerSubscription(0, "u", 1))
    assert decode_subscription_v0(sub + b"x") == decode_subscription_v0(sub)


def test_decoder_accepts_bytearray_and_memoryview() -> None:
    data = encode_assignment(ALLOCATION)
    assert decode_assignment(bytearray(data)) == decode_assignment(memoryview(data))


# ----------------------------------------------------------------------------------------------
# Encoder errors


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"leader": None}, "assignment.leader", "STRING is not nullable"),
        ({"leader_url": "x" * 32768}, "assignment.leader_url", "exceeds the STRING maximum"),
        ({"error": 1 << 15}, "assignment.error", "out of range for INT16"),
        ({"config_offset": 1 << 63}, "assignment.config_offset", "out of range for INT64"),
        ({"delay_ms": -(1 << 31) - 1}, "assignment.delay_ms", "out of range for INT32"),
        ({"version": 4}, "assignment.version", "unsupported version 4"),
        ({"tasks": (ConnectorTaskId("c", -1),)}, "assignment.tasks", "must be >= 0"),
        ({"tasks": (ConnectorTaskId("c", 1 << 31),)}, "assignment.assignment[1].tasks[0]", "INT32"),
        ({"revoked_tasks": (ConnectorTaskId("c", -2),)}, "assignment.revoked_tasks", ">= 0"),
        ({"connectors": ("\ud800",)}, "assignment.assignment[0].connector", "UTF-8"),
    ],
)
def test_encode_errors(change: dict[str, Any], field: str, message: str) -> None:
    a = ConnectAssignment(**{**_fields(ALLOCATION), **change})
    with pytest.raises(EncodeError, match=message) as info:
        encode_assignment(a)
    assert info.value.field == field


def test_string_of_exactly_32767_bytes_is_fine() -> None:
    a = ConnectAssignment(**{**_fields(ALLOCATION), "leader": "é" * 16383 + "x"})
    assert decode_assignment(encode_assignment(a)) == a


def test_subscription_encode_errors_name_the_allocation() -> None:
    bad = ConnectAssignment(**{**_fields(ALLOCATION), "leader_url": None})
    with pytest.raises(EncodeError) as info:
        encode_subscription(WorkerSubscription(2, "u", 0, bad))
    assert info.value.field == "subscription.allocation.leader_url"
    # v0 drops the allocation, so nothing to complain about
    assert encode_subscription(WorkerSubscription(0, "u", 0, bad))
    with pytest.raises(EncodeError) as info:
        encode_subscription(WorkerSubscription(3, "u", 0, static_tasks=(ConnectorTaskId("c", -1),)))
    assert info.value.field == "subscription.static_tasks"
    with pytest.raises(EncodeError, match="unsupported version"):
        encode_subscription(WorkerSubscription(0, "u", 0), version=-1)


def test_v0_drops_cooperative_fields() -> None:
    a = ConnectAssignment(**{**_fields(ALLOCATION), "revoked_connectors": ("x",), "delay_ms": 9})
    decoded = decode_assignment(encode_assignment(a, 0))
    assert (decoded.version, decoded.revoked_connectors, decoded.delay_ms) == (0, (), 0)


def test_encoding_order_rules() -> None:
    a = ConnectAssignment(
        version=1,
        error=CONFIG_MISMATCH,
        leader="l",
        leader_url="u",
        config_offset=-1,
        connectors=("connector3", "connector1", "connector3"),
        tasks=(ConnectorTaskId("z", 1), ConnectorTaskId("connector1", 0), ConnectorTaskId("z", 0)),
        revoked_connectors=("r2", "r1", "r2"),
        revoked_tasks=(ConnectorTaskId("r0", 0), ConnectorTaskId("r1", 3)),
    )
    d = decode_assignment(encode_assignment(a))
    assert d.connectors == ("connector1", "connector3")  # HashSet order, deduplicated
    assert d.tasks == (
        ConnectorTaskId("connector1", 0),
        ConnectorTaskId("z", 1),
        ConnectorTaskId("z", 0),
    )
    assert d.revoked_connectors == ("r2", "r1")  # list order, deduplicated
    assert d.revoked_tasks == (ConnectorTaskId("r1", 3), ConnectorTaskId("r0", 0))
    assert d.failed


# ----------------------------------------------------------------------------------------------
# JSON forms (docs/cli-contracts.md)

DOCUMENTED_ASSIGNMENT_JSON = {
    "version": 1,
    "error": 0,
    "leader": "w1",
    "leader_url": "http://w1:8083",
    "config_offset": 5,
    "connectors": ["c1"],
    "tasks": ["c1-0"],
    "revoked_connectors": [],
    "revoked_tasks": [],
    "delay_ms": 0,
}


def test_assignment_json_matches_the_docs() -> None:
    a = assignment_from_json(DOCUMENTED_ASSIGNMENT_JSON)
    assert a.tasks == (ConnectorTaskId("c1", 0),)
    out = assignment_to_json(a)
    assert out == DOCUMENTED_ASSIGNMENT_JSON
    assert list(out) == list(DOCUMENTED_ASSIGNMENT_JSON)  # key order too
    v0 = assignment_to_json(decode_assignment(encode_assignment(a, 0)))
    assert list(v0) == ["version", "error", "leader", "leader_url", "config_offset",
                        "connectors", "tasks"]  # fmt: skip


def test_subscription_json_shapes() -> None:
    s = static_subscription()
    out = subscription_to_json(decode_subscription(encode_subscription(s)))
    assert list(out) == ["version", "url", "config_offset", "allocation",
                         "static_connectors", "static_tasks"]  # fmt: skip
    assert out["static_tasks"] == ["c1-0", "c1-2", "c2-4"]
    assert out["allocation"]["version"] == 3
    assert subscription_to_json(WorkerSubscription(0, "u", 1)) == {
        "version": 0, "url": "u", "config_offset": 1,
    }  # fmt: skip
    assert subscription_to_json(WorkerSubscription(2, "u", 1))["allocation"] is None
    assert "static_connectors" not in subscription_to_json(WorkerSubscription(2, "u", 1))


def test_json_round_trips_every_golden_vector() -> None:
    for case in ASSIGNMENT_CASES:
        for version in (0, 1, 2):
            data = bytes.fromhex(case[f"v{version}_hex"])
            obj = json.loads(json.dumps(assignment_to_json(decode_assignment(data))))
            assert encode_assignment(assignment_from_json(obj)) == data
    for case in METADATA_CASES:
        for version in (0, 1, 2):
            data = bytes.fromhex(case[f"v{version}_hex"])
            obj = json.loads(json.dumps(subscription_to_json(decode_subscription(data))))
            assert encode_subscription(subscription_from_json(obj)) == data


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        ({"extra": 1}, "extra", "unknown key"),
        ({"version": 4}, "version", "0..3"),
        ({"version": True}, "version", "0..3"),
        ({"version": "1"}, "version", "0..3"),
        ({"error": "0"}, "error", "expected an integer"),
        ({"error": 1 << 15}, "error", "out of range"),
        ({"leader": None}, "leader", "expected a string, got null"),
        ({"config_offset": 1.5}, "config_offset", "expected an integer"),
        ({"connectors": "c1"}, "connectors", "expected a list"),
        ({"connectors": [1]}, "connectors[0]", "expected a string"),
        ({"tasks": ["c1"]}, "tasks[0]", "'<connector>-<n>'"),
        ({"tasks": ["c1-x"]}, "tasks[0]", "'<connector>-<n>'"),
        ({"tasks": ["c1--1"]}, "tasks[0]", "negative"),
        ({"tasks": [["c1", 0]]}, "tasks[0]", "string"),
        ({"revoked_tasks": ["c1-0", "c2-99999999999"]}, "revoked_tasks[1]", "INT32"),
        ({"delay_ms": None}, "delay_ms", "expected an integer"),
    ],
)
def test_assignment_from_json_rejects(change: dict[str, Any], key: str, message: str) -> None:
    obj = {**DOCUMENTED_ASSIGNMENT_JSON, **change}
    with pytest.raises(CodecInputError, match=message) as info:
        assignment_from_json(obj)
    assert info.value.key == key


def test_assignment_from_json_v0_and_missing_keys() -> None:
    v0 = {
        k: v
        for k, v in DOCUMENTED_ASSIGNMENT_JSON.items()
        if not k.startswith(("revoked", "delay"))
    }
    assert assignment_from_json({**v0, "version": 0}).version == 0
    # a decoded v1 object re-encodes at v0 when nothing would be dropped
    assert assignment_from_json({**DOCUMENTED_ASSIGNMENT_JSON, "version": 0}).version == 0
    for key, value in (("revoked_connectors", ["c"]), ("revoked_tasks", ["c-1"]), ("delay_ms", 5)):
        with pytest.raises(CodecInputError, match="not carried by a version 0") as info:
            assignment_from_json({**DOCUMENTED_ASSIGNMENT_JSON, "version": 0, key: value})
        assert info.value.key == key
    with pytest.raises(CodecInputError, match="missing") as info:
        assignment_from_json({k: v for k, v in v0.items() if k != "leader_url"})
    assert info.value.key == "leader_url"
    minimal = assignment_from_json(
        {"version": 2, "error": 0, "leader": "l", "leader_url": "u", "config_offset": 0}
    )
    assert minimal.connectors == () and minimal.delay_ms == 0
    with pytest.raises(CodecInputError):
        assignment_from_json(["not", "an", "object"])  # type: ignore[arg-type]


def test_subscription_from_json_rejects() -> None:
    good = {"version": 1, "url": "u", "config_offset": 0, "allocation": None}
    assert subscription_from_json(good).allocation is None
    cases = [
        ({"allocation": {**DOCUMENTED_ASSIGNMENT_JSON, "leader": 5}}, "allocation.leader"),
        ({"allocation": []}, "allocation"),
        ({"static_tasks": ["c-1"]}, "static_tasks"),  # only in v3
        ({"static_connectors": None}, "static_connectors"),
        ({"version": 0, "allocation": DOCUMENTED_ASSIGNMENT_JSON}, "allocation"),  # not in v0
        ({"flag": True}, "flag"),
        ({"url": None}, "url"),
    ]
    for change, key in cases:
        with pytest.raises(CodecInputError) as info:
            subscription_from_json({**good, **change})
        assert info.value.key == key, change
    assert subscription_from_json({**good, "version": 0}).allocation is None
    assert subscription_from_json({**good, "static_tasks": []}).static_tasks == ()
    v3 = subscription_from_json(
        {"version": 3, "url": "u", "config_offset": 0, "static_tasks": ["a-b-1"]}
    )
    assert v3.static_tasks == (ConnectorTaskId("a-b", 1),)
    with pytest.raises(CodecInputError) as info:
        subscription_from_json({**good, "version": 3, "static_connectors": [None]})
    assert info.value.key == "static_connectors[0]"


def test_duplicate_connectors_across_the_presize_boundary() -> None:
    # The one documented exception to encode(decode(b)) == b: Kafka presizes
    # new HashSet<>(connectors) from the list length *with* duplicates (12 -> capacity 32),
    # while the decoded list holds the 11 distinct names (capacity 16).
    names = [f"conn-{i}" for i in range(11)]
    a = ConnectAssignment(
        version=1, error=0, leader="l", leader_url="u", config_offset=0,
        connectors=(*names, names[0]),
    )  # fmt: skip
    data = encode_assignment(a)
    decoded = decode_assignment(data)
    assert sorted(decoded.connectors) == sorted(names)
    again = encode_assignment(decoded)
    assert again != data  # a different (but equally valid) entry order
    assert sorted(decode_assignment(again).connectors) == sorted(names)
    assert encode_assignment(decode_assignment(again)) == again
