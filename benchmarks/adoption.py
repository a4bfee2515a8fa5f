"""What the periodic foreign-memory check (``adopt_interval``) costs when nothing foreign
was written: recall with the check before every call against recall without it.

Starts Valkey with a search module (``scripts/test_servers.py``), stores ``--size``
memories, then alternates rounds of ``recall_by_vector`` on two stores of the same name:
one with ``adopt_interval=None``, one whose interval is so short that every call checks
first. The difference is the price of one check; with the default interval (5 s) a store
pays it once per interval, whatever its recall rate.

    python -m benchmarks.adoption [--kind valkey-redisearch] [--size 10000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from agent_memory import MemoryStore
from benchmarks.data import Dataset, LookupEmbedder, memory_text
from benchmarks.servers import _test_servers
from benchmarks.stats import percentile


async def measure(kind: str, size: int, rounds: int, per_round: int) -> dict[str, float]:
    server = _test_servers().start(kind, Path(tempfile.mkdtemp(prefix="agent-memory-adopt-")))
    try:
        data = Dataset.build(size, queries=rounds * per_round * 2)
        embed = LookupEmbedder()
        texts = [memory_text(i) for i in range(size)]
        embed.add(texts, data.vectors)
        name = f"adopt{uuid.uuid4().hex[:8]}"
        quiet = MemoryStore.from_url(server.url, name=name, embed=embed.aembed,
                                     adopt_interval=None)  # fmt: skip
        for start in range(0, size, 500):
            await quiet.remember_many([{"content": t} for t in texts[start : start + 500]])
        checking = MemoryStore.from_url(server.url, name=name, embed=embed.aembed,
                                        adopt_interval=1e-9)  # fmt: skip
        await checking.ensure_index()
        samples: dict[str, list[float]] = {"no check": [], "check before every call": []}
        queries = iter(data.queries)
        for r in range(rounds):
            order = [("no check", quiet), ("check before every call", checking)]
            for label, store in order if r % 2 == 0 else reversed(order):
                for _ in range(per_round):
                    vector = next(queries)
                    began = time.perf_counter()
                    await store.recall_by_vector(vector, k=8, reinforce=False)
                    samples[label].append((time.perf_counter() - began) * 1000)
        await quiet.close()
        await checking.close()
    finally:
        server.stop()
    return {label: percentile(values, 50) for label, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.adoption")
    parser.add_argument("--kind", default="valkey-redisearch")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=50)
    args = parser.parse_args()
    result = asyncio.run(measure(args.kind, args.size, args.rounds, args.per_round))
    for label, p50 in result.items():
        print(f"{args.kind} {args.size:,} memories, recall_by_vector p50, {label}: {p50:.3f} ms")


if __name__ == "__main__":
    main()
