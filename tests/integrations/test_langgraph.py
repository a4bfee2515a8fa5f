"""The LangGraph store, against the real ``langgraph`` package and real servers.

Mirrors what LangGraph's own store tests expect of a ``BaseStore``: put / get /
overwrite / delete, ``Item`` timestamps, search with query, filter, limit and offset,
namespace listing with prefix / suffix / wildcards / max_depth / pagination, batches,
TTL, and the async twins.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timezone
from typing import Any, TypedDict

import pytest
from langgraph.store.base import GetOp, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp

from agent_memory import MemoryStore, Scope, SyncMemoryStore
from agent_memory.backends.inprocess import InProcessClient, Keyspace
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import CapabilityError, EmbedderError, InvalidInputError
from agent_memory.integrations.langgraph import AgentMemoryStore, matches_filter
from agent_memory.integrations.langgraph.checks import (
    check_count,
    check_filter,
    check_index,
    check_value,
    ttl_seconds,
)
from tests.conftest import _Servers
from tests.support import TableEmbedder, near, random_unit

pytestmark = pytest.mark.integration

NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


@pytest.fixture(params=["valkey-redisearch", "valkey"])
def url(request: pytest.FixtureRequest, servers: _Servers) -> str:
    return servers.get(request.param).url


@pytest.fixture
def store(url: str) -> Iterator[AgentMemoryStore]:
    lg = AgentMemoryStore.from_url(
        url, name=f"lg_{uuid.uuid4().hex[:8]}", embed=HashingEmbedder(), index_fields=["text"]
    )
    yield lg
    lg.close()


@pytest.fixture
async def astore(url: str) -> AsyncIterator[AgentMemoryStore]:
    lg = AgentMemoryStore.from_url(
        url, name=f"lg_{uuid.uuid4().hex[:8]}", embed=HashingEmbedder(), index_fields=["text"]
    )
    yield lg
    await lg.aclose()


def test_put_get_overwrite_delete(store: AgentMemoryStore) -> None:
    ns = ("test", "users")
    before = datetime.now(timezone.utc)
    store.put(ns, "u1", {"text": "likes dark mode", "n": 1})
    item = store.get(ns, "u1")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (ns, "u1", {"text": "likes dark mode", "n": 1})
    assert item.created_at.tzinfo is not None
    assert before <= item.created_at == item.updated_at <= datetime.now(timezone.utc)

    store.put(ns, "u1", {"text": "likes light mode"})
    updated = store.get(ns, "u1")
    assert updated is not None
    assert updated.value == {"text": "likes light mode"}
    assert updated.created_at == item.created_at
    assert updated.updated_at > item.updated_at
    assert len(store.search(ns)) == 1  # an overwrite is not a second item

    assert store.get(ns, "missing") is None
    assert store.get(("test",), "u1") is None  # keys live in one exact namespace
    store.delete(ns, "u1")
    assert store.get(ns, "u1") is None
    store.delete(ns, "u1")  # deleting a missing item is harmless
    assert store.search(ns) == []


def test_any_characters_in_labels_and_keys(store: AgentMemoryStore) -> None:
    weird = ("tag:{x}|y", "spaces and * and -", "日本語", "@#$%^&()[]")
    store.put(weird, "key with spaces/and:colons", {"text": "unicode namespace"})
    store.put(("tag:{x}|y",), "k", {"text": "parent"})
    item = store.get(weird, "key with spaces/and:colons")
    assert item is not None and item.namespace == weird
    assert {i.key for i in store.search(("tag:{x}|y",))} == {"key with spaces/and:colons", "k"}
    assert store.search(("tag:{x}",)) == []  # a label is never a string prefix
    assert store.list_namespaces(prefix=("tag:{x}|y", "*")) == [weird]


def test_list_namespaces(store: AgentMemoryStore) -> None:
    for i, ns in enumerate(NAMESPACES):
        store.put(ns, f"id_{i}", {"text": f"value {i:02d}"})
    store.put(NAMESPACES[0], "second", {"text": "same namespace twice"})

    assert store.list_namespaces() == sorted(NAMESPACES)
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "c")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("*", "*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), suffix=("d", "i")) == [("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("users",)) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    everything = sorted(NAMESPACES)
    assert store.list_namespaces(limit=3) == everything[:3]
    assert store.list_namespaces(limit=3, offset=3) == everything[3:6]
    assert store.list_namespaces(offset=8) == everything[8:]

    store.delete(("admin", "users", "789"), "id_8")
    assert ("admin", "users", "789") not in store.list_namespaces()


def test_search_prefix_filter_and_pagination(store: AgentMemoryStore) -> None:
    for i in range(12):
        ns = ("docs", "even" if i % 2 == 0 else "odd")
        store.put(ns, f"d{i}", {"text": f"document {i}", "n": i, "meta": {"kind": "doc"}})
    store.put(("other",), "x", {"text": "not a doc", "n": 100})

    assert len(store.search(("docs",), limit=100)) == 12
    assert len(store.search((), limit=100)) == 13
    assert {i.key for i in store.search(("docs", "even"), limit=100)} == {
        f"d{i}" for i in range(0, 12, 2)
    }
    first, second = store.search(("docs",), limit=5), store.search(("docs",), limit=5, offset=5)
    rest = store.search(("docs",), limit=5, offset=10)
    keys = [i.key for i in [*first, *second, *rest]]
    assert len(keys) == 12 and len(set(keys)) == 12
    assert all(isinstance(i, SearchItem) and i.score is None for i in first)
    # without a query, newest update first (the store orders at millisecond resolution)
    stamps = [i.updated_at.timestamp() for i in [*first, *second, *rest]]
    assert all(a >= b - 0.001 for a, b in itertools.pairwise(stamps))

    assert {i.key for i in store.search(("docs",), filter={"n": 3})} == {"d3"}
    assert {i.key for i in store.search(("docs",), filter={"n": {"$gte": 9}})} == {
        "d9",
        "d10",
        "d11",
    }
    assert {i.key for i in store.search((), filter={"n": {"$gt": 10, "$lt": 100}})} == {"d11"}
    assert {i.key for i in store.search(("docs",), filter={"n": {"$ne": 0}}, limit=100)} == {
        f"d{i}" for i in range(1, 12)
    }
    assert len(store.search((), filter={"meta": {"kind": "doc"}}, limit=100)) == 12
    assert store.search(("docs",), filter={"missing": 1}) == []
    filtered = store.search(("docs",), filter={"meta": {"kind": "doc"}}, limit=4, offset=10)
    assert len(filtered) == 2
    with pytest.raises(InvalidInputError):
        store.search(("docs",), filter={"n": {"$regex": "x"}})


def test_semantic_search(store: AgentMemoryStore) -> None:
    ns = ("memories", "u1")
    store.put(ns, "theme", {"text": "the user prefers dark mode in the editor"})
    store.put(ns, "food", {"text": "the user is allergic to peanuts", "kind": "health"})
    store.put(ns, "deploy", {"text": "deploys happen on tuesday mornings"})
    store.put(("memories", "u2"), "theme", {"text": "prefers light mode"})
    store.put(ns, "raw", {"text": "dark mode dark mode"}, index=False)

    hits = store.search(ns, query="dark mode editor", limit=3)
    assert hits[0].key == "theme"
    scores = [h.score for h in hits]
    assert all(isinstance(s, float) for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert 0 < hits[0].score <= 1  # type: ignore[operator]

    # limit / offset page through one ordering; unindexed items come last, unscored
    everything = store.search(ns, query="dark mode editor", limit=10)
    assert [h.key for h in everything][-1] == "raw" and everything[-1].score is None
    assert len(everything) == 4
    paged = [
        h.key for o in range(4) for h in store.search(ns, query="dark mode", limit=1, offset=o)
    ]
    assert paged == [h.key for h in store.search(ns, query="dark mode", limit=4)]

    assert [h.key for h in store.search(ns, query="peanuts", filter={"kind": "health"})] == ["food"]
    assert [h.namespace for h in store.search(("memories",), query="light mode", limit=1)] == [
        ("memories", "u2")
    ]

    # updating the text re-embeds it
    store.put(ns, "deploy", {"text": "the editor theme is dark mode now"})
    assert store.search(ns, query="editor theme", limit=1)[0].key == "deploy"


def test_index_fields_per_put(store: AgentMemoryStore) -> None:
    ns = ("paths",)
    value = {"title": "cooking", "sections": [{"body": "peanut butter cookies"}, {"body": "x"}]}
    store.put(ns, "by-path", value, index=["sections[*].body"])
    store.put(ns, "by-title", {"title": "peanut butter cookies", "sections": []}, index=["title"])
    store.put(ns, "no-text", {"other": 1})  # the store's index field "text" is absent
    hits = store.search(ns, query="peanut butter cookies", limit=10)
    assert {h.key for h in hits[:2]} == {"by-path", "by-title"}
    assert hits[2].key == "no-text" and hits[2].score is None
    whole = AgentMemoryStore(store.sync_store, memory_namespace="whole")  # default fields: "$"
    whole.put(ns, "k", {"deep": {"nested": "valkey search"}})
    assert whole.search(ns, query="valkey search")[0].score > 0.3  # type: ignore[operator]


def test_batch_runs_in_order(store: AgentMemoryStore) -> None:
    ns = ("batch",)
    results = store.batch(
        [
            PutOp(ns, "a", {"text": "first"}),
            PutOp(ns, "a", {"text": "second"}),  # last put of a key wins
            PutOp(ns, "b", {"text": "other"}),
            GetOp(ns, "a"),
            PutOp(ns, "b", None),
            GetOp(ns, "b"),
            SearchOp(ns, limit=10),
            ListNamespacesOp(),
        ]
    )
    assert results[:3] == [None, None, None]
    assert isinstance(results[3], Item) and results[3].value == {"text": "second"}
    assert results[4] is None and results[5] is None
    assert [i.key for i in results[6]] == ["a"]  # type: ignore[union-attr]
    assert results[7] == [ns]


def test_tenants_are_isolated(url: str) -> None:
    name = f"lg_{uuid.uuid4().hex[:8]}"
    sync = SyncMemoryStore.from_url(url, name=name, embed=HashingEmbedder())
    with sync:
        one = AgentMemoryStore(sync, memory_namespace="tenant-1")
        two = AgentMemoryStore(sync, memory_namespace="tenant-2")
        one.put(("ns",), "k", {"text": "one"})
        assert two.get(("ns",), "k") is None
        assert two.search(("ns",), query="one") == []
        assert two.list_namespaces() == []
        two.put(("ns",), "k", {"text": "two"})
        assert one.get(("ns",), "k").value == {"text": "one"}  # type: ignore[union-attr]
        # other memories of the namespace are not LangGraph items
        sync.remember("a plain memory", scope=Scope(namespace="tenant-1"))
        assert len(one.search((), limit=100)) == 1
        assert one.list_namespaces() == [("ns",)]


def test_ttl(servers: _Servers) -> None:
    url = servers.get("valkey-redisearch").url
    lg = AgentMemoryStore.from_url(
        url,
        name=f"lg_{uuid.uuid4().hex[:8]}",
        embed=HashingEmbedder(),
        ttl={"default_ttl": None, "refresh_on_read": True},
    )
    assert lg.supports_ttl
    second = 1 / 60  # minutes
    try:
        ns = ("ttl",)
        lg.put(ns, "short", {"text": "expires"}, ttl=second)
        lg.put(ns, "kept", {"text": "stays"})
        lg.put(ns, "refreshed", {"text": "read often"}, ttl=second)
        time.sleep(0.6)
        assert lg.get(ns, "refreshed") is not None  # refresh_on_read restarts the TTL
        assert lg.search(ns, filter={"text": "expires"}, refresh_ttl=False) != []
        time.sleep(0.6)
        assert lg.get(ns, "short") is None
        assert lg.get(ns, "refreshed", refresh_ttl=False) is not None
        assert {i.key for i in lg.search(ns)} == {"kept", "refreshed"}
        time.sleep(1.1)
        assert lg.get(ns, "refreshed") is None
        assert lg.get(ns, "kept") is not None
        assert lg.list_namespaces() == [ns]
    finally:
        lg.close()


@pytest.mark.parametrize("stored", ["soon", 10**400], ids=["text", "int-beyond-float"])
def test_an_item_whose_stored_ttl_another_writer_damaged_is_read_and_counted(
    servers: _Servers, stored: Any
) -> None:
    name = f"lg_{uuid.uuid4().hex[:8]}"
    lg = AgentMemoryStore.from_url(
        servers.get("valkey-redisearch").url,
        name=name,
        embed=HashingEmbedder(),
        ttl={"default_ttl": None, "refresh_on_read": True},
    )
    try:
        lg.put(("ns",), "k", {"text": "kept"}, ttl=5.0)
        (memory,) = lg._store.list(scope=lg._scope).items  # type: ignore[union-attr]
        damaged = dict(memory.metadata)
        damaged["langgraph"] = {**damaged["langgraph"], "ttl_minutes": stored}
        client = lg._store.client  # type: ignore[union-attr]
        client.hset(f"{name}:mem:{memory.id}", "metadata_json", json.dumps(damaged))
        counters = lg._store._ctx.counters  # type: ignore[union-attr]
        item = lg.get(("ns",), "k")  # a read that refreshes the TTL
        assert item is not None and item.value == {"text": "kept"}
        assert counters.get("corrupt_records") == 1
    finally:
        lg.close()


def test_default_ttl_from_config() -> None:
    sync = SyncMemoryStore(InProcessClient(Keyspace()), "lg_ttl", HashingEmbedder())
    lg = AgentMemoryStore(sync, ttl={"default_ttl": 5.0})
    lg.put(("ns",), "k", {"text": "x"})
    memory = sync.list().items[0]
    assert memory.expires_at is not None
    assert 290_000 <= memory.expires_at - memory.created_at <= 300_000
    lg.put(("ns",), "forever", {"text": "y"}, ttl=None)
    assert lg.get(("ns",), "forever") is not None


async def test_async_methods(astore: AgentMemoryStore) -> None:
    ns = ("async", "u1")
    await astore.aput(ns, "k1", {"text": "async dark mode"})
    await asyncio.gather(*(astore.aput(ns, f"k{i}", {"text": f"note {i}"}) for i in range(2, 6)))
    item = await astore.aget(ns, "k1")
    assert item is not None and item.value == {"text": "async dark mode"}
    hits = await astore.asearch(ns, query="dark mode", limit=2)
    assert hits[0].key == "k1"
    assert len(await astore.asearch(("async",), limit=100)) == 5
    assert await astore.alist_namespaces(prefix=("async",)) == [ns]
    await astore.adelete(ns, "k1")
    assert await astore.aget(ns, "k1") is None
    # the sync methods see the same data
    assert len(astore.search(ns, limit=100)) == 4


async def test_sync_store_only_serves_async_in_a_thread() -> None:
    sync = SyncMemoryStore(InProcessClient(Keyspace()), "lg_sync_only", HashingEmbedder())
    lg = AgentMemoryStore(sync)
    await lg.aput(("n",), "k", {"text": "hello"})
    assert (await lg.aget(("n",), "k")).value == {"text": "hello"}  # type: ignore[union-attr]
    from agent_memory.backends.inprocess import AsyncInProcessClient

    async_only = AgentMemoryStore(
        async_store=MemoryStore(AsyncInProcessClient(Keyspace()), "lg", HashingEmbedder())
    )
    with pytest.raises(CapabilityError, match="async"):
        async_only.get(("n",), "k")
    with pytest.raises(InvalidInputError):
        AgentMemoryStore()


def test_inside_a_langgraph_graph(store: AgentMemoryStore) -> None:
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        text: str
        found: list[str]

    def remember_and_recall(state: State) -> dict[str, Any]:
        graph_store = get_store()
        graph_store.put(("graph", "memories"), uuid.uuid4().hex, {"text": state["text"]})
        hits = graph_store.search(("graph",), query=state["text"], limit=1)
        return {"found": [h.value["text"] for h in hits]}

    graph = (
        StateGraph(State)
        .add_node("remember_and_recall", remember_and_recall)
        .add_edge(START, "remember_and_recall")
        .add_edge("remember_and_recall", END)
        .compile(store=store)
    )
    graph.invoke({"text": "the user likes tea", "found": []})
    out = graph.invoke({"text": "the user likes valkey", "found": []})
    assert out["found"] == ["the user likes valkey"]
    assert store.list_namespaces() == [("graph", "memories")]


def test_matches_filter() -> None:
    value = {"a": 1, "b": {"c": [1, 2]}, "s": "x"}
    assert matches_filter(value, None)
    assert matches_filter(value, {"a": 1, "b": {"c": [1, 2]}})
    assert not matches_filter(value, {"b": {"c": [1]}})
    assert matches_filter(value, {"a": {"$gte": 1, "$lt": 2}})
    assert not matches_filter(value, {"s": {"$gt": 0}})  # not a number: no match
    assert matches_filter(value, {"s": {"$ne": "y"}, "a": {"$eq": 1}})


# -- hostile input: refused with InvalidInputError, nothing stored changes ---------------

HOSTILE_PUTS: list[tuple[Any, dict[str, Any]]] = [
    (["not", "a", "mapping"], {}),
    ("text", {}),
    ({"text": {1, 2}}, {}),
    ({"text": float("nan")}, {}),
    ({"n": float("inf")}, {}),
    ({1: "x"}, {}),  # JSON would read it back as {"1": "x"}
    ({"deep": {"a": {2: "x"}}}, {}),
    ({"text": object()}, {}),
    ({"text": "\ud800 lone surrogate"}, {}),
    ({"text": "x" * 70_000}, {}),  # over the 64 KiB of JSON a value may hold
    ({"text": "new"}, {"ttl": -5}),
    ({"text": "new"}, {"ttl": 0}),
    ({"text": "new"}, {"ttl": "abc"}),
    ({"text": "new"}, {"ttl": float("nan")}),
    ({"text": "new"}, {"ttl": float("inf")}),
    ({"text": "new"}, {"ttl": True}),
    ({"text": "new"}, {"index": [1]}),
    ({"text": "new"}, {"index": "text"}),  # refused, not read as paths "t", "e", "x", "t"
    ({"text": "new"}, {"index": [""]}),
    ({"text": "new"}, {"index": True}),
]


@pytest.mark.parametrize(("value", "kwargs"), HOSTILE_PUTS, ids=lambda v: repr(v)[:30])
def test_refused_put_keeps_the_stored_item(
    store: AgentMemoryStore, value: Any, kwargs: dict[str, Any]
) -> None:
    ns = ("docs",)
    store.put(ns, "k", {"text": "precious"})
    before = store.get(ns, "k")
    with pytest.raises(InvalidInputError):
        store.put(ns, "k", value, **kwargs)
    assert store.get(ns, "k") == before
    assert store.search(ns) == [before]


def test_a_refused_op_refuses_the_whole_batch(store: AgentMemoryStore) -> None:
    ns = ("docs",)
    store.put(ns, "old", {"text": "precious"})
    before = store.get(ns, "old")
    with pytest.raises(InvalidInputError):
        store.batch(
            [
                PutOp(ns, "new", {"text": "written first"}),
                PutOp(ns, "old", None),
                SearchOp(ns),
                PutOp(ns, "old", {"text": "again"}),
                PutOp(ns, "bad", {"text": "x"}, ttl=-1),
            ]
        )
    assert store.get(ns, "new") is None
    assert store.get(ns, "old") == before
    with pytest.raises(InvalidInputError):
        store.batch([PutOp(ns, "old", None), SearchOp(ns, limit=float("inf"))])  # type: ignore[arg-type]
    assert store.get(ns, "old") == before


def test_a_lone_surrogate_in_a_namespace_or_key_is_refused_by_name(
    store: AgentMemoryStore,
) -> None:
    """A namespace label or key that is not valid Unicode raises InvalidInputError naming
    it (not a UnicodeEncodeError from inside the store), and nothing is written."""
    ns = ("docs",)
    store.put(ns, "k", {"text": "precious"})
    calls = [
        (lambda: store.put(("a\ud800",), "k", {"x": 1}), "namespace"),
        (lambda: store.put(ns, "k\ud800", {"x": 1}), "key"),
        (lambda: store.get(("a\ud800",), "k"), "namespace"),
        (lambda: store.get(ns, "\udfff"), "key"),
        (lambda: store.delete(ns, "k\ud800"), "key"),
        (lambda: store.search(("a\ud800",)), "namespace"),
        (lambda: store.list_namespaces(prefix=("a\ud800",)), "namespace"),
        (lambda: store.batch([PutOp(ns, "k", None), GetOp(ns, "\ud800")]), "key"),
    ]
    for call, field in calls:
        with pytest.raises(InvalidInputError) as caught:
            call()
        assert caught.value.field == field
    assert store.get(ns, "k") is not None
    assert store.list_namespaces() == [ns]


@pytest.mark.parametrize(
    "config",
    [
        {"importance": 1.5},
        {"importance": float("nan")},
        {"importance": "high"},
        {"ttl": {"default_ttl": -1}},
        {"ttl": {"default_ttl": "60"}},
        {"ttl": {"default_ttl": float("nan")}},
        {"ttl": {"refresh_on_read": "yes"}},
        {"ttl": 60},
    ],
    ids=repr,
)
def test_a_bad_config_is_refused_when_the_store_is_built(config: dict[str, Any]) -> None:
    sync = SyncMemoryStore(InProcessClient(Keyspace()), "lg_cfg", HashingEmbedder())
    with pytest.raises(InvalidInputError):
        AgentMemoryStore(sync, **config)


def _param_id(value: Any) -> str:
    try:
        return repr(value)[:80]
    except ValueError:  # an int over Python's digit limit has no repr
        return "int-over-the-digit-limit"


def _nested(depth: int, leaf: Any) -> Any:
    """``leaf`` inside ``depth`` nested objects (built without recursion)."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


HOSTILE_READS: list[tuple[str, dict[str, Any]]] = [
    ("search", {"limit": float("inf")}),
    ("search", {"limit": float("nan")}),
    ("search", {"limit": -1}),
    ("search", {"limit": "10"}),
    ("search", {"offset": "x"}),
    ("search", {"offset": -1}),
    ("search", {"offset": 1.5}),
    ("search", {"filter": [1]}),
    ("search", {"filter": "text"}),
    ("search", {"filter": {1: "x"}}),
    ("search", {"filter": {"n": {"$regex": "x"}}}),  # refused even when nothing matches
    ("search", {"query": 5}),
    ("search", {"filter": {"n": {"$lt": 10**400}}}),  # beyond any float: not compared
    ("search", {"filter": {"n": {"$gt": -(10**400)}}}),
    ("search", {"filter": {"n": 10**400}}),
    ("search", {"filter": {"n": [1, 10**5000]}}),
    ("search", {"filter": {"n": {"$eq": {1, 2}}}}),  # a set is no JSON value
    ("search", {"filter": {"n": {"$ne": float("nan")}}}),
    ("search", {"filter": {"n": _nested(101, 1)}}),
    ("search", {"filter": {"n": {"$eq": _nested(100, 1)}}}),
    ("list_namespaces", {"limit": "x"}),
    ("list_namespaces", {"limit": -1}),
    ("list_namespaces", {"offset": -1}),  # not "the last items"
    ("list_namespaces", {"offset": float("nan")}),
    ("list_namespaces", {"max_depth": "x"}),
    ("list_namespaces", {"max_depth": 0}),
    ("list_namespaces", {"max_depth": 1.5}),
]


@pytest.mark.parametrize(("method", "kwargs"), HOSTILE_READS, ids=_param_id)
def test_hostile_search_and_listing_arguments_are_refused(
    store: AgentMemoryStore, method: str, kwargs: dict[str, Any]
) -> None:
    store.put(("a",), "k", {"text": "x", "n": 1})
    args: tuple[Any, ...] = (("a",),) if method == "search" else ()
    with pytest.raises(InvalidInputError):
        getattr(store, method)(*args, **kwargs)


# -- batching: one store call per step, never one per item -------------------------------


class CountingStore(SyncMemoryStore):
    """A real store that counts its method calls (the server is real)."""

    calls: collections.Counter[str]

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name in ("get", "get_many", "forget", "forget_many", "remember_many", "update",
                    "expire_many", "list", "recall"):  # fmt: skip
            super().__getattribute__("calls")[name] += 1
        return attr


def test_a_batch_is_one_store_call_per_step(url: str) -> None:
    sync = CountingStore.from_url(url, name=f"lg_{uuid.uuid4().hex[:8]}", embed=HashingEmbedder())
    sync.calls = collections.Counter()
    with sync:
        lg = AgentMemoryStore(sync, index_fields=["text"], ttl={"default_ttl": 60})
        ns = ("docs",)
        lg.batch([PutOp(ns, f"k{i}", {"text": f"note {i}"}, ttl=60) for i in range(20)])
        assert sync.calls == {"get_many": 1, "remember_many": 1}  # no deletes in it

        sync.calls.clear()
        got = lg.batch([GetOp(ns, f"k{i}") for i in range(20)])
        assert [g.key for g in got] == [f"k{i}" for i in range(20)]  # type: ignore[union-attr]
        # the TTL refresh of every item read is one step too
        assert sync.calls == {"get_many": 1, "expire_many": 1}

        sync.calls.clear()
        assert len(lg.search(ns, query="note", limit=20)) == 20
        assert sync.calls["expire_many"] == 1 and sync.calls["update"] == 0

        sync.calls.clear()
        lg.batch([GetOp(ns, f"k{i}", refresh_ttl=False) for i in range(20)])
        lg.search(ns, limit=20, refresh_ttl=False)
        assert sync.calls["expire_many"] == 0


class ReadCountingStore(SyncMemoryStore):
    """A real store that counts the memories its listings returned."""

    listed = 0

    def list(self, *args: Any, **kwargs: Any) -> Any:
        page = super().list(*args, **kwargs)
        self.listed += len(page.items)
        return page


def test_a_filtered_search_reads_the_listing_only_as_far_as_its_page(url: str) -> None:
    sync = ReadCountingStore.from_url(
        url, name=f"lg_{uuid.uuid4().hex[:8]}", embed=HashingEmbedder()
    )
    with sync:
        lg = AgentMemoryStore(sync, index_fields=())
        ns, count = ("docs",), 1200
        for start in range(0, count, 600):
            lg.batch(
                [PutOp(ns, f"k{i}", {"i": i, "odd": i % 2}) for i in range(start, start + 600)]
            )
        everything = lg.search(ns, limit=count, refresh_ttl=False)  # newest first
        odd = [item.key for item in everything if item.value["odd"]]

        sync.listed = 0
        page = lg.search(ns, filter={"odd": 1}, limit=10, offset=5, refresh_ttl=False)
        assert [item.key for item in page] == odd[5:15]
        assert sync.listed <= 100  # was the whole prefix, 1,200

        # a match only at the end of the listing is still found, as is a page past it
        sync.listed = 0
        (oldest,) = lg.search(ns, filter={"i": 0}, refresh_ttl=False)
        assert oldest.key == "k0" and sync.listed == count
        assert lg.search(ns, filter={"odd": 1}, offset=len(odd), refresh_ttl=False) == []
        tail = lg.search(ns, filter={"odd": 1}, limit=50, offset=len(odd) - 20, refresh_ttl=False)
        assert [item.key for item in tail] == odd[-20:]


def test_ttl_refresh_on_read_rewrites_the_expiry(store: AgentMemoryStore) -> None:
    ns = ("ttl",)
    sync = store.sync_store
    assert sync is not None
    store.put(ns, "a", {"text": "one"}, ttl=10)
    store.put(ns, "b", {"text": "two"}, ttl=20)
    first = {m.id: m.expires_at for m in sync.list(limit=10).items}
    time.sleep(0.01)
    assert len(store.batch([GetOp(ns, "a"), GetOp(ns, "b"), GetOp(ns, "missing")])) == 3
    later = {m.id: m.expires_at for m in sync.list(limit=10).items}
    assert first.keys() == later.keys()
    assert all(later[i] > first[i] for i in first)  # type: ignore[operator]
    spans = sorted(e - m.created_at for m in sync.list(limit=10).items if (e := m.expires_at))
    assert 590_000 <= spans[0] <= 610_000 and 1_190_000 <= spans[1] <= 1_210_000


def test_argument_checks() -> None:
    assert check_value({"a": [1, {"b": None}], "c": 1.5}) == {"a": [1, {"b": None}], "c": 1.5}
    for bad in ({"a": {1: 2}}, {"a": [float("nan")]}, {"a": b"bytes"}, {"a": {1, 2}}, [1]):
        with pytest.raises(InvalidInputError, match="value"):
            check_value(bad)
    assert check_index(None) is None and check_index(False) == ()
    assert check_index(["a", "b[*].c"]) == ("a", "b[*].c")
    for index in ("text", [1], [""], True, ("x", None)):
        with pytest.raises(InvalidInputError):
            check_index(index)
    assert ttl_seconds(None) is None and ttl_seconds(1.5) == 90.0
    for ttl in (0, -1, float("inf"), float("nan"), True, "1", 10**9):
        with pytest.raises(InvalidInputError):
            ttl_seconds(ttl)
    assert check_filter({}) is None and check_filter({"a": {"x": {"$ne": 2}}, "b": {"$gt": 1}})
    mixed = {"a": {"$gt": 1, "x": {"$ne": 2}}}  # operators beside a field name
    for flt in ([1], {1: 2}, {"a": {"$in": [1]}}, {"a": {"b": {"$regex": "x"}}}, mixed):
        with pytest.raises(InvalidInputError, match="filter"):
            check_filter(flt)
    assert check_count(0, field="limit") == 0
    for count in (-1, 1.0, "1", True, None):
        with pytest.raises(InvalidInputError, match="limit"):
            check_count(count, field="limit")


async def test_async_batch_refuses_before_writing(astore: AgentMemoryStore) -> None:
    ns = ("docs",)
    await astore.aput(ns, "k", {"text": "precious"})
    before = await astore.aget(ns, "k")
    with pytest.raises(InvalidInputError):
        await astore.abatch([PutOp(ns, "k", None), PutOp(ns, "k2", {1: "x"})])
    assert await astore.aget(ns, "k") == before
    assert await astore.aget(ns, "k2") is None


def _lg(url: str, embed: Any, **options: Any) -> AgentMemoryStore:
    return AgentMemoryStore.from_url(
        url, name=f"lg_{uuid.uuid4().hex[:8]}", embed=embed, index_fields=["text"], **options
    )


class _FailingEmbedder(TableEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.failing: set[str] = set()

    def __call__(self, text: str) -> list[float]:
        if text in self.failing:
            raise ConnectionError("the embedding API is down")
        return super().__call__(text)


def test_a_put_that_fails_keeps_the_value_it_would_have_replaced(url: str) -> None:
    embed = _FailingEmbedder()
    lg = _lg(url, embed)
    try:
        lg.put(("users", "u1"), "profile", {"text": "likes tea"})
        embed.failing = {"likes coffee"}
        with pytest.raises(EmbedderError):
            lg.put(("users", "u1"), "profile", {"text": "likes coffee"})
        item = lg.get(("users", "u1"), "profile")
        assert item is not None and item.value == {"text": "likes tea"}
    finally:
        lg.close()


def test_equal_values_under_two_keys_are_two_items_on_a_deduplicating_store(url: str) -> None:
    lg = _lg(url, HashingEmbedder(), dedupe=True)
    try:
        lg.put(("tasks",), "a", {"text": "done"})
        lg.put(("tasks",), "b", {"text": "done"})
        assert {i.key for i in lg.search(("tasks",))} == {"a", "b"}
        assert lg.get(("tasks",), "b") is not None
    finally:
        lg.close()


def test_a_store_with_a_capacity_per_scope_is_refused() -> None:
    sync = SyncMemoryStore(
        InProcessClient(Keyspace()), "lg_cap", HashingEmbedder(), max_items_per_scope=2
    )
    with pytest.raises(InvalidInputError, match="max_items_per_scope") as info:
        AgentMemoryStore(sync)
    assert info.value.field == "store"


def test_a_semantic_search_ranks_by_cosine_similarity_alone(url: str) -> None:
    embed = TableEmbedder()
    q = random_unit("tea?")
    embed.set("tea", q)
    embed.set("a hot drink from leaves", near(q, 0.05, "a"))  # nearest, shares no word
    embed.set("tea with friends", near(q, 0.6, "b"))  # farther, shares the query's word
    lg = _lg(url, embed)
    try:
        lg.put(("d",), "near", {"text": "a hot drink from leaves"})
        lg.put(("d",), "far", {"text": "tea with friends"})
        (top,) = lg.search(("d",), query="tea", limit=1)
        assert top.key == "near"
        assert [i.key for i in lg.search(("d",), query="tea", limit=1, offset=1)] == ["far"]
    finally:
        lg.close()


def test_an_item_whose_metadata_another_writer_damaged_is_skipped_and_counted(url: str) -> None:
    lg = _lg(url, HashingEmbedder())
    try:
        lg.put(("ns",), "kept", {"text": "fine"})
        lg.put(("ns",), "broken", {"text": "damaged"})
        served = lg._store
        assert served is not None
        broken = next(m for m in served.list(scope=lg._scope).items if "damaged" in m.content)
        meta = dict(broken.metadata)
        del meta["langgraph"]["namespace"]
        raw = served.client
        raw.hset(f"{served.name}:mem:{broken.id}", "metadata_json", json.dumps(meta))
        assert [i.key for i in lg.search(("ns",))] == ["kept"]
        assert [i.key for i in lg.search(("ns",), query="damaged")] == ["kept"]
        assert lg.list_namespaces() == [("ns",)]
        assert lg.get(("ns",), "broken") is None
        assert served._ctx.counters["corrupt_records"] >= 4
    finally:
        lg.close()


def test_a_capped_async_store_and_a_cap_set_later_are_refused(url: str) -> None:
    name = f"lg_{uuid.uuid4().hex[:8]}"
    sync = SyncMemoryStore.from_url(url, name=name, embed=HashingEmbedder())
    capped = MemoryStore.from_url(url, name=name, embed=HashingEmbedder(), max_items_per_scope=2)
    with pytest.raises(InvalidInputError, match="max_items_per_scope"):
        AgentMemoryStore(sync, async_store=capped)
    lg = AgentMemoryStore(sync)
    try:
        lg.put(("ns",), "a", {"text": "one"})
        sync.client.hset(f"{name}:__mem_config", "maxItemsPerScope", "2")  # an operator
        sync.refresh_config()
        with pytest.raises(InvalidInputError, match="max_items_per_scope"):
            lg.put(("ns",), "b", {"text": "two"})
        assert lg.get(("ns",), "b") is None and lg.get(("ns",), "a") is not None
    finally:
        sync.close()


def test_a_damaged_item_does_not_shorten_a_page(url: str) -> None:
    lg = _lg(url, HashingEmbedder())
    try:
        for key in ("a", "b", "c"):
            lg.put(("ns",), key, {"text": f"note {key}"})
        served = lg._store
        assert served is not None
        broken = next(m for m in served.list(scope=lg._scope).items if "note b" in m.content)
        meta = dict(broken.metadata)
        meta["langgraph"] = "not an object of this adapter's"
        served.client.hset(f"{served.name}:mem:{broken.id}", "metadata_json", json.dumps(meta))
        page = lg.search(("ns",), filter={"text": {"$ne": "x"}}, limit=2)
        assert len(page) == 2 and "b" not in {i.key for i in page}
        listed = lg.search(("ns",), limit=2)  # the plain listing, paged on the server
        assert len(listed) == 2 and "b" not in {i.key for i in listed}
    finally:
        lg.close()


@pytest.mark.parametrize(
    "value",
    [
        _nested(101, 1),  # 3000 levels made put raise RecursionError
        {"a": [_nested(100, None)]},
        {"n": 10**400},  # was stored, then broke every $gt search of its prefix
        {"n": -(10**400)},
        {"n": [1, {"m": 10**5000}]},  # int digits limit: was a raw ValueError
    ],
    ids=["101-objects", "101-in-a-list", "10**400", "-10**400", "5000-digits"],
)
def test_a_value_beyond_json_limits_is_refused_and_nothing_is_written(
    store: AgentMemoryStore, value: Any
) -> None:
    ns = ("limits",)
    with pytest.raises(InvalidInputError, match="value") as caught:
        store.batch([PutOp(ns, "ok", {"text": "fine"}), PutOp(ns, "bad", value)])
    assert caught.value.field == "value"
    assert store.search(ns) == []
    with pytest.raises(InvalidInputError, match="value"):
        check_value(value)


def test_values_at_the_json_limits_round_trip(store: AgentMemoryStore) -> None:
    deepest = _nested(99, [1.7976931348623157e308, int(1.7976931348623157e308)])
    store.put(("limits",), "deep", deepest)
    item = store.get(("limits",), "deep")
    assert item is not None and item.value == deepest
    with pytest.raises(InvalidInputError, match="ttl"):
        store.put(("limits",), "forever", {"text": "x"}, ttl=10**400)  # was OverflowError
    assert store.get(("limits",), "forever") is None


def test_a_stored_int_beyond_float_range_never_breaks_a_filtered_search(url: str) -> None:
    lg = _lg(url, HashingEmbedder())
    try:
        ns = ("numbers",)
        lg.put(ns, "ok", {"text": "three", "n": 3})
        lg.put(ns, "big", {"text": "huge", "n": 1})
        served = lg._store
        assert served is not None
        big = next(m for m in served.list(scope=lg._scope).items if m.content == "huge")
        meta = dict(big.metadata)
        meta["langgraph"] = {**meta["langgraph"], "value": {"text": "huge", "n": 10**400}}
        # another writer stores what this adapter refuses
        served.client.hset(f"{served.name}:mem:{big.id}", "metadata_json", json.dumps(meta))
        assert [i.key for i in lg.search(ns, filter={"n": {"$gt": 1}})] == ["ok"]
        assert [i.key for i in lg.search(ns, filter={"n": {"$lte": 3}})] == ["ok"]
        assert [i.key for i in lg.search(ns, query="huge", filter={"n": {"$gte": 0}})] == ["ok"]
        assert [i.key for i in lg.search(ns, filter={"n": {"$ne": 3}})] == ["big"]
        found = lg.get(ns, "big")
        assert found is not None and found.value["n"] == 10**400
    finally:
        lg.close()


def test_pages_go_past_the_listing_and_nearest_neighbour_caps(servers: _Servers) -> None:
    """A page is short only at the end: a listing past the store's 10,000 per call, a
    semantic page past the 1,000 nearest (the rest follows unscored)."""
    lg = _lg(servers.get("valkey-redisearch").url, HashingEmbedder())
    try:
        ns, count = ("docs",), 10_001
        for start in range(0, count, 2000):
            stop = min(count, start + 2000)
            lg.batch(
                [PutOp(ns, f"k{i}", {"text": f"note {i}", "i": i}) for i in range(start, stop)]
            )
        listed = lg.search(ns, limit=20_000, refresh_ttl=False)
        assert len({i.key for i in listed}) == len(listed) == count  # was 10,000

        ranked = lg.search(ns, query="note", limit=1000, refresh_ttl=False)
        assert all(i.score is not None for i in ranked)
        page = lg.search(ns, query="note", limit=10, offset=1000, refresh_ttl=False)
        assert len(page) == 10 and all(i.score is None for i in page)  # was empty
        assert not {i.key for i in page} & {i.key for i in ranked}
        everything = lg.search(ns, query="note", limit=20_000, refresh_ttl=False)
        assert len({i.key for i in everything}) == len(everything) == count
        assert [i.key for i in everything[:1000]] == [i.key for i in ranked]
        assert all(i.score is None for i in everything[1000:])

        # a filtered search finds an item wherever it ranks
        outside = next(i for i in range(count) if f"k{i}" not in {r.key for r in ranked})
        (found,) = lg.search(ns, query="note", filter={"i": outside}, refresh_ttl=False)
        assert found.key == f"k{outside}" and found.score is None  # was not found
        flt = {"i": {"$gte": 0}}
        assert len(lg.search(ns, query="note", filter=flt, limit=10, offset=1000)) == 10
    finally:
        lg.close()
