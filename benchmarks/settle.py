"""What settling script writes costs ``remember`` on valkey-search 1.0.x.

    AGENT_MEMORY_VALKEY_SEARCH_MODULES=../shared/servers \\
        .venv/bin/python -m benchmarks.settle --server valkey-search-1.0 --size 2000

valkey-search 1.0.x indexes a key written by a script only at the next search of the
index, and holds back any plain write of that key meanwhile; the store therefore ends
each memory-writing batch there with a search that matches nothing
(``agent_memory/store/ops/settle.py``), which makes the server index the write before
answering. This loads ``--size`` memories, then alternates rounds of ``remember`` with
the settling search and without it (the same code with the search left out, as on every
other server), ``--rounds`` x ``--calls``, and prints each round's p50 and the median of
the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import uuid
from pathlib import Path

from agent_memory import MemoryStore
from agent_memory.core.effects import Command
from agent_memory.store.ops import settle
from benchmarks.data import Dataset, LookupEmbedder, memory_text
from benchmarks.servers import _test_servers
from benchmarks.stats import p50_of_calls


async def measure(url: str, size: int, rounds: int, calls: int) -> dict[str, list[float]]:
    data = Dataset.build(size + rounds * calls * 2, queries=1)
    embed = LookupEmbedder()
    texts = [memory_text(i) for i in range(len(data.vectors))]
    embed.add(texts, data.vectors)
    store = MemoryStore.from_url(url, name=f"settle{uuid.uuid4().hex[:8]}", embed=embed.aembed)
    for start in range(0, size, 1000):
        await store.remember_many([{"content": t} for t in texts[start : min(size, start + 1000)]])
    settling = settle.settle_commands
    fresh = iter(texts[size:])
    out: dict[str, list[float]] = {"with the settling search": [], "without it": []}
    try:
        for _ in range(rounds):
            for label, samples in out.items():
                settle.settle_commands = settling if label.startswith("with ") else _nothing
                samples.append(await p50_of_calls(lambda: store.remember(next(fresh)), calls))
    finally:
        settle.settle_commands = settling
        await store.close()
    return out


def _nothing(ctx: object) -> list[Command]:
    return []


async def run(server: str, size: int, rounds: int, calls: int) -> None:
    process = _test_servers().start(server, Path(tempfile.mkdtemp(prefix="agent-memory-settle-")))
    try:
        results = await measure(process.url, size, rounds, calls)
    finally:
        process.stop()
    print(f"{server}, remember with {size:,} memories stored, p50 ms per round:")
    for label, values in results.items():
        rounded = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {label}: {rounded} (median {statistics.median(values):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="valkey-search-1.0")
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=150)
    args = parser.parse_args()
    asyncio.run(run(args.server, args.size, args.rounds, args.calls))


if __name__ == "__main__":
    main()
