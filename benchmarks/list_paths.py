"""What a page of ``list`` costs as a namespace grows, against a filter-only query.

    AGENT_MEMORY_VALKEY_SEARCH_MODULES=../shared/servers \\
        .venv/bin/python -m benchmarks.list_paths --server valkey-search-1.2 --sizes 10000,100000

Stores ``size`` memories in one namespace (8 agents), then times (p50 of ``--calls``):

* ``list(limit=20)`` of the namespace and of one agent, as the library does it (the
  registry or the agent's index, then the filter fields of every member, sorted in the
  client: exact, and it reads every member);
* the same pages as one filter-only ``FT.SEARCH ... SORTBY created_at DESC LIMIT 0 20``
  (valkey-search 1.2 and RediSearch; 1.0.2 has no filter-only query), which returns the
  page and the total without the client reading every member;
* a count alone: the filter-only query with ``LIMIT 0 0`` against the registry's
  ``ZCOUNT`` (what ``stats`` sends).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from pathlib import Path
from typing import Any

from agent_memory import MemoryStore, Scope
from benchmarks.data import Dataset, LookupEmbedder, memory_text
from benchmarks.servers import _test_servers
from benchmarks.stats import p50_of_calls


async def measure(url: str, size: int, calls: int) -> dict[str, float]:
    data = Dataset.build(size, queries=1)
    embed = LookupEmbedder()
    texts = [memory_text(i) for i in range(size)]
    embed.add(texts, data.vectors)
    name = f"list{uuid.uuid4().hex[:8]}"
    store = MemoryStore.from_url(url, name=name, embed=embed.aembed)
    for start in range(0, size, 1000):
        chunk = range(start, min(size, start + 1000))
        items = [{"content": texts[i], "scope": Scope(namespace="ns", agent_id=f"a{i % 8}")}
                 for i in chunk]  # fmt: skip
        await store.remember_many(items)
    client = store.client
    index = f"{name}:mem:idx"

    async def page(query: str) -> Any:
        return await client.execute_command(
            "FT.SEARCH", index, query, "SORTBY", "created_at", "DESC",
            "LIMIT", "0", "20", "RETURN", "1", "created_at", "DIALECT", "2",
        )  # fmt: skip

    namespace, agent = Scope(namespace="ns"), Scope(namespace="ns", agent_id="a3")
    out = {
        "list(limit=20), namespace": await p50_of_calls(
            lambda: store.list(limit=20, scope=namespace), calls
        ),
        "list(limit=20), one agent": await p50_of_calls(
            lambda: store.list(limit=20, scope=agent), calls
        ),
    }
    try:
        reply = await page("@namespace:{ns}")
        assert int(reply[0]) == size, reply[0]
        out["filter-only page, namespace"] = await p50_of_calls(
            lambda: page("@namespace:{ns}"), calls
        )
        out["filter-only page, one agent"] = await p50_of_calls(
            lambda: page("@namespace:{ns} @agentId:{a3}"), calls
        )
        out["filter-only count (LIMIT 0 0), namespace"] = await p50_of_calls(
            lambda: client.execute_command(
                "FT.SEARCH", index, "@namespace:{ns}", "LIMIT", "0", "0", "DIALECT", "2"
            ),
            calls,
        )
        out["registry count (ZCOUNT), namespace"] = await p50_of_calls(
            lambda: client.execute_command("ZCOUNT", f"{name}:__mem_reg:ns", "-inf", "+inf"),
            calls,
        )
    except Exception as exc:  # noqa: BLE001 - a server without filter-only queries
        print(f"  filter-only query refused: {exc}")
    await store.close()
    return out


async def run(server: str, sizes: list[int], calls: int) -> None:
    process = _test_servers().start(server, Path(tempfile.mkdtemp(prefix="agent-memory-list-")))
    try:
        for size in sizes:
            results = await measure(process.url, size, calls)
            print(f"{server}, {size:,} memories in one namespace, p50 ms:")
            for label, value in results.items():
                print(f"  {label}: {value:.2f}")
    finally:
        process.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="valkey-search-1.2")
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    asyncio.run(run(args.server, [int(s) for s in args.sizes.split(",")], args.calls))


if __name__ == "__main__":
    main()
