"""The commands an ``update`` sends, built without a server (``plan_update``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.layout import Keys
from agent_memory.schema.lexical import STATS_DOCS, STATS_LENGTH, TERM_PREFIX, VECTOR_FORM
from agent_memory.store.ops.update import Changes, UpdatePlan, plan_update, term_trade

KEYS = Keys("s")
FIELDS = {L.F_CONTENT: "the cat sat", L.F_NAMESPACE: "ns", L.F_AGENT: "ag", L.F_THREAD: "th"}
VECTOR = np.ones(4, dtype=np.float32) / 2


def _plan(changes: Changes, *, cluster: bool = False, **overrides: Any) -> UpdatePlan:
    options: dict[str, Any] = {
        "keys": KEYS, "cluster": cluster, "lexical_form": VECTOR_FORM, "memory_id": "m1",
        "fields": FIELDS, "current_content": "the cat sat", "changes": changes,
        "vector": VECTOR, "now_ms": 1_000_000,
    }  # fmt: skip
    return plan_update(**{**options, **overrides})


def _names(plan: UpdatePlan) -> list[str]:
    return [str(c.args[0]) for c in plan.commands]


def _pairs(args: tuple[Any, ...], start: int) -> dict[Any, Any]:
    rest = list(args[start:])
    return dict(zip(rest[::2], rest[1::2], strict=True))


def test_an_importance_change_is_one_guarded_write_and_tells_no_reader() -> None:
    plan = _plan(Changes(importance=0.25))
    assert _names(plan) == ["EVAL"]
    _, script, numkeys, key, ttl_ms, *writes = plan.commands[0].args
    assert (script, numkeys, key, ttl_ms) == (scripts.UPDATE_IF_EXISTS, "1", "s:mem:m1", "0")
    assert writes == [L.F_IMPORTANCE, "0.25"]
    assert plan.cluster_terms == {}


def test_a_new_text_is_written_over_the_text_read_with_its_terms_traded() -> None:
    plan = _plan(Changes(content="the dog ran"))
    args = plan.commands[0].args
    assert args[:4] == ("EVAL", scripts.UPDATE_TEXT, "2", "s:mem:m1")
    assert args[4] == KEYS.term_stats("ns")  # traded in the same script
    assert args[5:8] == ("0", L.F_CONTENT, "the cat sat")  # no TTL; the expected text
    count = int(args[8])
    traded = _pairs(args[9 : 9 + 2 * count], 0)
    assert traded == {
        name: str(amount) for name, amount in term_trade("the cat sat", "the dog ran").items()
    }
    written = _pairs(args, 9 + 2 * count)
    assert written[L.F_CONTENT] == "the dog ran"
    assert written[L.F_VECTOR] == VECTOR.tobytes()
    # readers of the namespace learn that a text changed; the listings are untouched
    assert _names(plan)[1:] == ["SET"]
    assert plan.commands[1].args[1] == KEYS.epoch("ns")
    assert plan.cluster_terms == {}


def test_on_a_cluster_the_terms_are_left_to_the_caller() -> None:
    plan = _plan(Changes(content="the dog ran"), cluster=True)
    assert plan.commands[0].args[2] == "1"  # the memory's key only: the statistics live elsewhere
    assert KEYS.term_stats("ns") not in plan.commands[0].args
    assert plan.cluster_terms == term_trade("the cat sat", "the dog ran")


def test_the_same_text_is_not_rewritten_or_re_embedded() -> None:
    plan = _plan(Changes(content="the cat sat"), vector=None)
    script, _, _, _, *writes = plan.commands[0].args[1:]
    assert script == scripts.UPDATE_IF_EXISTS and writes == []


def test_a_changed_text_without_its_embedding_is_a_bug() -> None:
    with pytest.raises(ValueError, match="embedding"):
        _plan(Changes(content="the dog ran"), vector=None)


def test_a_ttl_rescores_every_listing_and_bumps_the_registry_version() -> None:
    plan = _plan(Changes(ttl=1.5, tags=("a", "b")))
    ttl_ms = plan.commands[0].args[4]
    assert ttl_ms == "1500"
    written = _pairs(plan.commands[0].args, 5)
    assert written[L.F_EXPIRES] == str(1_000_000 + 1500)
    assert written[L.F_TAGS_RAW] == '["a", "b"]'
    listings = KEYS.expiry_sets("ns", "ag", "th")
    zadds = [c.args for c in plan.commands if c.args[0] == "ZADD"]
    assert zadds == [("ZADD", key, "XX", "1001500", "m1") for key in listings]
    bumped = [c.args[1] for c in plan.commands if c.args[0] == "SET"]
    assert bumped == [KEYS.registry_version("ns"), KEYS.epoch("ns")]


def test_a_tiny_ttl_still_expires_in_the_future() -> None:
    plan = _plan(Changes(ttl=1e-9))
    assert plan.commands[0].args[4] == "1"


def test_term_trade_cancels_the_terms_both_texts_hold() -> None:
    trade = term_trade("the cat sat", "the cat ran far")
    assert STATS_DOCS not in trade  # still one document
    assert trade[TERM_PREFIX + "ran"] == 1 and trade[TERM_PREFIX + "sat"] == -1
    assert TERM_PREFIX + "cat" not in trade
    assert trade.get(STATS_LENGTH, 0) >= 0
    assert term_trade("same words", "same words") == {}
