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


def _pairs(args: Any) -> dict[Any, Any]:
    rest = list(args)
    return dict(zip(rest[::2], rest[1::2], strict=True))


def _guarded(plan: UpdatePlan) -> dict[str, Any]:
    """The parts of the plan's guarded write (``scripts.UPDATE_GUARDED``)."""
    _, script, numkeys, *rest = plan.commands[0].args
    assert script == scripts.UPDATE_GUARDED
    keys, argv = rest[: int(numkeys)], rest[int(numkeys) :]
    ttl_ms, nsets, score, member, nguard = argv[:5]
    guard = dict(
        zip(argv[5 : 5 + int(nguard)], argv[5 + int(nguard) : 5 + 2 * int(nguard)], strict=True)
    )
    at = 5 + 2 * int(nguard)
    nterms = int(argv[at])
    return {
        "keys": keys, "ttl_ms": ttl_ms, "listings": keys[len(keys) - int(nsets) :] if int(nsets) else [],
        "score": score, "member": member, "guard": guard,
        "terms": _pairs(argv[at + 1 : at + 1 + 2 * nterms]), "writes": _pairs(argv[at + 1 + 2 * nterms :]),
    }  # fmt: skip


# The memory read (FIELDS) is the one written: a write under its id since changes these.
IDENTITY_GUARD = {L.F_NAMESPACE: b"=ns", L.F_AGENT: b"=ag", L.F_THREAD: b"=th", L.F_SEQ: b""}


def test_an_importance_change_is_one_guarded_write_and_tells_no_reader() -> None:
    plan = _plan(Changes(importance=0.25))
    assert _names(plan) == ["EVAL"]
    write = _guarded(plan)
    assert write["keys"] == ["s:mem:m1"] and write["ttl_ms"] == "0" and write["member"] == "m1"
    assert write["guard"] == IDENTITY_GUARD
    assert write["writes"] == {L.F_IMPORTANCE: "0.25"} and write["terms"] == {}
    assert plan.cluster_terms == {}


def test_a_new_text_is_written_over_the_text_read_with_its_terms_traded() -> None:
    plan = _plan(Changes(content="the dog ran"))
    write = _guarded(plan)
    assert write["keys"] == ["s:mem:m1", KEYS.term_stats("ns")]  # traded in the same script
    assert write["ttl_ms"] == "0" and write["listings"] == []
    assert write["guard"] == {**IDENTITY_GUARD, L.F_CONTENT: b"=the cat sat"}
    assert write["terms"] == {
        name: str(amount) for name, amount in term_trade("the cat sat", "the dog ran").items()
    }
    assert write["writes"][L.F_CONTENT] == "the dog ran"
    assert write["writes"][L.F_VECTOR] == VECTOR.tobytes()
    # readers of the namespace learn that a text changed; the listings are untouched
    assert _names(plan)[1:] == ["SET"]
    assert plan.commands[1].args[1] == KEYS.epoch("ns")
    assert plan.cluster_terms == {}


def test_on_a_cluster_the_terms_are_left_to_the_caller() -> None:
    plan = _plan(Changes(content="the dog ran"), cluster=True)
    write = _guarded(plan)
    assert write["keys"] == ["s:mem:m1"]  # the statistics live elsewhere
    assert write["terms"] == {} and L.F_CONTENT in write["guard"]
    assert plan.cluster_terms == term_trade("the cat sat", "the dog ran")


def test_the_same_text_is_not_rewritten_or_re_embedded() -> None:
    plan = _plan(Changes(content="the cat sat"), vector=None)
    write = _guarded(plan)
    assert write["writes"] == {} and write["guard"] == IDENTITY_GUARD


def test_a_changed_text_without_its_embedding_is_a_bug() -> None:
    with pytest.raises(ValueError, match="embedding"):
        _plan(Changes(content="the dog ran"), vector=None)


def test_a_ttl_rescores_every_listing_in_the_write_and_bumps_the_registry_version() -> None:
    plan = _plan(Changes(ttl=1.5, tags=("a", "b")))
    write = _guarded(plan)
    assert write["ttl_ms"] == "1500"
    assert write["writes"][L.F_EXPIRES] == str(1_000_000 + 1500)
    assert write["writes"][L.F_TAGS_RAW] == '["a", "b"]'
    # re-scored in the same script, only while the memory is still the one read
    assert write["listings"] == KEYS.expiry_sets("ns", "ag", "th")
    assert write["score"] == "1001500" and write["guard"] == IDENTITY_GUARD
    assert [c.args[0] for c in plan.commands if c.args[0] == "ZADD"] == []
    bumped = [c.args[1] for c in plan.commands if c.args[0] == "SET"]
    assert bumped == [KEYS.registry_version("ns"), KEYS.epoch("ns")]


def test_on_a_cluster_a_ttl_rescores_the_listings_beside_the_write() -> None:
    plan = _plan(Changes(ttl=1.5), cluster=True)
    assert _guarded(plan)["keys"] == ["s:mem:m1"]
    zadds = [c.args for c in plan.commands if c.args[0] == "ZADD"]
    assert zadds == [
        ("ZADD", key, "XX", "1001500", "m1") for key in KEYS.expiry_sets("ns", "ag", "th")
    ]


def test_a_tiny_ttl_still_expires_in_the_future() -> None:
    plan = _plan(Changes(ttl=1e-9))
    assert _guarded(plan)["ttl_ms"] == "1"


def test_term_trade_cancels_the_terms_both_texts_hold() -> None:
    trade = term_trade("the cat sat", "the cat ran far")
    assert STATS_DOCS not in trade  # still one document
    assert trade[TERM_PREFIX + "ran"] == 1 and trade[TERM_PREFIX + "sat"] == -1
    assert TERM_PREFIX + "cat" not in trade
    assert trade.get(STATS_LENGTH, 0) >= 0
    assert term_trade("same words", "same words") == {}
