"""A recall's candidates are handled in short event-loop turns: the slicing helper, the
union of a pool's channels, and search replies split before they are decoded."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.backends.base import KnnMatch
from agent_memory.core.effects import in_turns
from agent_memory.errors import ReplyParseError
from agent_memory.search.parse import document, parse_search_reply, search_entries
from agent_memory.store.ops.candidates import found


def test_in_turns_covers_every_item_once_in_order() -> None:
    items = list(range(53))
    parts = list(in_turns(items, 25))
    assert [len(p) for p in parts] == [25, 25, 3]
    assert [x for p in parts for x in p] == items
    assert list(in_turns([], 25)) == []


def _match(memory_id: str, distance: float) -> KnnMatch:
    return KnnMatch(memory_id, distance, {"content": memory_id})


def test_found_is_the_union_of_both_channels_each_memory_once() -> None:
    semantic = [_match("a", 0.1), _match("b", 0.4)]
    lexical = [_match("b", 0.0), _match("c", 0.0), _match("c", 0.0)]
    union = found(semantic, lexical)
    assert [(f.match.id, f.distance, sorted(f.matched)) for f in union] == [
        ("a", 0.1, ["semantic"]),
        ("b", 0.4, ["lexical", "semantic"]),
        ("c", 0.4, ["lexical"]),  # lexical only: the pool's farthest semantic distance
    ]
    assert [f.distance for f in found([], [_match("c", 0.0)])] == [2.0]


def test_search_entries_of_both_shapes_decode_to_the_same_documents() -> None:
    resp2 = [2, b"m:1", [b"content", b"x", b"__dist", b"0.5"], b"m:2"]
    resp3 = {
        b"total_results": 2,
        b"results": [
            {b"id": b"m:1", b"extra_attributes": {b"content": b"x", b"__dist": b"0.5"}},
            {b"id": b"m:2", b"extra_attributes": {}},
        ],
    }
    for reply in (resp2, resp3):
        total, entries = search_entries(reply)
        assert total == 2
        docs = [document(e) for e in entries]
        assert [(d.key, d.fields) for d in docs] == [
            ("m:1", {"content": b"x", "__dist": b"0.5"}),
            ("m:2", {}),
        ]
        assert parse_search_reply(reply).documents == tuple(docs)


def test_a_malformed_entry_fails_when_decoded() -> None:
    _, entries = search_entries([1, b"m:1", [b"content"]])  # odd map
    with pytest.raises(ReplyParseError, match="odd number"):
        document(entries[0])
    with pytest.raises(ReplyParseError, match="empty array"):
        search_entries([])


def test_a_filter_built_from_lists_is_hashable_and_equal_to_its_tuple_form() -> None:
    from agent_memory.schema.filters import MemoryFilter
    from agent_memory.search.query import filter_expression

    as_lists: dict[str, Any] = {
        "tags": ["a"], "sources": ["fact"], "exclude_sources": ["x"], "label_groups": [["t1", "t2"]],
    }  # fmt: skip
    listed = MemoryFilter("_d", **as_lists)
    tupled = MemoryFilter(
        "_d", tags=("a",), sources=("fact",), exclude_sources=("x",), label_groups=(("t1", "t2"),)
    )
    assert listed == tupled and hash(listed) == hash(tupled)
    assert filter_expression(listed) == filter_expression(tupled)


def test_in_flight_work_is_waited_for_until_done_or_past_its_deadline() -> None:
    from agent_memory.core.effects import InFlight, Sleep

    flight = InFlight()
    assert list(flight.wait(lambda: True)) == []  # nothing under way: no wait

    def work() -> Any:
        yield Sleep(0.0)
        return "done"

    running = flight.run(work(), deadline=60.0)
    assert isinstance(next(running), Sleep)
    waiter = flight.wait(lambda: True)
    assert isinstance(next(waiter), Sleep)  # under way: the waiter polls
    with pytest.raises(StopIteration) as finished:
        running.send(None)
    assert finished.value.value == "done" and flight.until == 0.0
    assert list(waiter) == []  # done: the waiter goes on

    failing = flight.run(work(), deadline=60.0)
    next(failing)
    with pytest.raises(ValueError):
        failing.throw(ValueError("refused"))
    assert flight.until == 0.0  # a failed run lets the next one do the work
    flight.until = 1.0  # a deadline long past (monotonic time): no wait
    assert list(flight.wait(lambda: True)) == []


def test_in_flight_work_is_claimed_by_one_caller() -> None:
    """Checking the mark and setting it is one step: of callers that found nothing
    under way, the first claims the work, the others are refused until it ends; work
    no longer needed (done while they waited) is not claimed."""
    from agent_memory.core.effects import InFlight, Sleep

    flight = InFlight()
    assert flight.claim(lambda: True, deadline=60.0)
    assert not flight.claim(lambda: True, deadline=60.0)  # under way

    def work() -> Any:
        yield Sleep(0.0)
        return "done"

    running = flight.claimed(work())
    next(running)
    with pytest.raises(StopIteration):
        running.send(None)
    assert flight.until == 0.0
    assert not flight.claim(lambda: False, deadline=60.0)  # done meanwhile
    assert flight.until == 0.0
    assert flight.claim(lambda: True, deadline=60.0)
