"""The portable backend's warm mirror: one round trip per search while nobody writes,
and never an answer from a snapshot older than the change tokens read with it."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import valkey.asyncio

from agent_memory import MemoryStore, Scope
from agent_memory.core.effects import Batch
from tests.conftest import ServerInfo
from tests.support import TableEmbedder


class _CountingExecutor:
    """The store's executor, counting the round trips it makes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.round_trips = 0

    async def command(self, cmd: Any) -> Any:
        self.round_trips += 1
        return await self.inner.command(cmd)

    async def batch(self, b: Batch) -> list[Any]:
        self.round_trips += 1
        return await self.inner.batch(b)

    async def scan(self, scan: Any) -> list[Any]:
        return await self.inner.scan(scan)


def _embedder() -> TableEmbedder:
    embed = TableEmbedder()
    base = [1.0] + [0.0] * 15
    embed.set("where is the cat", base)
    embed.set("the cat sleeps on the sofa", [0.99, 0.1] + [0.0] * 14)
    embed.set("the cat sleeps in the garden", [0.98, 0.0, 0.15] + [0.0] * 13)
    embed.set("the cat sleeps in the kitchen", [0.97, 0.0, 0.0, 0.2] + [0.0] * 12)
    return embed


async def test_a_warm_mirror_sees_other_writers_and_searches_in_one_round_trip(
    plain_server: ServerInfo,
) -> None:
    name = f"mirror{uuid.uuid4().hex[:8]}"
    reader_client = valkey.asyncio.Valkey.from_url(plain_server.url)
    writer_client = valkey.asyncio.Valkey.from_url(plain_server.url)
    reader = MemoryStore(reader_client, name, _embedder(), default_threshold=0.5)
    writer = MemoryStore(writer_client, name, _embedder(), default_threshold=0.5)
    try:
        sofa = await writer.remember("the cat sleeps on the sofa")
        assert [h.item.id for h in await reader.recall("where is the cat")] == [sofa]
        counting = _CountingExecutor(reader._executor)
        reader._executor = counting  # type: ignore[assignment]

        # Nobody wrote: the search and its change tokens share one round trip, the side
        # effects take the other.
        await reader.recall("where is the cat", reinforce=False)
        assert counting.round_trips == 2

        # Another process adds a memory: the tokens read with the candidates moved, so
        # the search runs again on the refreshed mirror.
        garden = await writer.remember("the cat sleeps in the garden")
        hits = await reader.recall("where is the cat", reinforce=False)
        assert {h.item.id for h in hits} == {sofa, garden}

        # ... forgets one ...
        await writer.forget(sofa)
        assert [h.item.id for h in await reader.recall("where is the cat")] == [garden]

        # ... and changes a vector (the epoch moves: the mirror is rebuilt).
        await writer.update(garden, content="the cat sleeps in the kitchen")
        hits = await reader.recall("where is the cat")
        assert [(h.item.id, h.item.content) for h in hits] == [
            (garden, "the cat sleeps in the kitchen")
        ]

        counting.round_trips = 0
        await reader.recall("where is the cat", reinforce=False)
        assert counting.round_trips == 2
    finally:
        await writer.forget_by_scope(Scope())
        await reader.close()
        await writer.close()
        await reader_client.aclose()
        await writer_client.aclose()


class _VectorReadCounter(_CountingExecutor):
    """Counts the mirror's vector reads (HMGET of the vector field)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.vector_reads = 0

    async def batch(self, b: Batch) -> list[Any]:
        self.vector_reads += sum(
            1 for c in b.commands if c.name == "HMGET" and "vector" in c.args[2:]
        )
        return await super().batch(b)


async def test_concurrent_recalls_on_a_stale_mirror_read_the_new_vectors_once(
    plain_server: ServerInfo,
) -> None:
    name = f"mirror{uuid.uuid4().hex[:8]}"
    writer_client = valkey.asyncio.Valkey.from_url(plain_server.url)
    reader_client = valkey.asyncio.Valkey.from_url(plain_server.url)
    table = _embedder()

    def embed(text: str) -> list[float]:  # in worker threads, all done at about once
        time.sleep(0.02)
        return list(table(text))

    writer = MemoryStore(writer_client, name, table, default_threshold=0.5)
    reader = MemoryStore(reader_client, name, embed, default_threshold=0.5)
    try:
        await reader.ensure_index()  # the mirror is loaded (empty) here
        ids = [
            await writer.remember(text)
            for text in (
                "the cat sleeps on the sofa",
                "the cat sleeps in the garden",
                "the cat sleeps in the kitchen",
            )
        ]
        counting = _VectorReadCounter(reader._executor)
        reader._executor = counting  # type: ignore[assignment]
        results = await asyncio.gather(*(reader.recall("where is the cat") for _ in range(8)))
        # The mirror is stale: one recall reads the new vectors, the seven others wait
        # for it instead of reading them too.
        assert counting.vector_reads == len(ids)
        assert all(sorted(h.item.id for h in r) == sorted(ids) for r in results)
    finally:
        await reader.close()
        await writer.close()
        await reader_client.aclose()
        await writer_client.aclose()


def test_threads_of_a_blocking_store_refresh_a_cold_mirror_once(
    plain_server: ServerInfo, monkeypatch: Any
) -> None:
    """Threads recalling together on a cold mirror: one refreshes it, the others wait.
    The mark of a refresh under way was checked, then set: threads switching between
    the two (the clock read between them is made slow here to make it certain) all
    refreshed. Now the check and the set are one step under a lock."""
    import threading
    import types

    import valkey as sync_valkey

    from agent_memory import SyncMemoryStore
    from agent_memory.backends.portable import PortableBackend
    from agent_memory.core import effects

    name = f"mirror{uuid.uuid4().hex[:8]}"
    client = sync_valkey.Valkey.from_url(plain_server.url)
    try:
        with SyncMemoryStore(client, name, _embedder(), default_threshold=0.5) as writer:
            writer.remember("the cat sleeps on the sofa")
        store = SyncMemoryStore(client, name, _embedder(), default_threshold=0.5)
        store.ensure_index()
        refreshes: list[str] = []
        refresh = PortableBackend._refresh

        def counted(self: Any, *args: Any) -> Any:
            refreshes.append(args[1])
            return refresh(self, *args)

        def slow_monotonic() -> float:
            time.sleep(0.005)  # gives the other threads the GIL
            return time.monotonic()

        monkeypatch.setattr(PortableBackend, "_refresh", counted)
        monkeypatch.setattr(effects, "time", types.SimpleNamespace(monotonic=slow_monotonic))
        barrier = threading.Barrier(4)
        found: list[int] = []

        def recall() -> None:
            barrier.wait()
            found.append(len(store.recall("where is the cat", reinforce=False)))

        threads = [threading.Thread(target=recall) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert found == [1, 1, 1, 1]
        assert len(refreshes) == 1, refreshes
        store.close()
    finally:
        client.close()


async def test_memories_deleted_outside_the_library_do_not_crowd_out_live_ones(
    plain_server: ServerInfo, caplog: Any
) -> None:
    """A plain DEL (or maxmemory eviction) moves no change token: the mirror still holds
    the memories. A recall picks past them as the FT index would, marks them dead in the
    mirror (the next recall does not read them again), and logs and counts them."""
    name = f"mirror{uuid.uuid4().hex[:8]}"
    embed = TableEmbedder()
    base = [1.0] + [0.0] * 15
    embed.set("query", base)
    for i in range(60):
        embed.set(f"m{i}", [1.0, 0.01 + 0.005 * i, *([0.0] * 14)])  # m0 nearest
    client = valkey.asyncio.Valkey.from_url(plain_server.url)
    store = MemoryStore(client, name, embed, default_threshold=1.0)
    try:
        ids = [await store.remember(f"m{i}") for i in range(60)]
        await store.recall("query")  # the mirror holds all 60
        await client.delete(*[f"{name}:mem:{m}" for m in ids[:55]])
        hits = await store.recall("query", k=5, reinforce=False)
        assert [h.item.content for h in hits] == [f"m{i}" for i in range(55, 60)]
        assert store._ctx.counters.get("ghost_entries") == 55
        assert "name no stored memory" in caplog.text
        counting = _CountingExecutor(store._executor)
        store._executor = counting  # type: ignore[assignment]
        hits = await store.recall("query", k=5, reinforce=False)
        assert [h.item.content for h in hits] == [f"m{i}" for i in range(55, 60)]
        assert counting.round_trips == 2  # the search and the side effects, as usual
        assert store._ctx.counters.get("ghost_entries") == 55
        # membership moves: the refresh does not read the ghosts again either
        await store.remember("m59")  # a duplicate text, another id
        hits = await store.recall("query", k=5, reinforce=False)
        assert [h.item.content for h in hits] == [f"m{i}" for i in range(55, 60)]
        assert store._ctx.counters.get("ghost_entries") == 55
    finally:
        await client.aclose()


async def test_the_mirrors_of_many_namespaces_are_bounded(plain_server: ServerInfo) -> None:
    """A store recalling in many namespaces keeps the mirrors of the most recently
    recalled ``MAX_MIRRORS`` only, none of a namespace with nothing listed, and each
    sized near what it holds."""
    from agent_memory.backends.portable import MAX_MIRRORS

    name = f"mirror{uuid.uuid4().hex[:8]}"
    client = valkey.asyncio.Valkey.from_url(plain_server.url)
    store = MemoryStore(client, name, _embedder(), default_threshold=1.5)
    try:
        for i in range(MAX_MIRRORS + 20):
            scope = Scope(namespace=f"user{i}")
            await store.remember("the cat sleeps on the sofa", scope=scope)
            assert len(await store.recall("where is the cat", scope=scope)) == 1
        mirrors = store._ctx.backend._mirrors  # type: ignore[union-attr]
        assert len(mirrors) == MAX_MIRRORS
        assert all(m.snapshot.rows.matrix.shape[0] <= 8 for m in mirrors.values())
        for i in range(MAX_MIRRORS + 20):
            scope = Scope(namespace=f"user{i}")
            await store.forget_by_scope(scope)
            assert len(await store.recall("where is the cat", scope=scope)) == 0
        assert len(mirrors) == 0
        # a dropped mirror loads again when its namespace is recalled
        await store.remember("the cat sleeps on the sofa", scope=Scope(namespace="user0"))
        assert len(await store.recall("where is the cat", scope=Scope(namespace="user0"))) == 1
    finally:
        await client.aclose()


async def test_a_damaged_change_token_does_not_fail_recalls(
    plain_server: ServerInfo, caplog: Any
) -> None:
    """A change token another writer replaced by another type or by bytes that are not
    UTF-8 is logged and counted; the recall answers from a mirror refreshed then (never
    from one the damaged token could vouch for), and a later write repairs the token."""
    name = f"mirror{uuid.uuid4().hex[:8]}"
    client = valkey.asyncio.Valkey.from_url(plain_server.url)
    store = MemoryStore(client, name, _embedder(), default_threshold=1.5)
    other = MemoryStore(client, name, _embedder(), default_threshold=1.5)
    scope = Scope(namespace="ns")
    try:
        await store.remember("the cat sleeps on the sofa", scope=scope)
        assert len(await store.recall("where is the cat", scope=scope)) == 1
        for kind in ("epoch", "regver"):
            key = f"{name}:__mem_{kind}:ns"
            for damage in ("list", b"\xff\xfe"):
                await client.delete(key)
                if damage == "list":
                    await client.rpush(key, "x")
                else:
                    await client.set(key, damage)
                before = store._ctx.counters.get("corrupt_records", 0)
                hits = await store.recall("where is the cat", scope=scope)
                assert [h.item.content for h in hits] == ["the cat sleeps on the sofa"]
                assert store._ctx.counters.get("corrupt_records", 0) == before + 1
                assert "token of namespace" in caplog.text
            await client.delete(key)
        await client.rpush(f"{name}:__mem_regver:ns", "x")
        await other.remember("the cat sleeps in the garden", scope=scope)  # repairs it
        hits = await store.recall("where is the cat", scope=scope)
        assert len(hits) == 2
        assert await client.type(f"{name}:__mem_regver:ns") == b"string"
    finally:
        await client.aclose()
