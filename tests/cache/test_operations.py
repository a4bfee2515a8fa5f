"""Operations driven by hand with canned replies: what goes into each round trip."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from agent_memory.cache.llm import LlmCore
from agent_memory.cache.scripts import REFRESH_THREAD
from agent_memory.cache.session import SessionCore
from agent_memory.cache.stats import parse_stats
from agent_memory.core.effects import Batch, Operation
from agent_memory.errors import ServerResponseError, ServerUnavailableError

PARAMS = {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}


def drive(op: Operation[Any], answers: list[Any]) -> tuple[Any, list[Batch]]:
    """Run ``op`` feeding ``answers`` (an exception instance is thrown into it)."""
    seen: list[Batch] = []
    value: Any = None
    try:
        effect = op.send(None)
        for answer in answers:
            assert isinstance(effect, Batch)
            seen.append(effect)
            effect = op.throw(answer) if isinstance(answer, Exception) else op.send(answer)
        raise AssertionError(f"operation wanted more: {effect!r}")
    except StopIteration as stop:
        value = stop.value
    return value, seen


def names(batch: Batch) -> list[tuple[Any, ...]]:
    return [
        cmd.args[:1] + cmd.args[2:3]
        if cmd.args[0] in ("HINCRBY", "HGET", "PEXPIRE")
        else cmd.args[:1]
        for cmd in batch.commands
    ]


def test_standalone_check_counts_its_outcome_in_its_own_script() -> None:
    core = LlmCore("n", None, None, lambda: 0.0)
    miss, (batch,) = drive(core.check(PARAMS), [[[None, 0, 0]]])
    (command,) = batch.commands
    assert not miss.hit and command.args[0] == "EVAL" and command.binary
    assert command.args[2:] == ("2", miss.key, "n:__stats", "1", "1", "llm:hits", "llm:misses")
    assert core.tier.buffer.pending() == {}


def test_what_the_script_counted_otherwise_is_corrected_by_the_next_batch() -> None:
    core = LlmCore("n", None, None, lambda: 0.0)
    # The script's JSON decoder took a value this library cannot read for a hit.
    miss, _ = drive(core.check(PARAMS), [[[b"\xff{", 1, 0]]])
    assert not miss.hit
    assert core.tier.buffer.pending() == {"llm:hits": -1, "llm:misses": 1}
    core.tier.buffer.take()
    # An entry priced from the table at the hit: the script counted nothing of it.
    entry = {"response": "r", "model": "gpt-4o", "tokens": {"input": 1000, "output": 0}}
    hit, _ = drive(core.check(PARAMS), [[[json.dumps(entry).encode(), 1, 0]]])
    assert hit.cost_saved_micros == 2500
    assert core.tier.buffer.pending() == {"cost_saved_micros": 2500}
    core.tier.buffer.take()
    entry["costMicros"] = 700  # priced when stored: what the script counted
    hit, _ = drive(core.check(PARAMS), [[[json.dumps(entry).encode(), 1, 700]]])
    assert hit.cost_saved_micros == 700 and core.tier.buffer.pending() == {}


def test_counters_the_script_could_not_update_are_reported_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = LlmCore("n", None, None, lambda: 0.0)
    entry = {"response": "r", "model": "m", "costMicros": 5}
    with caplog.at_level(logging.WARNING):
        hit, _ = drive(
            core.check(PARAMS),
            [[[json.dumps(entry).encode(), 1, 5, b"llm:hits", b"cost_saved_micros"]]],
        )
    assert hit.hit and hit.response == "r" and hit.cost_saved_micros == 5
    assert core.tier.buffer.take_events() == {"stats_failures": 2}
    assert core.tier.buffer.pending() == {}
    assert "llm:hits, cost_saved_micros" in caplog.text


def test_cluster_check_buffers_the_outcome_and_the_next_batch_carries_it() -> None:
    core = LlmCore("n", None, None, lambda: 0.0)
    core.tier.cluster = True  # entry and stats hash in different slots
    miss, (batch,) = drive(core.check(PARAMS), [[None]])
    assert not miss.hit and [c.args[0] for c in batch.commands] == ["GET"]
    assert not batch.atomic
    entry = {"response": "r", "model": "gpt-4o", "tokens": {"input": 1000, "output": 0}}
    hit, (batch,) = drive(core.check(PARAMS), [[json.dumps(entry).encode(), 1]])
    assert hit.hit and hit.cost_saved_micros == 2500
    assert names(batch) == [("GET",), ("HINCRBY", "llm:misses")]
    _, (batch,) = drive(core.store(PARAMS, "r", None, None), [[b"OK", 1, 1, 1]])
    assert names(batch) == [
        ("SET",),
        ("HINCRBY", "llm:hits"),
        ("HINCRBY", "cost_saved_micros"),
    ]
    assert core.tier.buffer.pending() == {}


def test_a_failed_round_trip_keeps_the_buffered_counters() -> None:
    core = LlmCore("n", None, None, lambda: 0.0)
    core.tier.cluster = True
    drive(core.check(PARAMS), [[None]])
    with pytest.raises(ServerUnavailableError):
        drive(core.check(PARAMS), [ServerUnavailableError("down")])
    assert core.tier.buffer.pending() == {"llm:misses": 1}


def test_counter_errors_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    core = SessionCore("n", 10)
    with caplog.at_level(logging.WARNING):
        value, (batch,) = drive(core.get("t", "k"), [[b'"v"', 1, ServerResponseError("WRONGTYPE")]])
    assert value == "v"
    assert names(batch) == [("HGET", "k"), ("EVAL",), ("HINCRBY", "session:reads")]
    assert batch.commands[1].args == ("EVAL", REFRESH_THREAD, "1", "n:session:t", "10000")
    assert "counter update failed" in caplog.text


def test_command_errors_are_raised() -> None:
    core = SessionCore("n", None)
    with pytest.raises(ServerResponseError):
        drive(core.set("t", "k", 1), [[ServerResponseError("WRONGTYPE"), 1]])


def test_parse_stats_accepts_every_shape() -> None:
    flat = [b"llm:hits", b"2", b"tool:a:b:hits", b"3", b"tool:a:b:misses", 1, b"junk", b"x"]
    stats = parse_stats(flat)
    assert stats.llm_hits == 2 and stats.tool("a:b").hits == 3 and stats.tool("a:b").misses == 1
    assert parse_stats({"tool:hits": "4", "tool:misses": "1"}).tool_hit_rate == 0.8
    assert parse_stats(None).llm_hit_rate == 0.0


def test_parse_stats_reports_counts_wider_than_a_server_counter() -> None:
    # HINCRBY never holds more than 64 bits; a 400-digit count is another writer's,
    # and would make cost_saved raise OverflowError.
    reported: list[str] = []
    stats = parse_stats(
        [b"cost_saved_micros", b"1" * 400, b"llm:hits", str(2**63).encode(), b"llm:misses", b"3"],
        unreadable=lambda field, value: reported.append(field),
    )
    assert reported == ["cost_saved_micros", "llm:hits"]
    assert stats.cost_saved == 0.0 and stats.llm_hits == 0 and stats.llm_misses == 3
    assert parse_stats([b"llm:hits", str(2**63 - 1).encode()]).llm_hits == 2**63 - 1
