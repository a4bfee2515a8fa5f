"""Measurements outside the library/floor/peer grid: the portable backend and MiniLM."""

from __future__ import annotations

import statistics
import time
from typing import Any

import valkey.asyncio as valkey_asyncio

from agent_memory import MemoryInput, MemoryStore, Scope
from benchmarks.data import Dataset, LookupEmbedder, agent_of, memory_text, query_text
from benchmarks.stats import percentile
from benchmarks.systems import THRESHOLD, K


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
            texts = [memory_text(i) for i in range(loaded, size)]
            embed.add(texts, data.vectors[loaded:size])
            began = time.perf_counter()
            for lo in range(loaded, size, 1000):
                hi = min(lo + 1000, size)
                await store.remember_many(
                    [
                        MemoryInput(content=memory_text(i), scope=Scope(agent_id=agent_of(i)))
                        for i in range(lo, hi)
                    ]
                )
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
