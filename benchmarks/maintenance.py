"""What ``stats`` and ``prune`` cost, and how that cost depends on the server's other keys.

Starts a server (``scripts/test_servers.py``), stores ``--size`` memories spread over
``--namespaces`` namespaces, then times ``stats()`` and ``prune()`` (every namespace)
twice: on a server holding only the store, and after ``--unrelated`` keys that are not
the store's were added (another application's, or other stores'). A call that walks the
keyspace with SCAN pays for every key on the server; one that reads the store's own
namespace set does not.

    python -m benchmarks.maintenance [--kind valkey] [--size 2000] [--namespaces 20]
        [--unrelated 100000] [--calls 20]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from pathlib import Path

from agent_memory import MemoryStore, Scope
from benchmarks.data import Dataset, LookupEmbedder, memory_text
from benchmarks.servers import _test_servers
from benchmarks.stats import p50_of_calls


async def measure(
    kind: str, size: int, namespaces: int, unrelated: int, calls: int
) -> dict[str, dict[str, float]]:
    server = _test_servers().start(kind, Path(tempfile.mkdtemp(prefix="agent-memory-maint-")))
    try:
        data = Dataset.build(size, queries=1)
        embed = LookupEmbedder()
        texts = [memory_text(i) for i in range(size)]
        embed.add(texts, data.vectors)
        store = MemoryStore.from_url(server.url, name=f"maint{uuid.uuid4().hex[:8]}",
                                     embed=embed.aembed)  # fmt: skip
        for start in range(0, size, 500):
            chunk = range(start, min(size, start + 500))
            items = [{"content": texts[i], "scope": Scope(namespace=f"ns{i % namespaces}")}
                     for i in chunk]  # fmt: skip
            await store.remember_many(items)
        out: dict[str, dict[str, float]] = {}
        out["store only"] = {
            "stats": await p50_of_calls(store.stats, calls),
            "prune": await p50_of_calls(store.prune, max(3, calls // 4)),
        }
        client = store.client
        for start in range(0, unrelated, 10_000):
            pipe = client.pipeline(transaction=False)
            for i in range(start, min(unrelated, start + 10_000)):
                pipe.set(f"elsewhere:{i}", "x")
            await pipe.execute()
        label = f"beside {unrelated:,} unrelated keys"
        out[label] = {
            "stats": await p50_of_calls(store.stats, calls),
            "prune": await p50_of_calls(store.prune, max(3, calls // 4)),
        }
        assert (await store.stats()).items == size
        await store.close()
    finally:
        server.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", default="valkey")
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--unrelated", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    results = asyncio.run(
        measure(args.kind, args.size, args.namespaces, args.unrelated, args.calls)
    )
    print(f"{args.kind}, {args.size:,} memories in {args.namespaces} namespaces, p50 ms:")
    for label, timings in results.items():
        cells = ", ".join(f"{name} {value:.2f}" for name, value in timings.items())
        print(f"  {label}: {cells}")


if __name__ == "__main__":
    main()
