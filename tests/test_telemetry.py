"""Metric values after known operations, and span names/attributes (OTel SDK exporter)."""

from __future__ import annotations

import uuid

import pytest
import redis
import redis.asyncio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from agent_memory import LlmCache, MemoryStore, SyncMemoryStore
from tests.conftest import ServerInfo, _Servers
from tests.support import TableEmbedder, near, random_unit

EXPORTER = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(_provider)


@pytest.fixture
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey-redisearch")


def _value(registry: CollectorRegistry, metric: str, **labels: str) -> float:
    found = registry.get_sample_value(metric, labels)
    return 0.0 if found is None else found


async def test_memory_metrics_and_spans(server: ServerInfo) -> None:
    EXPORTER.clear()
    registry = CollectorRegistry()
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    close = near(q, 0.1)
    embed.set("close", close)
    embed.set("far query", near(close, 0.5, "far"))
    name = f"m{uuid.uuid4().hex[:10]}"
    client = redis.asyncio.Redis.from_url(server.url)
    store = MemoryStore(client, name, embed, registry=registry, default_threshold=0.3)
    try:
        await store.remember("close")
        await store.remember_many([{"content": "other 1"}, {"content": "other 2"}])
        await store.recall("query", k=3)
        with pytest.warns(RuntimeWarning):
            await store.recall("far query", k=3)
        stats = await store.stats()
    finally:
        await client.aclose()
    assert stats.items == 3
    assert _value(registry, "agent_memory_items", name=name) == 3
    assert _value(registry, "agent_memory_recalls_total", name=name, result="hit") == 1
    assert _value(registry, "agent_memory_recalls_total", name=name, result="empty") == 1
    assert _value(registry, "agent_memory_recall_near_misses_total", name=name) == 1
    # 1 dimension probe is skipped (embedder declares dim) -> 3 texts + 2 queries
    assert _value(registry, "agent_memory_embedding_calls_total", name=name) == 5
    assert _value(registry, "agent_memory_recall_duration_seconds_count", name=name) == 2
    assert (
        _value(
            registry,
            "agent_memory_operation_duration_seconds_count",
            name=name,
            operation="remember",
        )
        == 1
    )

    spans = {s.name: s for s in EXPORTER.get_finished_spans()}
    recall = [s for s in EXPORTER.get_finished_spans() if s.name == "agent_memory.recall"]
    assert len(recall) == 2
    hit_span = recall[0]
    attrs = dict(hit_span.attributes or {})
    assert attrs["memory.store"] == name
    assert attrs["k"] == 3
    assert attrs["memory.results"] == 1
    assert attrs["memory.backend"] == "ft"
    assert attrs["memory.candidates"] >= 1
    assert abs(attrs["memory.nearest_distance"] - 0.1) < 1e-3
    assert dict(recall[1].attributes or {})["memory.near_miss"] is True
    embed_spans = [s for s in EXPORTER.get_finished_spans() if s.name == "agent_memory.embed"]
    assert embed_spans and all(
        s.parent is not None
        and s.context.trace_id in {r.context.trace_id for r in EXPORTER.get_finished_spans()}
        for s in embed_spans
    )
    recall_ids = {s.context.span_id for s in recall}
    assert any(s.parent.span_id in recall_ids for s in embed_spans if s.parent)
    assert "agent_memory.stats" in spans


def test_errors_are_counted_and_sync_store_is_instrumented(server: ServerInfo) -> None:
    registry = CollectorRegistry()
    name = f"m{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(server.url)
    store = SyncMemoryStore(client, name, TableEmbedder(), registry=registry)
    try:
        with pytest.raises(Exception):  # noqa: B017 - the class is checked below
            store.update("0" * 32, importance=0.5)
    finally:
        client.close()
    assert (
        _value(
            registry,
            "agent_memory_errors_total",
            name=name,
            operation="update",
            error="NotFoundError",
        )
        == 1
    )


async def test_cache_metrics_and_spans(server: ServerInfo) -> None:
    EXPORTER.clear()
    registry = CollectorRegistry()
    name = f"c{uuid.uuid4().hex[:10]}"
    client = redis.asyncio.Redis.from_url(server.url)
    cache = LlmCache(client, name, registry=registry)
    params = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    try:
        assert not (await cache.check(params)).hit
        await cache.store(params, "hello", tokens={"input": 1000, "output": 1000})
        result = await cache.check(params)
        assert result.hit
    finally:
        await client.aclose()
    assert _value(registry, "agent_cache_requests_total", name=name, tier="llm", result="hit") == 1
    assert _value(registry, "agent_cache_requests_total", name=name, tier="llm", result="miss") == 1
    assert (
        _value(registry, "agent_cache_cost_saved_micros_total", name=name)
        == result.cost_saved_micros
        > 0
    )
    checks = [s for s in EXPORTER.get_finished_spans() if s.name == "agent_cache.llm.check"]
    assert len(checks) == 2
    last = dict(checks[-1].attributes or {})
    assert last["cache.name"] == name and last["cache.tier"] == "llm"
    assert last["cache.hit"] is True and last["cache.key"] == result.key


def test_two_stores_share_one_registry() -> None:
    from agent_memory.backends.inprocess import InProcessClient

    registry = CollectorRegistry()
    a = SyncMemoryStore(InProcessClient(), "a", TableEmbedder(), registry=registry)
    b = SyncMemoryStore(InProcessClient(), "b", TableEmbedder(), registry=registry)
    a.remember("x")
    b.remember("y")
    b.remember("z")
    assert (
        _value(
            registry,
            "agent_memory_operation_duration_seconds_count",
            name="a",
            operation="remember",
        )
        == 1
    )
    assert (
        _value(
            registry,
            "agent_memory_operation_duration_seconds_count",
            name="b",
            operation="remember",
        )
        == 2
    )


def test_stored_bytes_and_active_sessions_move(server: ServerInfo) -> None:
    """Every tier reports the bytes it writes; the session tier its live threads."""
    from agent_memory import SyncLlmCache, SyncSessionStore, SyncToolCache

    registry = CollectorRegistry()
    name = f"c{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(server.url)
    llm = SyncLlmCache(client, name, registry=registry)
    tool = SyncToolCache(client, name, registry=registry)
    sessions = SyncSessionStore(client, name, registry=registry)
    try:
        params = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        key = llm.store(params, "hello")
        stored = client.get(key)
        assert _value(registry, "agent_cache_stored_bytes_total", name=name, tier="llm") == len(
            stored
        )
        tool.store("search", {"q": "x"}, {"hits": 3})
        assert _value(registry, "agent_cache_stored_bytes_total", name=name, tier="tool") > 0
        sessions.set("t1", "k", "v")
        sessions.set("t2", "k", "v")
        assert _value(registry, "agent_cache_active_sessions", name=name) == 2
        assert _value(
            registry, "agent_cache_stored_bytes_total", name=name, tier="session"
        ) == 2 * len('"v"')
        sessions.destroy_thread("t1")
        assert _value(registry, "agent_cache_active_sessions", name=name) == 1
    finally:
        client.close()


def test_a_registry_with_a_clashing_name_is_refused_and_left_as_it_was() -> None:
    """A taken name is an InvalidInputError naming it (was prometheus_client's raw
    ValueError), and the families registered before the clash are taken back (they
    were left behind, so every later store on the registry failed the same way)."""
    from prometheus_client import Counter

    from agent_memory.backends.inprocess import InProcessClient
    from agent_memory.errors import InvalidInputError

    registry = CollectorRegistry()
    theirs = Counter("agent_memory_events", "someone else's", ("x",), registry=registry)
    before = sorted(m.name for m in registry.collect())
    with pytest.raises(InvalidInputError, match="agent_memory_events") as caught:
        SyncMemoryStore(InProcessClient(), "a", TableEmbedder(), registry=registry)
    assert caught.value.field == "registry"
    assert sorted(m.name for m in registry.collect()) == before
    registry.unregister(theirs)
    store = SyncMemoryStore(InProcessClient(), "a", TableEmbedder(), registry=registry)
    store.remember("x")
    assert (
        _value(registry, "agent_memory_operation_duration_seconds_count", name="a",
               operation="remember")
        == 1
    )  # fmt: skip


def _cache_spans(operation: str) -> list[dict[str, object]]:
    return [dict(s.attributes or {}) for s in EXPORTER.get_finished_spans() if s.name == operation]


async def test_concurrent_cache_operations_each_describe_their_own_lookup(
    server: ServerInfo,
) -> None:
    """Each span carries its own lookup (lookups were kept in one counter per tier and
    taken by whichever operation ended next: a wrapped call that missed and then waited
    for its completion function lost its ``cache.hit`` to a call that ended meanwhile,
    whose span then showed two lookups and no ``cache.hit`` at all)."""
    import asyncio

    EXPORTER.clear()
    registry = CollectorRegistry()
    name = f"c{uuid.uuid4().hex[:10]}"
    client = redis.asyncio.Redis.from_url(server.url)
    cache = LlmCache(client, name, registry=registry)
    entered, release = asyncio.Event(), asyncio.Event()

    async def complete(**params: object) -> str:
        if params["model"] == "slow":
            entered.set()
            await release.wait()
        return f"answer of {params['model']}"

    call = cache.wrap(complete)
    try:
        await call(model="fast")  # stored: the next call of it hits
        EXPORTER.clear()
        slow = asyncio.create_task(call(model="slow"))  # misses, then waits in complete
        await entered.wait()
        assert await call(model="fast") == "answer of fast"  # a hit, ended meanwhile
        release.set()
        assert await slow == "answer of slow"
    finally:
        await client.aclose()
    spans = _cache_spans("agent_cache.llm.cached_call")
    assert [s.get("cache.hit") for s in spans] == [True, False]
    assert _value(registry, "agent_cache_requests_total", name=name, tier="llm", result="hit") == 1
    assert _value(registry, "agent_cache_requests_total", name=name, tier="llm", result="miss") == 2


def test_threads_of_a_sync_tier_each_describe_their_own_lookup(server: ServerInfo) -> None:
    """The same for a sync tier shared by threads."""
    import threading

    from agent_memory import SyncLlmCache

    EXPORTER.clear()
    registry = CollectorRegistry()
    name = f"c{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(server.url)
    cache = SyncLlmCache(client, name, registry=registry)
    entered, release = threading.Event(), threading.Event()

    def complete(**params: object) -> str:
        if params["model"] == "slow":
            entered.set()
            assert release.wait(30)
        return f"answer of {params['model']}"

    call = cache.wrap(complete)
    got: list[object] = []
    try:
        call(model="fast")
        EXPORTER.clear()
        slow = threading.Thread(target=lambda: got.append(call(model="slow")))
        slow.start()
        assert entered.wait(30)
        assert call(model="fast") == "answer of fast"
        release.set()
        slow.join(30)
    finally:
        client.close()
    assert got == ["answer of slow"]
    spans = _cache_spans("agent_cache.llm.cached_call")
    assert [s.get("cache.hit") for s in spans] == [True, False]


def test_cache_errors_are_counted_with_their_tier(server: ServerInfo) -> None:
    """A failing cache operation is counted under its tier (agent_memory_errors has no
    tier label, so the LLM and tool tiers of one name failing the same way could not be
    told apart); agent_memory_errors still counts it as before."""
    from agent_memory import SyncLlmCache, SyncToolCache
    from agent_memory.errors import InvalidInputError

    registry = CollectorRegistry()
    name = f"c{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(server.url)
    llm = SyncLlmCache(client, name, registry=registry)
    tool = SyncToolCache(client, name, registry=registry)
    try:
        with pytest.raises(InvalidInputError):
            llm.check({"messages": []})  # no model
        with pytest.raises(InvalidInputError):
            tool.check("", {})  # no tool name
        with pytest.raises(InvalidInputError):
            tool.check("", {})
    finally:
        client.close()
    labels = {"name": name, "operation": "check", "error": "InvalidInputError"}
    assert _value(registry, "agent_cache_errors_total", tier="llm", **labels) == 1
    assert _value(registry, "agent_cache_errors_total", tier="tool", **labels) == 2
    assert _value(registry, "agent_memory_errors_total", **labels) == 3
