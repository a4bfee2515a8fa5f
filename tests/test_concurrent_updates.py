"""Concurrent writers of one memory's text (real server)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import valkey.asyncio

from agent_memory import MemoryStore
from agent_memory.embedders import HashingEmbedder


async def test_concurrent_text_updates_of_one_memory_all_land(plain_server: Any) -> None:
    """Twelve writers change one memory's text at once. Each attempt that another's
    text beat retries, after a random pause: without it they retried in step and kept
    beating each other, and some gave up after 8 attempts (about 1 in 4 with 16)."""
    clients = [valkey.asyncio.Valkey.from_url(plain_server.url) for _ in range(12)]
    name = f"t{uuid.uuid4().hex[:12]}"
    stores = [MemoryStore(c, name, HashingEmbedder(64)) for c in clients]
    try:
        memory_id = await stores[0].remember("the first text")
        for store in stores[1:]:
            await store.get(memory_id)  # every store ready: the updates start together
        texts = [f"text number {i} of the race" for i in range(len(stores))]
        done = await asyncio.gather(
            *(s.update(memory_id, content=t) for s, t in zip(stores, texts, strict=True)),
            return_exceptions=True,
        )
        assert [d for d in done if isinstance(d, BaseException)] == []
        final = await stores[0].get(memory_id)
        assert final is not None and final.content in texts
    finally:
        for client in clients:
            await client.aclose()
