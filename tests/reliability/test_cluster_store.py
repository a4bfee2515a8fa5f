"""The memory store on a real 3-primary Valkey cluster: the portable backend on plain
Valkey, and the FT backend on valkey-search with its coordinator (where available).

Memories of one store spread over all three primaries; every operation must work with
``ValkeyCluster`` / ``RedisCluster`` clients, sync and async: remember, recall, list,
get, update, forget, forget_by_scope, capacity eviction, TTL and stats. Each atomic
multi-key step stays in one slot (the scripts touch one key); everything else is sent
per key and routed by the client.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_memory import MemoryInput, MemoryStore, Scope, SyncMemoryStore
from agent_memory.schema.encoding import namespace_token
from tests.cache.conftest import FLAVOURS, Flavour
from tests.conftest import VALKEY_SEARCH_KINDS
from tests.support import AsyncView, TableEmbedder, near, random_unit

# one of each package x mode, RESP2/RESP3 and decoding mixed
CLUSTER_FLAVOURS = [f for f in FLAVOURS if (f.package, f.protocol) in {("valkey", 2), ("redis", 3)}]


CLUSTER_KINDS = ("valkey", *VALKEY_SEARCH_KINDS)


@pytest.fixture(params=CLUSTER_KINDS)
def cluster_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=CLUSTER_FLAVOURS, ids=[f.id for f in CLUSTER_FLAVOURS])
async def cluster_store(
    request: pytest.FixtureRequest, cluster_kind: str
) -> AsyncIterator[tuple[Any, Any, TableEmbedder]]:
    flavour: Flavour = request.param
    if cluster_kind == "valkey":
        cluster_url = request.getfixturevalue("cluster_url")
    else:
        cluster_url = request.getfixturevalue("search_cluster_url")(cluster_kind)
    client = flavour.client(cluster_url, cluster=True)
    embed = TableEmbedder()
    name = f"cl{uuid.uuid4().hex[:10]}"
    store: Any
    if flavour.is_async:
        store = MemoryStore(client, name, embed, max_items_per_scope=5)
    else:
        store = AsyncView(SyncMemoryStore(client, name, embed, max_items_per_scope=5))
    from valkey.cluster import ValkeyCluster

    raw = ValkeyCluster.from_url(cluster_url, decode_responses=True)
    yield store, raw, embed
    raw.close()
    closer = getattr(client, "aclose", None) or client.close
    result = closer()
    if result is not None:
        await result


async def test_store_fully_works_on_a_cluster(
    cluster_store: tuple[Any, Any, TableEmbedder], cluster_kind: str
) -> None:
    store, raw, embed = cluster_store
    status = await store.ensure_index()
    assert status.backend == ("portable" if cluster_kind == "valkey" else "ft")
    q = random_unit("query")
    embed.set("query", q)
    ids = []
    for i in range(30):
        text = f"fact {i}"
        embed.set(text, near(q, 0.02 + i * 0.002, str(i)))
        ids.append(
            await store.remember(
                text, scope=Scope(namespace="ns", agent_id=f"agent{i % 10}"), tags=[f"t{i % 2}"]
            )
        )
    keys = [f"{store.name}:mem:{i}" for i in ids]
    assert len({raw.get_node_from_key(k).name for k in keys}) == 3  # spread over all primaries
    hits = await store.recall("query", scope=Scope(namespace="ns"), k=5)
    assert [h.item.content for h in hits] == [f"fact {i}" for i in range(5)]
    raw.hset(f"{store.name}:__mem_use", f"x:{ids[1]}", -5)  # a counter another writer broke
    again = await store.recall("query", scope=Scope(namespace="ns"), k=5, reinforce=False)
    assert [h.item.content for h in again] == [f"fact {i}" for i in range(5)]
    tagged = await store.recall("query", scope=Scope(namespace="ns"), tags=["t1"], k=50)
    assert {h.item.content for h in tagged} == {f"fact {i}" for i in range(1, 30, 2)}
    assert (await store.get(ids[0])).access_count == 1
    listed = await store.list(scope=Scope(namespace="ns", agent_id="agent3"))
    assert {i.content for i in listed.items} == {"fact 3", "fact 13", "fact 23"}
    updated = await store.update(ids[3], importance=0.9, tags=["new"])
    assert updated.importance == 0.9 and updated.tags == ("new",)
    assert await store.forget(ids[0]) is True
    assert await store.forget(ids[0]) is False
    assert await store.forget_by_scope(Scope(namespace="ns", agent_id="agent1")) == 3
    stats = await store.stats()
    assert stats.items == 26 and stats.counters["remembers"] == 30
    assert set(raw.smembers(f"{store.name}:__mem_namespaces")) == {"ns"}  # no SCAN needed

    # capacity: the cap of 5 per exact scope holds on a cluster
    capped = Scope(namespace="ns", agent_id="capped")
    for i in range(8):
        await store.remember(f"capped {i}", scope=capped, importance=0.1 * i)
    page = await store.list(scope=capped, limit=50)
    assert page.total == 5
    assert {i.content for i in page.items} == {f"capped {i}" for i in range(3, 8)}
    assert (await store.stats()).evictions == 3

    # TTL: set with the write, expires on every node
    short = await store.remember("short lived", ttl=0.3, scope=Scope(namespace="ttl"))
    assert 0 < raw.pttl(f"{store.name}:mem:{short}") <= 300
    await asyncio.sleep(0.5)
    assert await store.get(short) is None
    assert len(await store.recall("short lived", scope=Scope(namespace="ttl"))) == 0

    assert await store.forget_by_scope(Scope(namespace="ns")) == 26 + 5
    assert (await store.stats()).items == 0


async def test_a_write_survives_broken_bookkeeping_keys_on_a_cluster(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """The usage counters and the statistics replaced by strings (another writer): a
    write, a replacing write by id and a batch are stored, registered and recalled; the
    failed bookkeeping is logged and counted, as the standalone write scripts do."""
    store, raw, embed = cluster_store
    await store.ensure_index()
    q = random_unit("broken")
    embed.set("broken", q)
    first = (await store.remember_many([MemoryInput(content="first note", id="note-1")]))[0]
    for key in (
        f"{store.name}:__mem_use",
        f"{store.name}:__mem_stats",
        f"{store.name}:__mem_namespaces",
    ):
        raw.delete(key)
        raw.set(key, "not what it was")
    ctx = getattr(store, "_store", store)._ctx
    before = ctx.counters.get("bookkeeping_failures", 0)
    embed.set("replaced note", near(q, 0.05, "a"))
    replaced = await store.remember_many([MemoryInput(content="replaced note", id="note-1")])
    assert replaced == [first]
    embed.set("another note", near(q, 0.06, "b"))
    second = await store.remember("another note")
    assert ctx.counters.get("bookkeeping_failures", 0) > before
    assert (await store.get(first)).content == "replaced note"
    assert {i.id for i in (await store.list()).items} == {first, second}
    hits = await store.recall("broken", k=5, reinforce=False)
    assert {h.item.id for h in hits} == {first, second}


async def test_a_write_by_id_replaces_a_memory_of_another_scope_on_a_cluster(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """A caller-chosen id moved to another scope leaves nothing of the old memory: the
    old scope no longer lists it, and forgetting that scope spares the new one."""
    store, _, _ = cluster_store
    a, b = Scope(namespace="tenant-a", agent_id="x"), Scope(namespace="tenant-b")
    (mid,) = await store.remember_many([MemoryInput(content="walrus", id="moved-1", scope=a)])
    await store.remember_many(
        [MemoryInput(content="penguin", id="moved-1", scope=b, ttl=None, tags=())]
    )
    assert (await store.list(scope=Scope(namespace="tenant-a"))).total == 0
    assert [i.id for i in (await store.list(scope=b)).items] == [mid]
    assert await store.forget_by_scope(Scope(namespace="tenant-a")) == 0
    item = await store.get(mid)
    assert item is not None and item.content == "penguin" and item.scope == b


async def test_expiries_and_texts_updated_on_a_cluster_keep_listings_and_terms_in_step(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """``update`` and ``expire_many`` write through a guarded single-key script on a
    cluster; the listings (other slots) are re-scored beside it and the term statistics
    traded after it: each listing scores the memory as its record expires."""
    store, raw, _ = cluster_store
    scope = Scope(namespace="n", agent_id="x")
    mid = await store.remember("walrus migration", scope=scope)
    other = await store.remember("penguin colony", scope=scope)
    updated = await store.update(mid, content="seal pup", ttl=600.0)
    assert updated.content == "seal pup" and updated.expires_at is not None
    assert await store.expire_many({other: 900.0, "never-stored": 5.0}) == [other]
    keys = store._ctx.keys if hasattr(store, "_ctx") else store.wrapped._ctx.keys
    for memory_id in (mid, other):
        expires = float(raw.hget(keys.memory(memory_id), "expires_at"))
        for listing in keys.expiry_sets(namespace_token("n"), "x", None):
            assert raw.zscore(listing, memory_id) == expires
    terms = raw.hgetall(keys.term_stats(namespace_token("n")))
    assert "t:walrus" not in terms and terms["t:seal"] == "1"


async def test_prune_on_a_cluster_unlists_expired_memories_everywhere(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """The agent and thread indexes, scope buckets and usage counters of a memory the
    server reaped live on other nodes than its record: prune still removes them, and
    keeps those of a memory whose record exists again under its id."""
    store, raw, embed = cluster_store
    await store.ensure_index()
    q = random_unit("ttl")
    embed.set("ttl", q)
    embed.set("short lived", near(q, 0.05, "s"))
    embed.set("stored again", near(q, 0.06, "a"))
    embed.set("kept", near(q, 0.07, "k"))
    scope = Scope(agent_id="a", thread_id="t")
    gone = await store.remember("short lived", ttl=0.3, scope=scope)
    back = await store.remember("stored again", ttl=0.3, scope=scope)
    kept = await store.remember("kept", scope=scope)
    # usage counters for all; valkey-search 1.2 indexes a cluster's writes in the
    # background, so the three may take a moment to be searchable
    for _ in range(100):
        if len(await store.recall("ttl", scope=scope, k=3)) == 3:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the three memories never became searchable")
    await asyncio.sleep(0.6)  # the server reaps both
    # A writer storing it again between the prune's read of the registry and its check
    # (its registrations are written before its record, on other nodes).
    raw.hset(f"{store.name}:mem:{back}", "content", "stored again")

    def listed(memory_id: str) -> set[str]:
        where = set()
        for kind in ("__mem_agent", "__mem_thread", "__mem_scope"):
            for key in raw.scan_iter(match=f"{store.name}:{kind}:*", target_nodes="all"):
                if raw.zscore(key, memory_id) is not None:
                    where.add(kind)
        if any(f.endswith(memory_id) for f in raw.hkeys(f"{store.name}:__mem_use")):
            where.add("usage")
        return where

    assert listed(gone) == {"__mem_agent", "__mem_thread", "__mem_scope", "usage"}
    result = await store.prune()
    assert result.registry_entries == 1  # the server holds ``back``: its entry stays
    assert raw.zscore(f"{store.name}:__mem_reg:{namespace_token(None)}", back) is not None
    assert listed(gone) == set()
    assert listed(back) == {"__mem_agent", "__mem_thread", "__mem_scope", "usage"}
    assert [i.id for i in (await store.list(scope=Scope(agent_id="a"))).items] == [kept]


async def test_complete_with_a_scope_on_a_cluster_consumes_only_a_matching_receipt(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """On a cluster the receipt is consumed with GETDEL: with a scope it is read and
    checked first, so another tenant's call leaves it in place, once, for its own."""
    store, raw, embed = cluster_store
    await store.ensure_index()
    q = random_unit("tenant")
    embed.set("tenant", q)
    embed.set("fact", near(q, 0.05, "f"))
    mine = Scope(namespace="mine")
    await store.remember("fact", scope=mine)
    result = await store.recall("tenant", scope=mine, k=1)
    assert len(result) == 1
    key = getattr(store, "_store", store)._ctx.keys.receipt(result.selection_id)
    assert await store.complete(result.selection_id, 1.0, scope=Scope(namespace="other")) is False
    assert raw.exists(key) == 1
    outcomes = await asyncio.gather(
        *(store.complete(result.selection_id, 1.0, scope=mine) for _ in range(10))
    )
    assert outcomes.count(True) == 1
    assert raw.exists(key) == 0


async def test_complete_reaches_every_memory_when_one_is_damaged_on_a_cluster(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """On a cluster the evaluation reaches each memory by its own script: one whose
    aggregates are not numbers starts again from this evaluation, one whose key holds
    another type is left alone, both logged and counted, the others learn as usual."""
    store, raw, embed = cluster_store
    await store.ensure_index()
    q = random_unit("learn")
    embed.set("learn", q)
    ids = []
    for i in range(3):
        embed.set(f"lesson {i}", near(q, 0.05 + 0.01 * i, f"l{i}"))
        ids.append(await store.remember(f"lesson {i}"))
    result = await store.recall("learn", k=3)
    assert {h.item.id for h in result} == set(ids)
    keys = [f"{store.name}:mem:{i}" for i in ids]
    raw.hset(keys[0], mapping={"eval_sum": "many", "eval_weight": "nan"})
    raw.delete(keys[2])
    raw.set(keys[2], "not a hash")
    ctx = getattr(store, "_store", store)._ctx
    before = ctx.counters.get("corrupt_records", 0)
    assert await store.complete(result.selection_id, 1.0) is True
    assert ctx.counters.get("corrupt_records", 0) - before == 2
    assert await store.complete(result.selection_id, 1.0) is False
    for key in keys[:2]:  # the damaged aggregates replaced by this one evaluation's share
        assert [float(v) for v in raw.hmget(key, "eval_sum", "eval_weight")] == pytest.approx(
            [0.5 / 3, 1 / 3]
        )
    assert raw.get(keys[2]) == "not a hash"


async def test_a_memory_a_script_changed_is_replaced_by_id_on_a_cluster(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """A memory updated (a script write) and reinforced by a recall, then written again
    under its id: the replacement is answered, stored and recalled."""
    store, _, embed = cluster_store
    await store.ensure_index()
    q = random_unit("otter")
    embed.set("otter", q)
    embed.set("the otter swims", near(q, 0.05, "a"))
    embed.set("the otter sleeps", near(q, 0.05, "b"))
    (mid,) = await store.remember_many([MemoryInput(content="the otter swims", id="otter-1")])
    await store.update(mid, importance=0.9)
    assert [h.item.id for h in await store.recall("otter", k=1)] == [mid]  # reinforces it
    assert await store.remember_many([MemoryInput(content="the otter sleeps", id=mid)]) == [mid]
    item = await store.get(mid)
    assert item is not None and item.content == "the otter sleeps" and item.importance != 0.9
    hits = await store.recall("otter", k=1, reinforce=False)
    assert [h.item.content for h in hits] == ["the otter sleeps"]


async def test_concurrent_deduplicating_writers_store_one_copy_on_a_cluster(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """The scope claims live in their own slots: writers of one text still take turns."""
    store, _, _ = cluster_store
    await store.ensure_index()
    for round_ in range(4):
        scope = Scope(namespace="ns", agent_id=f"r{round_}")
        ids = await asyncio.gather(
            *(store.remember("User likes tea", scope=scope, dedupe=True) for _ in range(4))
        )
        assert len(set(ids)) == 1, f"round {round_}: {len(set(ids))} copies stored"
        assert (await store.list(scope=scope)).total == 1


async def test_dedupe_finds_a_duplicate_behind_a_farther_match_on_a_cluster(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """valkey-search 1.0's coordinator merges the shards' KNN replies unsorted, so a
    farther memory of the scope could come before the duplicate, and the dedupe scan
    (nearest first) stopped at it and stored a second copy."""
    store, _, embed = cluster_store
    await store.ensure_index()
    q = random_unit("fact")
    embed.set("fact 0", near(q, 0.05, "0"))
    embed.set("fact 0 again", near(q, 0.0501, "0"))
    scope = Scope(namespace="ns", agent_id="ag0", thread_id="t0")
    first = await store.remember("fact 0", scope=scope)
    for i in range(1, 8):  # some share the scope, on other shards
        await store.remember(
            f"other {i}", scope=Scope(namespace="ns", agent_id=f"ag{i % 3}", thread_id=f"t{i % 2}")
        )
    assert await store.remember("fact 0 again", scope=scope, dedupe=True) == first
    again = await store.remember_many(
        [MemoryInput(content="fact 0 again", scope=scope)], dedupe=True
    )
    assert again == [first]
    assert (await store.list(scope=scope)).total == 2  # "fact 0" and "other 6"


async def test_complete_on_a_cluster_credits_only_the_memories_its_recall_ranked(
    cluster_store: tuple[Any, Any, TableEmbedder],
) -> None:
    """Between a recall and its completion one memory was forgotten and another
    forgotten and stored again under its id: the completion re-creates neither, and the
    new memory under the old id takes no credit; the one left alone learns as usual."""
    store, raw, embed = cluster_store
    await store.ensure_index()
    q = random_unit("credit")
    embed.set("credit", q)
    ids = ["kept", "gone", "again"]
    for i in range(len(ids)):
        embed.set(f"credit {i}", near(q, 0.05 + 0.01 * i, f"c{i}"))
    await store.remember_many([MemoryInput(f"credit {i}", id=m) for i, m in enumerate(ids)])
    result = await store.recall("credit", k=3)
    assert {h.item.id for h in result} == set(ids)
    assert await store.forget("gone") and await store.forget("again")
    await store.remember_many([MemoryInput("credit 2", id="again")])
    assert await store.complete(result.selection_id, 1.0) is True
    key = f"{store.name}:mem:"
    assert float(raw.hget(key + "kept", "eval_weight")) == pytest.approx(1 / 3)
    assert raw.exists(key + "gone") == 0
    assert raw.hmget(key + "again", "eval_sum", "eval_weight") == [None, None]


def _ids_in_slot(prefix: str, slot: int, count: int) -> list[str]:
    from valkey.crc import key_slot

    ids: list[str] = []
    n = 0
    while len(ids) < count:
        if key_slot(f"{prefix}mig{n}".encode()) == slot:
            ids.append(f"mig{n}")
        n += 1
    return ids


# The asyncio cluster clients of both packages send ASKING and the redirected command
# as two pooled commands, possibly on two connections: the target then answers MOVED
# and the call fails as unavailable now and then (README "Cluster").
BLOCKING_FLAVOURS = [f for f in CLUSTER_FLAVOURS if not f.is_async]


@pytest.mark.parametrize("flavour", BLOCKING_FLAVOURS, ids=[f.id for f in BLOCKING_FLAVOURS])
async def test_operations_follow_a_slot_while_it_migrates(
    cluster_url: str, flavour: Flavour
) -> None:
    """The slot of some memories and of the registry moves to another primary while the
    store works on it (MIGRATING / IMPORTING, half the keys moved: ASK replies, then
    MOVED once it is done). Every operation succeeds; nothing is counted twice, lost or
    left unlisted."""
    import valkey
    from valkey.cluster import ValkeyCluster
    from valkey.crc import key_slot

    client = flavour.client(cluster_url, cluster=True)
    raw = ValkeyCluster.from_url(cluster_url, decode_responses=True)
    name = f"mg{uuid.uuid4().hex[:10]}"
    store: Any
    if flavour.is_async:
        store = MemoryStore(client, name, TableEmbedder())
    else:
        store = AsyncView(SyncMemoryStore(client, name, TableEmbedder()))
    prefix = f"{name}:mem:"
    slot = key_slot(f"{name}:__mem_reg:{namespace_token('ns')}".encode())
    ids = _ids_in_slot(prefix, slot, 10)
    a, b = Scope(namespace="ns", agent_id="a"), Scope(namespace="ns", agent_id="b")
    source = raw.get_node_from_key(f"{prefix}{ids[0]}")
    target = next(n for n in raw.get_primaries() if n.name != source.name)
    nodes = {n.name: valkey.Valkey(host=n.host, port=int(n.port)) for n in raw.get_primaries()}
    node_ids = {
        name_: str(c.execute_command("CLUSTER", "MYID"), "utf-8") for name_, c in nodes.items()
    }
    src, dst = nodes[source.name], nodes[target.name]
    try:
        await store.remember_many(
            [MemoryInput(content=f"old {i}", id=m, scope=a if i % 2 else b) for i, m in enumerate(ids[:6])]
        )  # fmt: skip
        elsewhere = await store.remember("elsewhere", scope=a)
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", node_ids[source.name])
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", node_ids[target.name])
        keys = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 1000)
        assert len(keys) >= 7  # six memories and the registry
        src.execute_command("MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *keys[::2])

        new = await store.remember_many(
            [MemoryInput(content=f"new {i}", id=m, scope=a) for i, m in enumerate(ids[6:])]
        )
        assert [i.content for i in await asyncio.gather(*(store.get(m) for m in ids))] == [
            *(f"old {i}" for i in range(6)), *(f"new {i}" for i in range(4))
        ]  # fmt: skip
        assert (await store.recall("new 1", scope=Scope(namespace="ns"), k=1))[0].item.id == new[1]
        assert (await store.update(ids[0], content="old 0 changed")).content == "old 0 changed"
        assert await store.forget(ids[1]) is True
        assert await store.forget_by_scope(b) == 3  # ids 0, 2, 4

        for key in src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 1000):
            src.execute_command("MIGRATE", target.host, target.port, key, 0, 5000)
        for node in (dst, src, *nodes.values()):
            node.execute_command("CLUSTER", "SETSLOT", slot, "NODE", node_ids[target.name])

        assert await store.forget(ids[3]) is True  # MOVED now
        left = {elsewhere, ids[5], *new}
        assert {
            i.id for i in (await store.list(scope=Scope(namespace="ns"), limit=50)).items
        } == left
        stats = await store.stats()
        assert stats.items == len(left)
        assert stats.counters["remembers"] == 11 and stats.counters["forgets"] == 5
        registered = set()
        for key in raw.scan_iter(match=f"{name}:__mem_reg:*"):
            registered |= set(raw.zrange(key, 0, -1))
        assert registered == left
    finally:
        # never leave the shared cluster with a slot half moved
        for key in src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 1000):
            src.execute_command("MIGRATE", target.host, target.port, key, 0, 5000)
        for node in (dst, src, *nodes.values()):
            node.execute_command("CLUSTER", "SETSLOT", slot, "NODE", node_ids[target.name])
        for node in nodes.values():
            node.close()
        raw.close()
        closer = getattr(client, "aclose", None) or client.close
        result = closer()
        if result is not None:
            await result
