"""Protocol selection by vote (ClassicGroup#selectProtocol) and its tie-break rules."""

from __future__ import annotations

import pytest

from protocol.group import ErrorCode
from protocol.java_hash_order import hash_order
from protocol.java_hashing import spread, string_hash
from tests.coordinator.harness import (
    COMPATIBLE,
    EAGER,
    SESSIONED,
    CoordinatorContext,
    listed_member_ids,
)


def _form(ctx: CoordinatorContext, protocols: dict[str, tuple]) -> str:
    replies = []
    for source, protos in protocols.items():
        replies.append(ctx.join_new(source, protocols=protos)[1])
    while not all(r.done for r in replies):
        ctx.sleep(1000)
    assert all(r.error is ErrorCode.NONE for r in replies)
    return ctx.coordinator.protocol_name


def test_lowest_common_connect_protocol_wins() -> None:
    ctx = CoordinatorContext()
    chosen = _form(ctx, {"w1": SESSIONED, "w2": SESSIONED, "w3": EAGER})
    assert chosen == "default"
    leader = next(msg for _, _, msg in ctx.sent if getattr(msg, "members", ()))
    assert {m.metadata for m in leader.members} == {b"D"}  # metadata of the chosen protocol
    assert _form(CoordinatorContext(), {"w1": SESSIONED, "w2": COMPATIBLE}) == "compatible"
    assert _form(CoordinatorContext(), {"w1": SESSIONED, "w2": SESSIONED}) == "sessioned"


def test_group_moves_up_once_the_old_worker_leaves() -> None:
    ctx = CoordinatorContext()
    ids = {}
    for source, protos in {"w1": SESSIONED, "w2": SESSIONED, "w3": EAGER}.items():
        ids[source], _ = ctx.join_new(source, protocols=protos)
    ctx.sleep(6000)
    assert ctx.coordinator.protocol_name == "default"
    ctx.leave("w3", ids["w3"])
    r1 = ctx.join("w1", member_id=ids["w1"])
    ctx.join("w2", member_id=ids["w2"])
    assert r1.response.protocol_name == "sessioned"


def test_connect_buckets() -> None:
    # ClassicGroup#selectProtocol's HashMap of votes: compatible and default share bucket 2,
    # sessioned is 15.
    buckets = {n: spread(string_hash(n)) & 15 for n in ("compatible", "default", "sessioned")}
    assert buckets == {"compatible": 2, "default": 2, "sessioned": 15}


@pytest.mark.parametrize("tie_break,expected", [("java", "default"), ("first_listed", "sessioned")])
def test_tie_across_buckets(tie_break: str, expected: str) -> None:
    # 1 vote each; "default" (bucket 2) precedes "sessioned" (bucket 15) in the votes HashMap.
    ctx = CoordinatorContext(protocol_tie_break=tie_break)
    chosen = _form(
        ctx,
        {
            "w1": (("sessioned", b"S"), ("default", b"D")),
            "w2": (("default", b"D"), ("sessioned", b"S")),
        },
    )
    assert chosen == expected


A = (("compatible", b"C"), ("default", b"D"))
B = (("default", b"D"), ("compatible", b"C"))


@pytest.mark.parametrize(
    "join_order,tie_break,expected",
    [
        (("w1", "w2"), "java", "compatible"),
        (("w2", "w1"), "java", "default"),
        (("w1", "w2"), "first_listed", "compatible"),
        (("w2", "w1"), "first_listed", "default"),
    ],
)
def test_tie_in_one_bucket(join_order: tuple[str, str], tie_break: str, expected: str) -> None:
    # "compatible" and "default" share a votes-map bucket, so the one voted first wins under
    # "java"; the member ids share a member-map bucket too, so members vote in join order.
    ids = {"w1": "w1-1", "w2": "w2-0"}
    assert spread(string_hash("w1-1")) & 15 == spread(string_hash("w2-0")) & 15
    ctx = CoordinatorContext(
        protocol_tie_break=tie_break, member_ids=listed_member_ids(ids[s] for s in join_order)
    )
    protos = {"w1": A, "w2": B}
    assert _form(ctx, {s: protos[s] for s in join_order}) == expected


def test_tie_two_to_two_java_order_of_first_votes() -> None:
    ids = ["w1-0", "w2-0", "w3-1", "w4-x"]
    order = hash_order(ids, string_hash)
    ctx = CoordinatorContext(member_ids=listed_member_ids(ids))
    protos = {"w1": A, "w2": B, "w3": B, "w4": A}
    chosen = _form(ctx, protos)
    first_vote = {}
    for mid in order:
        proto = protos["w" + mid[1]][0][0]
        first_vote.setdefault(proto, len(first_vote))
    expected = min(first_vote, key=first_vote.get)  # same bucket: first voted wins
    assert chosen == expected
