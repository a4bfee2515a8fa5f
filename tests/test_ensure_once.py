"""Operations started together on a fresh store run the lazy ``ensure_index`` once."""

from __future__ import annotations

import asyncio
import uuid

import valkey.asyncio

from agent_memory import MemoryStore
from tests.conftest import ServerInfo
from tests.support import TableEmbedder


async def test_concurrent_first_recalls_detect_the_server_once(plain_server: ServerInfo) -> None:
    table = TableEmbedder()
    probes: list[str] = []

    async def embed(text: str) -> list[float]:
        if text == "agent-memory dimension probe":
            probes.append(text)
            await asyncio.sleep(0.01)  # the first call may load a model: others arrive
        return list(table(text))

    client = valkey.asyncio.Valkey.from_url(plain_server.url)
    store = MemoryStore(client, f"ens{uuid.uuid4().hex[:8]}", embed, default_threshold=0.5)
    try:
        results = await asyncio.gather(*(store.recall("anything") for _ in range(8)))
        assert [len(r) for r in results] == [0] * 8
        assert len(probes) == 1  # one recall detected the server; the others waited
        backend = store._ctx.backend
        await store.recall("anything")
        assert store._ctx.backend is backend
    finally:
        await store.close()
        await client.aclose()
