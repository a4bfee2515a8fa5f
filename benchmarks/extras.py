"""Measurements outside the library/floor/peer grid: the portable backend and MiniLM."""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

import valkey.asyncio as valkey_asyncio

from agent_memory import MemoryStore
from benchmarks.data import Dataset, LookupEmbedder, memory_text, query_text
from benchmarks.stats import percentile
from benchmarks.systems import THRESHOLD, K, load_memories


async def portable_recall(
    url: str, data: Dataset, sizes: list[int], ops: int
) -> list[dict[str, Any]]:
    """Recall latency of the portable backend (plain Valkey, client-side exact KNN).

    The first recall after a load pulls the new vectors into the client mirror; it is
    reported apart (``cold_ms``). The warm figures are later recalls.
    """
    embed = LookupEmbedder()
    embed.add([query_text(i) for i in range(len(data.queries))], data.queries)
    client = valkey_asyncio.Valkey.from_url(url)
    store = MemoryStore(
        client, "portable", embed.aembed, embed_many=embed.aembed_many, default_threshold=THRESHOLD
    )
    status = await store.ensure_index()
    results = []
    loaded = 0
    try:
        for size in sizes:
            began = time.perf_counter()
            await load_memories(store, embed, data, loaded, size)
            load_s = time.perf_counter() - began
            loaded = size
            began = time.perf_counter()
            await store.recall(query_text(0), k=K, reinforce=False)
            cold = time.perf_counter() - began
            latencies = []
            for i in range(ops):
                began = time.perf_counter()
                await store.recall(query_text(i + 1), k=K, reinforce=False)
                latencies.append(time.perf_counter() - began)
            results.append(
                {
                    "size": size,
                    "backend": status.backend,
                    "load_per_s": (size - (results[-1]["size"] if results else 0)) / load_s,
                    "cold_ms": cold * 1000,
                    "p50_ms": statistics.median(latencies) * 1000,
                    "p95_ms": percentile(latencies, 95) * 1000,
                    "p99_ms": percentile(latencies, 99) * 1000,
                    "n": ops,
                }
            )
    finally:
        await store.close()
        await client.aclose()
    return results


def minilm_speed(quick: bool) -> dict[str, Any]:
    """Load time, single-sentence latency and batched throughput of MiniLMEmbedder."""
    try:
        from agent_memory.embedders import MiniLMEmbedder
    except ImportError as exc:
        return {"error": f"MiniLMEmbedder unavailable: {exc}"}
    sentences = [memory_text(i) for i in range(64 if quick else 512)]
    began = time.perf_counter()
    try:
        model = MiniLMEmbedder()
        model.load()
        model.embed("warm up")
    except Exception as exc:  # noqa: BLE001 - reported, not fatal: the extra may be missing
        return {"error": f"MiniLMEmbedder failed: {type(exc).__name__}: {exc}"}
    load = time.perf_counter() - began
    single = []
    for text in sentences[: 20 if quick else 100]:
        began = time.perf_counter()
        model.embed(text)
        single.append(time.perf_counter() - began)
    began = time.perf_counter()
    model.embed_many(sentences)
    batch = time.perf_counter() - began
    return {
        "model": repr(model),
        "load_s": load,
        "single_p50_ms": statistics.median(single) * 1000,
        "single_p95_ms": percentile(single, 95) * 1000,
        "batched_per_s": len(sentences) / batch,
        "batch_size": len(sentences),
    }


async def portable_lag(url: str, data: Dataset, size: int, *, rounds: int) -> dict[str, Any]:
    """The event-loop lag scenario on the portable backend (plain Valkey) over ``size``
    memories, once the client mirror holds them (see :func:`event_loop_lag`)."""
    embed = LookupEmbedder()
    client = valkey_asyncio.Valkey.from_url(url)
    store = MemoryStore(client, "portable_lag", embed.aembed, embed_many=embed.aembed_many)
    try:
        await store.ensure_index()
        await load_memories(store, embed, data, 0, size)
    finally:
        await store.close()
        await client.aclose()
    out = await event_loop_lag(url, data, rounds=rounds, name="portable_lag")
    out["size"] = size
    return out


async def _ticker(done: Any, lags: list[float]) -> None:
    """Sleep 1 ms at a time until ``done`` is set, recording how late each wake-up is."""
    import asyncio

    while not done.is_set():
        began = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(max(0.0, time.perf_counter() - began - 0.001))


async def event_loop_lag(
    url: str, data: Dataset, *, rounds: int = 20, name: str = "bench"
) -> dict[str, Any]:
    """How long the event loop stalls while 8 recalls run with a blocking 20 ms embedder.

    A ticker task sleeps 1 ms at a time and records how late it wakes up. The library
    runs the blocking embedder in a worker thread; the comparison case hands the store
    an ``async`` embedder that blocks inside (what a sync embedder called on the loop
    does), so the ticker shows what the thread saves. One recall before the ticking
    warms the store (the portable backend's mirror loads then).
    """
    import asyncio

    def blocking(text: str) -> Any:
        time.sleep(0.020)
        return lookup(text)

    async def blocking_on_loop(text: str) -> Any:
        time.sleep(0.020)
        return lookup(text)

    lookup = LookupEmbedder()
    lookup.add([query_text(i) for i in range(len(data.queries))], data.queries)
    client = valkey_asyncio.Valkey.from_url(url)
    out: dict[str, Any] = {"embedder_ms": 20, "concurrent_recalls": 8}
    pauses = _GcPauses()
    gc.callbacks.append(pauses)
    try:
        for label, embed in (("library", blocking), ("on_the_loop", blocking_on_loop)):
            store = MemoryStore(client, name, embed, default_threshold=THRESHOLD)
            await store.ensure_index()
            await store.recall(query_text(0), k=K, reinforce=False)
            lags: list[float] = []
            pauses.full.clear()
            for r in range(rounds):
                done = asyncio.Event()
                tick = asyncio.create_task(_ticker(done, lags))
                await asyncio.gather(
                    *(store.recall(query_text(r * 8 + i), k=K, reinforce=False) for i in range(8))
                )
                done.set()
                await tick
            out[label] = {
                "p50_ms": statistics.median(lags) * 1000,
                "p99_ms": percentile(lags, 99) * 1000,
                "max_ms": max(lags) * 1000,
                "ticks": len(lags),
                # Full collections of the benchmark process stall the loop too; reported
                # apart, they are the interpreter's, not the library's.
                "full_gc": len(pauses.full),
                "full_gc_max_ms": max(pauses.full, default=0.0) * 1000,
            }
    finally:
        gc.callbacks.remove(pauses)
        await client.aclose()
    return out


class _GcPauses:
    """``gc.callbacks`` hook recording how long each full (generation 2) collection took."""

    def __init__(self) -> None:
        self.full: list[float] = []
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.full.append(time.perf_counter() - self._began)
