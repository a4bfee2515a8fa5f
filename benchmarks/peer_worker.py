"""Peer worker: drives ``betterdb-agent-memory`` / ``betterdb-agent-cache`` for the harness.

Runs under the peer virtual environment (``benchmarks/.peer-venv``), never imports
``agent_memory``. Reads one JSON request per line on stdin, answers one JSON line on
stdout. The harness alternates rounds between this process and its own, so both see
the same server, data and noise.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ["BETTERDB_TELEMETRY"] = "false"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import valkey.asyncio as valkey_asyncio
from betterdb_agent_cache import AgentCache
from betterdb_agent_cache.types import (
    AgentCacheOptions,
    AnalyticsOptions,
    ConfigRefreshOptions,
    DiscoveryOptions,
)
from betterdb_agent_memory import MemoryStore
from data import agent_of, memory_text, query_text

THRESHOLD = 1.0
K = 8


class Worker:
    def __init__(self, request: dict[str, Any]) -> None:
        self.client = valkey_asyncio.Valkey.from_url(request["url"], max_connections=512)
        self.vectors = np.load(request["vectors"])
        self.queries = np.load(request["queries"])
        self.index = {query_text(i): ("q", i) for i in range(len(self.queries))}
        self.extra: dict[str, np.ndarray] = {}
        self.store = MemoryStore(
            client=self.client, name=request["name"], embed_fn=self.embed, analytics=False
        )
        self.writes = MemoryStore(
            client=self.client, name=request["name"] + "_w", embed_fn=self.embed, analytics=False
        )
        self.cache = AgentCache(
            AgentCacheOptions(
                client=self.client,
                name=request["name"] + "_cache",
                analytics=AnalyticsOptions(disabled=True),
                config_refresh=ConfigRefreshOptions(enabled=False),
                discovery=DiscoveryOptions(enabled=False),
            )
        )
        self.loaded = 0

    async def embed(self, text: str) -> list[float]:
        where = self.index.get(text)
        if where is None:
            return [1.0] + [0.0] * (self.vectors.shape[1] - 1)
        kind, i = where
        row = self.queries[i] if kind == "q" else self.vectors[i]
        return row.tolist()  # type: ignore[no-any-return]

    def register(self, start: int, stop: int) -> None:
        for i in range(start, stop):
            self.index[memory_text(i)] = ("m", i)

    async def setup(self) -> dict[str, Any]:
        await self.store.ensure_index()
        await self.writes.ensure_index()
        return {"ok": True}

    async def load(self, start: int, stop: int, concurrency: int) -> dict[str, Any]:
        self.register(start, stop)
        before = int((await self.client.info("memory"))["used_memory"])
        began = time.perf_counter()
        await _bounded(
            [
                (lambda i=i: self.store.remember(memory_text(i), agent_id=agent_of(i)))
                for i in range(start, stop)
            ],
            concurrency,
        )
        seconds = time.perf_counter() - began
        after = int((await self.client.info("memory"))["used_memory"])
        self.loaded = stop
        return {"seconds": seconds, "memory_delta": after - before, "count": stop - start}

    def op(self, scenario: str, i: int) -> Callable[[], Awaitable[Any]] | None:
        q = i % len(self.queries)
        text = query_text(q)
        m = i % max(1, self.loaded)
        if scenario == "remember":
            return lambda: self.writes.remember(memory_text(m), agent_id=agent_of(m))
        if scenario == "remember_many":

            async def batch() -> None:
                await asyncio.gather(
                    *(
                        self.writes.remember(memory_text(j), agent_id=agent_of(j))
                        for j in range(m, m + 100)
                    )
                )

            return batch
        if scenario == "recall":
            return lambda: self.store.recall(text, k=K, threshold=THRESHOLD, reinforce=False)
        if scenario == "recall_reinforce":
            return lambda: self.store.recall(text, k=K, threshold=THRESHOLD, reinforce=True)
        if scenario == "recall_scoped":
            return lambda: self.store.recall(
                text, k=K, threshold=THRESHOLD, reinforce=False, agent_id=agent_of(q)
            )
        if scenario == "recall_by_vector":
            vector = self.queries[q].tolist()
            return lambda: self.store.recall_by_vector(
                vector, k=K, threshold=THRESHOLD, reinforce=False
            )
        params = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
        if scenario == "llm_check":
            return lambda: self.cache.llm.check(params)
        if scenario == "llm_store":
            return lambda: self.cache.llm.store(params, f"answer {i}")
        if scenario == "tool_check":
            return lambda: self.cache.tool.check("search", {"q": text})
        if scenario == "tool_store":
            return lambda: self.cache.tool.store("search", {"q": text}, f"result {i}")
        return None

    async def prepare(self, scenario: str, n: int, round_no: int) -> None:
        """Untimed setup of a round (cache hits need entries first)."""
        if scenario in ("llm_check", "tool_check"):
            store = "llm_store" if scenario == "llm_check" else "tool_store"
            for i in range(n):
                op = self.op(store, round_no * n + i)
                assert op is not None
                await op()

    async def run(self, scenario: str, n: int, round_no: int, conc: int) -> dict[str, Any]:
        if scenario == "forget_by_scope":
            return await self.forget_round(round_no)
        if self.op(scenario, 0) is None:
            return {"unsupported": True}
        await self.prepare(scenario, n, round_no)
        ops = [self.op(scenario, round_no * n + i) for i in range(n)]
        latencies: list[float] = []

        async def timed(fn: Callable[[], Awaitable[Any]]) -> None:
            began = time.perf_counter()
            await fn()
            latencies.append(time.perf_counter() - began)

        began = time.perf_counter()
        await _bounded([lambda fn=fn: timed(fn) for fn in ops if fn is not None], conc)
        return {"lat": latencies, "wall": time.perf_counter() - began}

    async def forget_round(self, round_no: int) -> dict[str, Any]:
        thread = f"forget{round_no}"
        await _bounded(
            [
                (lambda i=i: self.store.remember(memory_text(i), thread_id=thread))
                for i in range(1000)
            ],
            8,
        )
        began = time.perf_counter()
        removed = await self.store.forget_by_scope(thread_id=thread)
        took = time.perf_counter() - began
        return {"lat": [took], "wall": took, "removed": removed}


async def _bounded(factories: list[Callable[[], Awaitable[Any]]], limit: int) -> None:
    """Run coroutine factories with at most ``limit`` in flight (1 = sequential)."""
    if limit <= 1:
        for factory in factories:
            await factory()
        return
    queue = list(reversed(factories))

    async def caller() -> None:
        while queue:
            await queue.pop()()

    await asyncio.gather(*(caller() for _ in range(limit)))


async def serve() -> None:
    worker: Worker | None = None
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        request = json.loads(line)
        action = request["op"]
        reply: dict[str, Any]
        try:
            if action == "setup":
                worker = Worker(request)
                reply = await worker.setup()
            elif action == "quit":
                break
            else:
                assert worker is not None
                if action == "load":
                    reply = await worker.load(request["start"], request["stop"], request["conc"])
                else:
                    reply = await worker.run(
                        request["scenario"], request["n"], request["round"], request["conc"]
                    )
        except Exception as exc:  # noqa: BLE001 - reported to the harness
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve())
