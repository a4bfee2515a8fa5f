"""What ``wait_replicas=1`` costs a write: ``remember`` with and without ``WAIT``.

Starts a primary and one replica on loopback (``scripts/test_servers.py``), then times
``remember`` on two stores of the same name, one with ``wait_replicas=1``, alternating
in rounds so both see the same machine. Loopback replication is the best case: over a
network each waited write adds at least the replica's round trip.

    python -m benchmarks.replication [--kind valkey-redisearch] [--rounds 10] [--per-round 50]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

import valkey

from agent_memory import MemoryStore
from benchmarks.data import Dataset, LookupEmbedder, memory_text
from benchmarks.servers import _test_servers
from benchmarks.stats import percentile


async def measure(kind: str, rounds: int, per_round: int) -> dict[str, dict[str, float]]:
    servers = _test_servers()
    root = Path(tempfile.mkdtemp(prefix="agent-memory-replication-"))
    primary = servers.start(kind, root / "primary")
    replica = servers.start(
        kind, root / "replica", extra_args=("--replicaof", "127.0.0.1", str(primary.port))
    )
    try:
        probe = valkey.Valkey.from_url(replica.url, decode_responses=True)
        while probe.info("replication").get("master_link_status") != "up":
            time.sleep(0.05)
        probe.close()
        name = f"repl{uuid.uuid4().hex[:8]}"
        count = rounds * per_round * 2
        embed = LookupEmbedder()
        texts_all = [memory_text(i) for i in range(count)]
        embed.add(texts_all, Dataset.build(count, queries=1).vectors)
        plain = MemoryStore.from_url(primary.url, name=name, embed=embed.aembed)
        waited = MemoryStore.from_url(primary.url, name=name, embed=embed.aembed, wait_replicas=1)
        await plain.ensure_index()
        await waited.ensure_index()
        samples: dict[str, list[float]] = {"wait_replicas=0": [], "wait_replicas=1": []}
        texts = iter(texts_all)
        for r in range(rounds):
            order = [("wait_replicas=0", plain), ("wait_replicas=1", waited)]
            for label, store in order if r % 2 == 0 else reversed(order):
                for _ in range(per_round):
                    began = time.perf_counter()
                    await store.remember(next(texts))
                    samples[label].append((time.perf_counter() - began) * 1000)
        await plain.close()
        await waited.close()
    finally:
        replica.stop()
        primary.stop()
    return {
        label: {"p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99), "n": len(v)}
        for label, v in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replication")
    parser.add_argument("--kind", default="valkey-redisearch")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=50)
    args = parser.parse_args()
    result = asyncio.run(measure(args.kind, args.rounds, args.per_round))
    for label, row in result.items():
        print(
            f"{args.kind} {label}: p50 {row['p50_ms']:.3f} ms, p99 {row['p99_ms']:.3f} ms (n={row['n']:.0f})"
        )


if __name__ == "__main__":
    main()
