"""The LangGraph checkpointer reading keys and index entries another client left in its
key space, on real servers: a checkpoint id naming no record, a thread key whose name
is not UTF-8. Each is left out, logged and counted; the reads go on past it."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from prometheus_client import CollectorRegistry

from agent_memory.integrations.checkpoint import AgentMemorySaver, Layout
from tests.cache.conftest import FLAVOURS, Flavour
from tests.conftest import _Servers
from tests.integrations.test_langgraph_checkpoint import _call

pytestmark = pytest.mark.integration


def _name() -> str:
    return f"cp{uuid.uuid4().hex[:10]}"


async def _history(saver: AgentMemorySaver, thread: str, steps: int) -> list[str]:
    """``steps`` checkpoints of ``thread`` (metadata ``step``), oldest first."""
    parent: Any = None
    ids: list[str] = []
    for step in range(steps):
        checkpoint = generate_checkpoint(channel_values={"x": step})
        config = parent or generate_config(thread)
        metadata = {**generate_metadata(), "step": step}
        parent = await _call(saver, "put", config, checkpoint, metadata, {"x": 1})
        ids.append(checkpoint["id"])
    return ids


def _event(registry: CollectorRegistry, name: str, event: str) -> float:
    labels = {"name": name, "event": event}
    return registry.get_sample_value("agent_memory_events_total", labels) or 0.0


async def _close(client: Any) -> None:
    closer = getattr(client, "aclose", None) or client.close
    result = closer()
    if asyncio.iscoroutine(result):
        await result


@pytest.mark.parametrize("flavour", FLAVOURS, ids=[f.id for f in FLAVOURS])
async def test_an_id_naming_no_record_is_dropped_from_the_index_logged_and_counted(
    flavour: Flavour, servers: _Servers, caplog: pytest.LogCaptureFixture
) -> None:
    """Ids another writer (or an eviction) left in a lane's ids without a record, sorting
    newest: every read pages past them, drops each from the index in its script (our
    writers add an id and its record in one script, so none can be in flight), logs and
    counts it (``ghost_entries``); they were skipped silently, and met again by every
    read. A record whose metadata alone is missing is not one of them."""
    import valkey

    url = servers.get("valkey").url
    registry = CollectorRegistry()
    client = flavour.client(url)
    saver = AgentMemorySaver(client, name=_name(), registry=registry)
    raw = valkey.Valkey.from_url(url)
    try:
        ids = await _history(saver, "t", 3)
        lane = Layout(saver.name).lane("t", "")
        raw.zadd(lane.ids, {"~ghost-a": 0, "~ghost-b": 0})
        thread = generate_config("t")
        with caplog.at_level(logging.WARNING):
            latest = await _call(saver, "get_tuple", thread)
            assert latest is not None and latest.checkpoint["id"] == ids[-1]
            assert raw.zrange(lane.ids, 0, -1) == [i.encode() for i in ids]
            assert _event(registry, saver.name, "ghost_entries") == 2
            found = await _call(saver, "list", thread)
            assert [t.checkpoint["id"] for t in found] == ids[::-1]
            assert _event(registry, saver.name, "ghost_entries") == 2  # gone for good
            # the filtered path (metadata first) drops them too
            raw.zadd(lane.ids, {"~ghost-c": 0})
            found = await _call(saver, "list", thread, filter={"step": 1})
            assert [t.checkpoint["id"] for t in found] == [ids[1]]
            assert _event(registry, saver.name, "ghost_entries") == 3
            assert raw.zscore(lane.ids, "~ghost-c") is None
        assert "~ghost-a" in caplog.text and "names no record" in caplog.text
        # a checkpoint without its metadata field is a record: kept in the index
        raw.hdel(lane.records, f"m:{ids[-1]}")
        found = await _call(saver, "list", thread, filter={"step": 1})
        assert [t.checkpoint["id"] for t in found] == [ids[1]]
        assert raw.zscore(lane.ids, ids[-1]) is not None
        assert _event(registry, saver.name, "ghost_entries") == 3
        assert saver.skipped == 0  # no damaged checkpoint met
    finally:
        raw.close()
        await _close(client)


@pytest.mark.parametrize("flavour", FLAVOURS, ids=[f.id for f in FLAVOURS])
async def test_a_thread_key_that_is_not_utf8_is_skipped_logged_and_counted(
    flavour: Flavour, servers: _Servers, caplog: pytest.LogCaptureFixture
) -> None:
    """A key in the checkpointer's key space, matching its threads' pattern, whose name
    is not UTF-8 (another client's): ``list`` across threads leaves it out, logs and
    counts it, and lists every thread, paging included; it raised (SCAN's reply could
    not be decoded, or the key not read as text)."""
    import valkey

    url = servers.get("valkey").url
    registry = CollectorRegistry()
    client = flavour.client(url)
    saver = AgentMemorySaver(client, name=_name(), registry=registry)
    raw = valkey.Valkey.from_url(url)
    try:
        a = await _history(saver, "a", 2)
        b = await _history(saver, "b", 2)
        foreign = f"{Layout(saver.name).prefix}:{{".encode() + b"\xff\xfe}:ns"
        raw.hset(foreign, "", "a")
        with caplog.at_level(logging.WARNING):
            found = await _call(saver, "list", None)
            assert sorted(t.checkpoint["id"] for t in found) == sorted(a + b)
            assert saver.skipped == 1
            found = await _call(saver, "list", None, limit=3)
            assert len(found) == 3
            assert saver.skipped == 2
        assert "\\xff\\xfe" in caplog.text and "not valid UTF-8" in caplog.text
        assert _event(registry, saver.name, "corrupt_records") == 2
        assert raw.exists(foreign)  # another client's key: left alone
    finally:
        raw.close()
        await _close(client)


@pytest.mark.parametrize("package", ["valkey", "redis"])
def test_a_thread_key_that_is_not_utf8_is_skipped_on_a_cluster(
    cluster_url: str, package: str
) -> None:
    """The same on a 3-primary cluster, through a decoding cluster client (SCAN walks
    every primary undecoded)."""
    if package == "valkey":
        from valkey.cluster import ValkeyCluster as Cluster
    else:
        from redis.cluster import RedisCluster as Cluster  # type: ignore[assignment]
    client = Cluster.from_url(cluster_url, decode_responses=True)
    saver = AgentMemorySaver(client, name=_name())
    try:
        threads = [f"thread-{i}" for i in range(6)]  # spread over the primaries
        for thread in threads:
            saver.put(generate_config(thread), generate_checkpoint(), generate_metadata(), {})
        foreign = f"{Layout(saver.name).prefix}:{{".encode() + b"\xff\xfe}:ns"
        client.hset(foreign, "", "thread-0")
        listed = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
        assert listed == set(threads)
        assert saver.skipped == 1
        client.delete(foreign)
    finally:
        client.close()
