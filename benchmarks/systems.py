"""The library and the floor (a bare client sending the same commands), per scenario.

Every operation is a zero-argument callable built before timing starts, so a timed
call covers only the work under test. Floor commands are built with the library's own
pure helpers (same K, filter, RETURN fields, same HSET fields and bookkeeping), ahead
of time: the floor is client + server only.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import valkey
import valkey.asyncio as valkey_asyncio

from agent_memory import LlmCache, MemoryInput, MemoryStore, Scope, SyncMemoryStore, ToolCache
from agent_memory.schema import layout as L
from agent_memory.schema import lexical
from agent_memory.schema.encoding import encode_value, namespace_token
from agent_memory.schema.records import NewMemory, record_fields
from benchmarks.data import (
    Dataset,
    LookupEmbedder,
    agent_of,
    memory_text,
    query_text,
    unmatched_query_text,
)

K = 8
THRESHOLD = 1.0
SESSION = "s1"
AsyncOp = Callable[[], Awaitable[Any]]
SyncOp = Callable[[], Any]


class Bench:
    """Library stores, floor clients and the data of one server."""

    def __init__(self, url: str, dataset: Dataset, name: str = "bench") -> None:
        self.data = dataset
        self.embed = LookupEmbedder()
        self.embed.add([query_text(i) for i in range(len(dataset.queries))], dataset.queries)
        self.embed.add(
            [unmatched_query_text(i) for i in range(len(dataset.queries))], dataset.queries
        )
        self.client = valkey_asyncio.Valkey.from_url(url, max_connections=64)
        self.sync_client = valkey.Valkey.from_url(url, max_connections=64)
        opts: dict[str, Any] = {"embed_many": self.embed.many, "default_threshold": THRESHOLD}
        aopts: dict[str, Any] = {
            "embed_many": self.embed.aembed_many,
            "default_threshold": THRESHOLD,
        }
        self.store = MemoryStore(self.client, name, self.embed.aembed, **aopts)
        self.writes = MemoryStore(self.client, name + "_w", self.embed.aembed, **aopts)
        self.sync_store = SyncMemoryStore(self.sync_client, name, self.embed, **opts)
        self.sync_writes = SyncMemoryStore(self.sync_client, name + "_w", self.embed, **opts)
        self.llm = LlmCache(self.client, name + "_cache")
        self.tool = ToolCache(self.client, name + "_cache")
        self.keys = L.Keys(name)
        self.wkeys = L.Keys(name + "_w")
        self.ns = namespace_token(None)
        self.loaded = 0
        self.lexical_form = ""

    async def setup(self) -> dict[str, Any]:
        status = await self.store.ensure_index()
        await self.writes.ensure_index()
        self.sync_store.ensure_index()
        self.sync_writes.ensure_index()
        # The floor writes the same record, lexical field included.
        native = "native_text" in status.features
        self.lexical_form = lexical.TEXT_FORM if native else lexical.VECTOR_FORM
        return {
            "backend": status.backend,
            "dialect": str(status.dialect),
            "features": list(status.features),
        }

    async def load(self, start: int, stop: int, chunk: int = 1000) -> None:
        await load_memories(self.store, self.embed, self.data, start, stop, chunk=chunk)
        self.loaded = stop

    async def load_session(self, count: int = 200) -> None:
        """Session-scoped memories for the session-merged recall."""
        await self.store.remember_many(
            [
                MemoryInput(
                    content=memory_text(i), scope=Scope(session_id=SESSION), durability="session"
                )
                for i in range(count)
            ]
        )

    async def close(self) -> None:
        await self.store.close()
        await self.client.aclose()
        self.sync_client.close()

    # -- library -------------------------------------------------------------

    def library_op(self, scenario: str, i: int) -> AsyncOp | SyncOp:
        q = i % len(self.data.queries)
        text = query_text(q)
        m = i % max(1, self.loaded)
        store, sync = self.store, self.sync_store
        if scenario == "remember":
            return lambda: self.writes.remember(memory_text(m), scope=Scope(agent_id=agent_of(m)))
        if scenario == "sync_remember":
            return lambda: self.sync_writes.remember(
                memory_text(m), scope=Scope(agent_id=agent_of(m))
            )
        if scenario == "remember_many":
            items = [
                MemoryInput(content=memory_text(j % self.loaded), scope=Scope(agent_id=agent_of(j)))
                for j in range(m, m + 100)
            ]
            return lambda: self.writes.remember_many(items)
        if scenario == "recall":
            return lambda: store.recall(text, k=K, reinforce=False)
        if scenario == "recall_nolex":
            unmatched = unmatched_query_text(q)
            return lambda: store.recall(unmatched, k=K, reinforce=False)
        if scenario == "sync_recall":
            return lambda: sync.recall(text, k=K, reinforce=False)
        if scenario == "recall_reinforce":
            return lambda: store.recall(text, k=K, reinforce=True)
        if scenario == "recall_scoped":
            scope = Scope(agent_id=agent_of(q))
            return lambda: store.recall(text, k=K, scope=scope, reinforce=False)
        if scenario == "recall_session":
            scope = Scope(session_id=SESSION)
            return lambda: store.recall(text, k=K, scope=scope, reinforce=False)
        if scenario == "recall_by_vector":
            vector = self.data.queries[q]
            return lambda: store.recall_by_vector(vector, k=K, reinforce=False)
        params = llm_params(text)
        if scenario == "llm_check":
            return lambda: self.llm.check(params)
        if scenario == "llm_store":
            return lambda: self.llm.store(params, f"answer {i}")
        if scenario == "tool_check":
            return lambda: self.tool.check("search", {"q": text})
        if scenario == "tool_store":
            return lambda: self.tool.store("search", {"q": text}, f"result {i}")
        raise KeyError(scenario)

    # -- floor -----------------------------------------------------------------
    #
    # The physical floor of each call: the least a client must send for it. A recall's
    # floor is one bare unfiltered ``FT.SEARCH ... KNN 8 RETURN 4``; a remember's one
    # bare HSET of the same record; remember_many's a pipeline of the same 100 HSETs;
    # forget_by_scope's a pipeline of 1,000 bare DELs of the same keys; a cache check's
    # one GET, a store's one SET.

    _KNN8_FIELDS = (L.F_CONTENT, L.F_IMPORTANCE, L.F_CREATED, L.DISTANCE_ALIAS)

    def _knn8_args(self, q: int) -> list[Any]:
        blob = self.data.queries[q].astype("<f4").tobytes()
        return [
            "FT.SEARCH", self.keys.index, f"*=>[KNN {K} @{L.F_VECTOR} $vec AS {L.DISTANCE_ALIAS}]",
            "PARAMS", "2", "vec", blob,
            "RETURN", str(len(self._KNN8_FIELDS)), *self._KNN8_FIELDS,
            "LIMIT", "0", str(K), "DIALECT", "2",
        ]  # fmt: skip

    def _hset(self, keys: L.Keys, m: int) -> tuple[Any, ...]:
        memory = NewMemory(
            id=uuid.uuid4().hex, content=memory_text(m), vector=self.data.vectors[m], importance=0.5,
            tags=(), scope=Scope(agent_id=agent_of(m)), durability="shared", created_at=1,
            expires_at=None,
        )  # fmt: skip
        return ("HSET", keys.memory(memory.id), *record_fields(memory, self.lexical_form))

    def floor_op(self, scenario: str, i: int) -> AsyncOp | SyncOp:
        q = i % len(self.data.queries)
        m = i % max(1, self.loaded)
        client = self.client
        if scenario.startswith("recall") or scenario == "sync_recall":
            args = self._knn8_args(q)
            if scenario == "sync_recall":
                return lambda: self.sync_client.execute_command(*args)
            return lambda: client.execute_command(*args)
        if scenario in ("remember", "sync_remember"):
            hset = self._hset(self.wkeys, m)
            if scenario == "sync_remember":
                return lambda: self.sync_client.execute_command(*hset)
            return lambda: client.execute_command(*hset)
        if scenario == "remember_many":
            commands = [self._hset(self.wkeys, j % self.loaded) for j in range(m, m + 100)]
            return lambda: _pipeline(client, commands)
        if scenario in ("llm_check", "tool_check"):
            key = self.cache_keys[i]
            return lambda: client.execute_command("GET", key)
        if scenario in ("llm_store", "tool_store"):
            key, value = self.cache_values[i]
            return lambda: client.execute_command("SET", key, value)
        raise KeyError(scenario)

    # -- per-round preparation (untimed) -------------------------------------------

    cache_keys: dict[int, str]
    cache_values: dict[int, tuple[str, str]]

    async def prepare(self, scenario: str, indexes: range) -> None:
        """Cache entries to hit (check) or the key and JSON the library would write (store)."""
        if scenario in ("llm_check", "tool_check"):
            self.cache_keys = {}
            for i in indexes:
                text = query_text(i % len(self.data.queries))
                if scenario == "llm_check":
                    self.cache_keys[i] = await self.llm.store(llm_params(text), f"answer {i}")
                else:
                    self.cache_keys[i] = await self.tool.store("search", {"q": text}, f"result {i}")
        if scenario in ("llm_store", "tool_store"):
            self.cache_values = {}
            for i in indexes:
                text = query_text(i % len(self.data.queries))
                if scenario == "llm_store":
                    key = await self.llm.store(llm_params(text), f"answer {i}")
                else:
                    key = await self.tool.store("search", {"q": text}, f"result {i}")
                raw = await self.client.get(key)
                self.cache_values[i] = (key, raw.decode())

    async def forget_setup(self, thread: str) -> None:
        scope = Scope(thread_id=thread)
        await self.store.remember_many(
            [MemoryInput(content=memory_text(i % self.loaded), scope=scope) for i in range(1000)]
        )

    async def library_forget(self, thread: str) -> tuple[int, float]:
        began = time.perf_counter()
        removed = await self.store.forget_by_scope(Scope(thread_id=thread))
        return removed, time.perf_counter() - began

    async def floor_forget(self, thread: str) -> tuple[int, float]:
        """1,000 bare DELs of the thread's keys in one pipeline (the keys are read and the
        bookkeeping cleaned up untimed)."""
        index = self.keys.thread_index(self.ns, encode_value(thread))
        keys = [self.keys.memory(x.decode()) for x in await self.client.zrange(index, 0, -1)]
        began = time.perf_counter()
        replies = await _pipeline(self.client, [("DEL", key) for key in keys])
        took = time.perf_counter() - began
        await self.store.forget_by_scope(Scope(thread_id=thread))
        return sum(int(r) for r in replies), took


async def load_memories(
    store: MemoryStore,
    embed: LookupEmbedder,
    data: Dataset,
    start: int,
    stop: int,
    *,
    chunk: int = 1000,
) -> None:
    """Store the dataset's memories ``start:stop`` (each agent keeps every eighth), their
    vectors taught to the lookup embedder first."""
    embed.add([memory_text(i) for i in range(start, stop)], data.vectors[start:stop])
    for lo in range(start, stop, chunk):
        hi = min(lo + chunk, stop)
        await store.remember_many(
            [
                MemoryInput(content=memory_text(i), scope=Scope(agent_id=agent_of(i)))
                for i in range(lo, hi)
            ]
        )


def llm_params(text: str) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}


async def _pipeline(client: Any, commands: list[Any]) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return list(await pipe.execute())


def _sync_pipeline(client: Any, commands: list[Any]) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return list(pipe.execute())
