"""Recall and remember on a 3-primary cluster with the search coordinator, against one
server of the same kind.

    AGENT_MEMORY_VALKEY_SEARCH_MODULES=../shared/servers \\
        .venv/bin/python -m benchmarks.cluster [--kind valkey-search-1.2] [--size 3000]

Starts a standalone server and a 3-primary cluster (``scripts/test_servers.py``,
``scripts/test_cluster.py``; valkey-search loaded with ``--use-coordinator`` on the
cluster), stores the same ``--size`` memories (the benchmark's texts: words recur across
memories, so the hybrid recall's lexical channel does its real work) in each, then
alternates rounds on the two: a default recall (hybrid, reinforce on), a
``recall_by_vector`` (reinforce off), a ``remember``, and the floor, one bare
``FT.SEARCH ... KNN 8`` (on the cluster: sent to one primary, which fans it out). Every
node, the coordinator's gRPC threads and the client share this machine's cores: a
cluster of three machines would not pay that.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

from agent_memory import MemoryStore
from benchmarks.data import Dataset, LookupEmbedder, memory_text, query_text
from benchmarks.servers import _test_servers
from benchmarks.stats import percentile

ROUNDS_DEFAULT = 6
PER_ROUND = 40


def _test_cluster() -> Any:
    _test_servers()  # puts scripts/ on the path
    import test_cluster

    return test_cluster


async def _store(url: str, cluster: bool, embed: LookupEmbedder) -> MemoryStore:
    if cluster:
        import valkey.asyncio

        client = valkey.asyncio.ValkeyCluster.from_url(url)
        return MemoryStore(client, f"clb{uuid.uuid4().hex[:8]}", embed.aembed)
    return MemoryStore.from_url(url, name=f"clb{uuid.uuid4().hex[:8]}", embed=embed.aembed)


async def _load(store: MemoryStore, texts: list[str]) -> None:
    for start in range(0, len(texts), 500):
        await store.remember_many([{"content": t} for t in texts[start : start + 500]])


def _knn8(store: MemoryStore, vector: np.ndarray) -> Callable[[], Awaitable[Any]]:
    blob = np.asarray(vector, dtype=np.float32).tobytes()
    index = f"{store.name}:mem:idx"
    client = store.client

    async def call() -> Any:
        args = ("FT.SEARCH", index, "*=>[KNN 8 @vector $v]", "PARAMS", "2", "v", blob,
                "RETURN", "1", "content", "DIALECT", "2")  # fmt: skip
        if hasattr(client, "get_primaries"):
            return await client.execute_command(*args, target_nodes=client.get_random_node())
        return await client.execute_command(*args)

    return call


def _operations(
    store: MemoryStore, question: str, vector: np.ndarray, text: str
) -> dict[str, Callable[[], Awaitable[Any]]]:
    """One call of each timed operation, bound to its arguments."""
    return {
        "default recall": lambda: store.recall(question, k=8),
        "recall_by_vector": lambda: store.recall_by_vector(vector, k=8, reinforce=False),
        "remember": lambda: store.remember(text),
        "bare KNN 8": _knn8(store, vector),
    }


async def measure(kind: str, size: int, rounds: int) -> dict[str, dict[str, float]]:
    root = Path(tempfile.mkdtemp(prefix="agent-memory-cluster-"))
    server = _test_servers().start(kind, root / "standalone")
    cluster = _test_cluster().start(root / "cluster", kind=kind)
    stores: dict[str, MemoryStore] = {}
    try:
        queries = rounds * PER_ROUND * 2
        data = Dataset.build(size, queries=queries)
        embed = LookupEmbedder()
        texts = [memory_text(i) for i in range(size)]
        embed.add(texts, data.vectors)
        asked = [query_text(i) for i in range(queries)]
        embed.add(asked, data.queries)
        new_texts = [f"{memory_text(size + i)} (new {i})" for i in range(queries)]
        embed.add(new_texts, Dataset.build(queries, queries=1).vectors)
        stores = {
            "standalone": await _store(server.url, False, embed),
            "cluster": await _store(cluster.url, True, embed),
        }
        for store in stores.values():
            await _load(store, texts)
        samples: dict[str, dict[str, list[float]]] = {t: {} for t in stores}
        position = 0
        for r in range(rounds):
            order = list(stores) if r % 2 == 0 else list(reversed(stores))
            for target in order:
                store = stores[target]
                for i in range(PER_ROUND):
                    n = position + i
                    calls = _operations(store, asked[n], data.queries[n], new_texts[n])
                    for label, call in calls.items():
                        began = time.perf_counter()
                        await call()
                        spent = (time.perf_counter() - began) * 1000
                        samples[target].setdefault(label, []).append(spent)
            position += PER_ROUND
    finally:
        for target, store in stores.items():
            await store.close()
            if target == "cluster":
                await store.client.aclose()  # passed in: the store does not own it
        cluster.stop()
        server.stop()
    return {
        target: {label: percentile(values, 50) for label, values in by_label.items()}
        for target, by_label in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", default="valkey-search-1.2")
    parser.add_argument("--size", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=ROUNDS_DEFAULT)
    args = parser.parse_args()
    results = asyncio.run(measure(args.kind, args.size, args.rounds))
    labels = list(next(iter(results.values())))
    print(f"{args.kind}, {args.size:,} memories, p50 ms ({args.rounds} alternating rounds)")
    print("| | " + " | ".join(results) + " | cluster / standalone |")
    print("|---|" + "---|" * (len(results) + 1))
    for label in labels:
        cells = [results[target][label] for target in results]
        ratio = results["cluster"][label] / results["standalone"][label]
        print(f"| {label} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
