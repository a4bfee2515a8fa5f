"""The reply helpers' fast paths (bytes first, cached field names) keep the contract of
their general paths."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agent_memory.core import replies
from agent_memory.errors import ReplyParseError
from agent_memory.search.parse import parse_index_info


def test_pairs_of_a_flat_list_decodes_known_and_new_names() -> None:
    first = replies.pairs([b"importance", b"0.5", b"a_name_never_seen_before", b"x"])
    assert first == {"importance": b"0.5", "a_name_never_seen_before": b"x"}
    # The second time every name is cached: the fast path gives the same mapping.
    assert replies.pairs([b"importance", b"0.5", b"a_name_never_seen_before", b"x"]) == first
    assert replies.pairs(("a", 1, "b", None)) == {"a": 1, "b": None}
    assert replies.pairs({b"k": b"v"}) == {"k": b"v"}
    assert replies.pairs(None) == {}
    assert replies.pairs([]) == {}


def test_pairs_rejects_odd_lists_and_unreadable_names() -> None:
    with pytest.raises(ReplyParseError, match="odd number"):
        replies.pairs([b"importance", b"0.5", b"created_at"])
    with pytest.raises(ReplyParseError):
        replies.pairs([[b"nested"], b"value"])
    with pytest.raises(ReplyParseError, match="UTF-8"):
        replies.pairs([b"\xff\xfe", b"value"])
    with pytest.raises(ReplyParseError, match="map reply"):
        replies.pairs(42)


def test_numbers_from_bytes_and_other_shapes() -> None:
    assert replies.integer(b"1796150261215") == 1796150261215
    assert replies.integer(b"2.0") == 2
    assert replies.integer(7) == 7
    assert replies.integer(True) == 1
    assert replies.number(b"0.25") == 0.25
    assert replies.number(3) == 3.0
    assert replies.number("inf") == math.inf
    for bad in (b"nan", "nan", float("nan")):
        with pytest.raises(ReplyParseError, match="NaN"):
            replies.number(bad)
    with pytest.raises(ReplyParseError, match="numeric"):
        replies.number(b"half")
    with pytest.raises(ReplyParseError, match="integer"):
        replies.integer(b"many")
    # Digits beyond a float read as an infinity; an int beyond a float cannot become
    # one, and is a parse error rather than a raw OverflowError.
    assert replies.number(b"1" * 400) == math.inf
    with pytest.raises(ReplyParseError, match="out of range"):
        replies.number(10**400)
    with pytest.raises(ReplyParseError, match="integer"):
        replies.integer(b"9" * 5000)


def test_text_of_bytes_str_and_numbers() -> None:
    assert replies.text(b"caf\xc3\xa9") == "café"
    assert replies.text("café") == "café"
    assert replies.text(bytearray(b"ab")) == "ab"
    assert replies.text(5) == "5"
    with pytest.raises(ReplyParseError, match="UTF-8"):
        replies.text(b"\xff")
    with pytest.raises(ReplyParseError, match="string reply"):
        replies.text(None)


def _vector_attribute(name: str, dim: int, metric: str) -> list[Any]:
    # valkey-search's FT.INFO shape: the vector parameters nested under "index"
    return ["identifier", name, "attribute", name, "type", "VECTOR",
            "index", ["capacity", 10240, "dimensions", dim, "distance_metric", metric]]  # fmt: skip


@pytest.mark.parametrize("resp3_map", [False, True])
def test_index_info_reads_the_memory_vector_whatever_the_attribute_order(resp3_map: bool) -> None:
    # valkey-search lists attributes by name, or in another order after a restart: the
    # hashed term vector ("lex", 256 wide, IP) must never be taken for the embeddings.
    attributes = [_vector_attribute("lex", 256, "IP"), _vector_attribute("vector", 16, "COSINE")]
    reply: Any = ["index_name", "i", "attributes", attributes, "num_docs", "3"]
    if resp3_map:
        reply = dict(zip(reply[::2], reply[1::2], strict=True))
    info = parse_index_info(reply)
    assert (info.dim, info.metric, info.num_docs) == (16, "COSINE", 3)
    assert parse_index_info(reply, vector_field="lex").dim == 256
    assert parse_index_info(reply, vector_field="absent").dim == 256  # first one listed


def test_usage_counts_reads_damage_as_zeros_and_says_why() -> None:
    from agent_memory.errors import ServerResponseError
    from agent_memory.store.ops.read import usage_counts

    assert usage_counts([b"3", b"1", None, b"-2"], 2) == ([(3, 1), (0, 0)], None)
    assert usage_counts([b"4"], 2) == ([(4, 0), (0, 0)], None)  # a short reply: zeros
    counts, problem = usage_counts([b"NaN", b"1"], 1)
    assert counts == [(0, 1)] and problem is not None and "NaN" in problem
    wrong = ServerResponseError("WRONGTYPE Operation against a key holding the wrong kind")
    counts, problem = usage_counts(wrong, 2)
    assert counts == [(0, 0), (0, 0)] and problem is not None and "WRONGTYPE" in problem
