"""Remember, recall and complete with agent-memory: runs as is on a fresh install.

    pip install -e '.[embedded,local]'
    python examples/quickstart.py                  # a private embedded server in ./agent-memory-data

To use a server of your own instead (Valkey or Redis, with or without a search module):

    agent-memory serve --port 6379                 # or any valkey-server / redis-server
    AGENT_MEMORY_URL=redis://127.0.0.1:6379 python examples/quickstart.py
"""

from __future__ import annotations

import asyncio
import os

from agent_memory import AgentMemory, Scope
from agent_memory.embedders import choose_embedder


async def main() -> None:
    embed, _ = choose_embedder("auto")  # MiniLM with the local extra, else hashing
    url = os.environ.get("AGENT_MEMORY_URL")
    memory = (
        AgentMemory.from_url(url, name="quickstart", embed=embed)
        if url  # the embedded server starts in a worker thread, off the event loop
        else AgentMemory.embedded("./agent-memory-data", name="quickstart", embed=embed)
    )
    async with memory as agent:  # creates the index, announces itself; closes everything
        scope = Scope(namespace="acme", agent_id="assistant")
        await agent.memory.remember(
            "User prefers dark mode", importance=0.8, tags=["prefs"], scope=scope
        )
        await agent.memory.remember("Deploys happen on Tuesdays", scope=scope)
        hits = await agent.memory.recall("what theme does the user like?", scope=scope, k=5)
        for hit in hits:
            print(f"{hit.score:.3f}  distance {hit.distance:.3f}  {hit.item.content}")
        await agent.memory.complete(hits.selection_id, score=0.9)  # how well that recall served
        request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        cached = await agent.llm.check(request)
        print("LLM cache hit:", cached.hit)


if __name__ == "__main__":
    asyncio.run(main())
