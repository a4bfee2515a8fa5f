"""What settling script writes costs ``remember`` on valkey-search 1.0.x.

    AGENT_MEMORY_VALKEY_SEARCH_MODULES=../shared/servers \\
        .venv/bin/python -m benchmarks.settle --server valkey-search-1.0 --size 2000

valkey-search 1.0.x indexes a key written by a script only at the next search of the
index, and holds back any plain write of that key meanwhile; the store therefore ends
each memory-writing batch there with a search that matches nothing
(``agent_memory/store/ops/settle.py``), which makes the server index the write before
answering. This loads ``--size`` memories, then alternates rounds of ``remember`` with
the settling search and without it (the same code with the search left out, as on every
other server), ``--rounds`` x ``--calls``, and prints each round's p50 and mean and their
medians over the rounds. The mean matters here: without the search the server still
indexes every write, on the main thread, when its queue fills (every few writes) or at
the next search, and the command that arrives then waits for it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from agent_memory import MemoryStore
from agent_memory.core.effects import Command
from agent_memory.store.ops import settle
from benchmarks.data import Dataset, LookupEmbedder, memory_text
from benchmarks.servers import _test_servers
from benchmarks.stats import percentile


async def measure(
    url: str, size: int, rounds: int, calls: int
) -> dict[str, list[tuple[float, float]]]:
    data = Dataset.build(size + rounds * calls * 2, queries=1)
    embed = LookupEmbedder()
    texts = [memory_text(i) for i in range(len(data.vectors))]
    embed.add(texts, data.vectors)
    store = MemoryStore.from_url(url, name=f"settle{uuid.uuid4().hex[:8]}", embed=embed.aembed)
    for start in range(0, size, 1000):
        await store.remember_many([{"content": t} for t in texts[start : min(size, start + 1000)]])
    settling = settle.settle_commands
    fresh = iter(texts[size:])
    out: dict[str, list[tuple[float, float]]] = {"with the settling search": [], "without it": []}
    try:
        for _ in range(rounds):
            for label, samples in out.items():
                settle.settle_commands = settling if label.startswith("with ") else _nothing
                times = []
                for _ in range(calls):
                    began = time.perf_counter()
                    await store.remember(next(fresh))
                    times.append((time.perf_counter() - began) * 1000)
                samples.append((percentile(times, 50), statistics.fmean(times)))
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
    print(f"{server}, remember with {size:,} memories stored, ms per round (p50 / mean):")
    for label, values in results.items():
        rounded = ", ".join(f"{p:.2f} / {m:.2f}" for p, m in values)
        p50 = statistics.median(p for p, _ in values)
        mean = statistics.median(m for _, m in values)
        print(f"  {label}: {rounded} (medians {p50:.2f} / {mean:.2f})")


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
