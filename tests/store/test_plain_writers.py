"""Another client's plain write of a memory key right after a store's write returns at
once on every server.

valkey-search 1.0.x indexes a write made inside a script or ``MULTI`` only at the next
search of the index (or once such writes fill its queue), and until then holds back the
reply of any client that writes the same key with a plain command (an ``HSET`` or ``DEL``
from ``valkey-cli``, your code, another library): without a search, for ever. The store
writes memories through scripts, so on 1.0.x it ends each such write with a search that
matches nothing (see ``FtBackend.settle_commands``); 1.1 and later never hold the writer
back (valkey-search pull request 381).
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_memory.backends.inprocess import InProcessClient
from tests.store.conftest import StoreEnv
from tests.support import TableEmbedder, near, random_unit

HELD_BACK_SECONDS = 5.0  # a reply this late was held back by the server, not slow


def _other_client(env: StoreEnv) -> Any:
    if env.keyspace is not None:
        return InProcessClient(env.keyspace)
    import redis

    return redis.Redis.from_url(env.server.url, socket_timeout=HELD_BACK_SECONDS)


async def test_a_plain_write_by_another_client_is_never_held_back(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    for i in range(3):
        embed.set(f"m{i}", near(q, 0.1 + 0.05 * i, f"s{i}"))
    store = env.make(embed)
    raw = getattr(store, "wrapped", store)
    other = _other_client(env)

    async def plain_write(memory_id: str, after: str) -> None:
        key = raw._ctx.keys.memory(memory_id)
        try:
            await asyncio.to_thread(other.execute_command, "HSET", key, "probe", after)
        except Exception as exc:  # reported with the call that preceded it
            raise AssertionError(f"a plain HSET after {after} was held back: {exc!r}") from exc

    try:
        first = await store.remember("m0")
        await plain_write(first, "remember")
        (second,) = await store.remember_many([{"content": "m1"}])
        await plain_write(second, "remember_many")
        await store.update(first, importance=0.9)
        await plain_write(first, "update")
        await store.feedback(first, 0.5)
        await plain_write(first, "feedback")
        result = await store.recall("query", k=2)
        assert {h.item.id for h in result} == {first, second}
        assert await store.complete(result.selection_id, 1.0)
        await plain_write(second, "complete")
        third = await store.remember("m2")
        assert await store.forget(third)
        await plain_write(third, "forget")  # a key the store just deleted
        await asyncio.to_thread(other.execute_command, "DEL", raw._ctx.keys.memory(third))
        item = await store.get(first)
        assert item is not None and item.importance == 0.9  # foreign fields are ignored
    finally:
        other.close()


async def test_a_first_call_that_writes_is_settled_too(env: StoreEnv) -> None:
    """A process whose first call is a deletion or a feedback (no ``ensure_index`` yet,
    so the dialect is not known) settles it like any other write."""
    embed = TableEmbedder()
    writer = env.make(embed)
    name = getattr(writer, "wrapped", writer).name
    ids = [await writer.remember(f"m{i}") for i in range(4)]
    other = _other_client(env)
    try:
        for changed, first_call in (
            (ids[0], lambda store: store.feedback(ids[0], 0.5)),
            (ids[1], lambda store: store.forget(ids[1])),
            (ids[2], lambda store: store.forget_many([ids[2]])),
        ):
            fresh = env.make(embed, name=name)
            await first_call(fresh)
            key = getattr(fresh, "wrapped", fresh)._ctx.keys.memory(changed)
            try:
                await asyncio.to_thread(other.execute_command, "HSET", key, "probe", "1")
            except Exception as exc:
                raise AssertionError(f"held back after {first_call}: {exc!r}") from exc
            await asyncio.to_thread(other.execute_command, "DEL", key)
    finally:
        other.close()
