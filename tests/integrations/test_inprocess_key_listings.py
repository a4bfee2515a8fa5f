"""Key listings of the adapters on the in-process clients: their SCAN asks for raw
keys (so that a key another writer made that is not UTF-8 is skipped, not fatal), which
the in-process clients answer as a server client would."""

from __future__ import annotations

import asyncio

from llama_index.core.base.llms.types import ChatMessage

from agent_memory.backends.inprocess import AsyncInProcessClient, InProcessClient, Keyspace
from agent_memory.integrations.langchain import AgentMemoryByteStore
from agent_memory.integrations.llama_index import AgentMemoryChatStore


def test_byte_store_lists_its_keys_on_the_in_process_clients() -> None:
    keyspace = Keyspace()
    store = AgentMemoryByteStore(
        client=InProcessClient(keyspace), async_client=AsyncInProcessClient(keyspace), name="b"
    )
    store.mset([("k1", b"v"), ("k2", b"w")])
    assert sorted(store.yield_keys()) == ["k1", "k2"]

    async def listed() -> list[str]:
        return sorted([key async for key in store.ayield_keys()])

    assert asyncio.run(listed()) == ["k1", "k2"]


def test_llama_index_chat_store_lists_its_keys_on_the_in_process_clients() -> None:
    keyspace = Keyspace()
    store = AgentMemoryChatStore(
        name="c", client=InProcessClient(keyspace), async_client=AsyncInProcessClient(keyspace)
    )
    store.add_message("üser", ChatMessage(role="user", content="hi"))
    assert store.get_keys() == ["üser"]

    assert asyncio.run(store.aget_keys()) == ["üser"]
