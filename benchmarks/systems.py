"""The library and the floor (a bare client sending the same commands), per scenario.

Every operation is a zero-argument callable built before timing starts, so a timed
call covers only the work under test. Floor commands are built with the library's own
pure helpers (same K, filter, RETURN fields, same HSET fields and bookkeeping), ahead
of time: the floor is client + server only.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import valkey
import valkey.asyncio as valkey_asyncio

from agent_memory import LlmCache, MemoryInput, MemoryStore, Scope, SyncMemoryStore, ToolCache
from agent_memory.search.encoding import encode_value, namespace_token, session_token
from agent_memory.search.query import decimal, knn_search_args
from agent_memory.store import layout as L
from agent_memory.store import lexical, scripts
from agent_memory.store.filters import scope_filter
from agent_memory.store.ops.recall import candidate_count
from agent_memory.store.records import NewMemory, record_fields
from benchmarks.data import Dataset, LookupEmbedder, agent_of, memory_text, query_text

K = 8
THRESHOLD = 1.0
SESSION = "s1"
AsyncOp = Callable[[], Awaitable[Any]]
SyncOp = Callable[[], Any]


# The fields a recall candidate returns (agent_memory.store.ops.recall.rank_fields).
_RANK_FIELDS = (L.F_ID, L.F_CONTENT, L.F_IMPORTANCE, L.F_CREATED, L.F_ACCESSED, L.F_EXPIRES)


class Bench:
    """Library stores, floor clients and the data of one server."""

    def __init__(self, url: str, dataset: Dataset, name: str = "bench") -> None:
        self.data = dataset
        self.embed = LookupEmbedder()
        self.embed.add([query_text(i) for i in range(len(dataset.queries))], dataset.queries)
        self.client = valkey_asyncio.Valkey.from_url(url, max_connections=64)
        self.sync_client = valkey.Valkey.from_url(url, max_connections=64)
        opts: dict[str, Any] = {"embed_many": self.embed.many, "default_threshold": THRESHOLD}
        self.store = MemoryStore(self.client, name, self.embed, **opts)
        self.writes = MemoryStore(self.client, name + "_w", self.embed, **opts)
        self.sync_store = SyncMemoryStore(self.sync_client, name, self.embed, **opts)
        self.sync_writes = SyncMemoryStore(self.sync_client, name + "_w", self.embed, **opts)
        self.llm = LlmCache(self.client, name + "_cache")
        self.tool = ToolCache(self.client, name + "_cache")
        self.keys = L.Keys(name)
        self.wkeys = L.Keys(name + "_w")
        self.ns = namespace_token(None)
        self.loaded = 0

    async def setup(self) -> dict[str, Any]:
        status = await self.store.ensure_index()
        await self.writes.ensure_index()
        self.sync_store.ensure_index()
        self.sync_writes.ensure_index()
        return {"backend": status.backend, "dialect": str(status.dialect)}

    async def load(self, start: int, stop: int, chunk: int = 1000) -> None:
        texts = [memory_text(i) for i in range(start, stop)]
        self.embed.add(texts, self.data.vectors[start:stop])
        for lo in range(start, stop, chunk):
            hi = min(lo + chunk, stop)
            await self.store.remember_many(
                [
                    MemoryInput(content=memory_text(i), scope=Scope(agent_id=agent_of(i)))
                    for i in range(lo, hi)
                ]
            )
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

    def _search_args(self, q: int, scope: Scope | None, session: str | None) -> list[Any]:
        """The semantic search of a recall, as the library sends it."""
        flt = scope_filter(scope, (), session=session)
        blob = self.data.queries[q].astype("<f4").tobytes()
        return [
            "FT.SEARCH",
            *knn_search_args(self.keys.index, flt, candidate_count(K), blob, _RANK_FIELDS),
        ]

    def _retrieval(self, q: int, scope: Scope | None, session: str | None) -> list[list[Any]]:
        """A text recall's retrieval round trip as the library sends it: the semantic and
        lexical searches and the read of the term statistics."""
        flt = scope_filter(scope, (), session=session)
        terms = sorted(set(lexical.analyze(query_text(q))))
        vector = lexical.query_vector(terms)
        if vector is None or not terms:
            return [self._search_args(q, scope, None if session is None else session)]
        lex = vector.astype("<f4").tobytes()
        return [
            self._search_args(q, scope, session),
            [
                "FT.SEARCH",
                *knn_search_args(
                    self.keys.index, flt, candidate_count(K), lex, _RANK_FIELDS, lexical=True
                ),
            ],
            ["HMGET", self.keys.term_stats(flt.namespace), *lexical.stats_fields(terms)],
        ]

    def _write_commands(self, keys: L.Keys, m: int) -> list[tuple[Any, ...]]:
        memory = NewMemory(
            id=uuid.uuid4().hex, content=memory_text(m), vector=self.data.vectors[m], importance=0.5,
            tags=(), scope=Scope(agent_id=agent_of(m)), durability="shared", created_at=1,
            expires_at=None,
        )  # fmt: skip
        return [
            ("HSET", keys.memory(memory.id), *record_fields(memory)),
            ("ZADD", keys.registry(self.ns), "+inf", memory.id),
            ("ZADD", keys.scope_bucket(memory.bucket), "1", memory.id),
        ]

    def floor_op(self, scenario: str, i: int) -> AsyncOp | SyncOp:
        q = i % len(self.data.queries)
        m = i % max(1, self.loaded)
        client = self.client
        if scenario in (
            "recall",
            "recall_by_vector",
            "recall_scoped",
            "recall_reinforce",
            "sync_recall",
        ):
            scope = Scope(agent_id=agent_of(q)) if scenario == "recall_scoped" else None
            if scenario == "recall_by_vector":
                args = self._search_args(q, scope, None)
                return lambda: client.execute_command(*args)
            retrieval = self._retrieval(q, scope, None)
            if scenario == "sync_recall":
                return lambda: _sync_pipeline(self.sync_client, retrieval)
            if scenario == "recall_reinforce":
                return lambda: self._search_and_reinforce(retrieval)
            return lambda: _pipeline(client, retrieval)
        if scenario == "recall_session":
            both = [
                *self._retrieval(q, None, None),
                *(
                    c
                    for c in self._retrieval(q, Scope(session_id=SESSION), encode_value(SESSION))
                    if c[0] == "FT.SEARCH"
                ),
            ]
            return lambda: _pipeline(client, both)
        if scenario in ("remember", "sync_remember"):
            commands = [
                *self._write_commands(self.wkeys, m),
                ("HINCRBY", self.wkeys.stats, "remembers", "1"),
            ]
            if scenario == "sync_remember":
                return lambda: _sync_pipeline(self.sync_client, commands)
            return lambda: _pipeline(client, commands)
        if scenario == "remember_many":
            commands = [
                c
                for j in range(m, m + 100)
                for c in self._write_commands(self.wkeys, j % self.loaded)
            ]
            commands.append(("HINCRBY", self.wkeys.stats, "remembers", "100"))
            return lambda: _pipeline(client, commands)
        if scenario in ("llm_check", "tool_check"):
            key = self.cache_keys[i]
            return lambda: client.execute_command("GET", key)
        if scenario in ("llm_store", "tool_store"):
            key, value = self.cache_values[i]
            return lambda: client.execute_command("SET", key, value)
        raise KeyError(scenario)

    async def _search_and_reinforce(self, retrieval: list[list[Any]]) -> None:
        replies = await _pipeline(self.client, retrieval)
        keys = replies[0][1::2][:K]
        now = "1700000000000"
        commands: list[tuple[Any, ...]] = [("HINCRBY", self.keys.stats, "recalls", "1")]
        commands += [("EVAL", scripts.REINFORCE, "1", key, now) for key in keys]
        await _pipeline(self.client, commands)

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

    async def library_forget(self, thread: str) -> int:
        return await self.store.forget_by_scope(Scope(thread_id=thread))

    async def floor_forget(self, thread: str) -> int:
        token = encode_value(thread)
        query = f"(@{L.F_NAMESPACE}:{{{self.ns}}} @{L.F_THREAD}:{{{token}}})"
        reply = await self.client.execute_command(
            "FT.SEARCH", self.keys.index, query, "NOCONTENT", "LIMIT", "0", "1000", "DIALECT", "2"
        )
        keys = [k.decode() for k in reply[1:]]
        bucket = self.keys.scope_bucket(L.bucket_digest(self.ns, "", token, session_token(None)))
        ids = [self.keys.id_of(k) for k in keys]
        commands: list[tuple[Any, ...]] = [
            ("DEL", *keys),
            ("ZREM", self.keys.registry(self.ns), *ids),
        ]
        commands.append(("ZREM", bucket, *ids))
        commands.append(("HINCRBY", self.keys.stats, "forgets", decimal(len(ids))))
        await _pipeline(self.client, commands)
        return len(keys)


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
