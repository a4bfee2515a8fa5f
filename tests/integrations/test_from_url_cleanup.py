"""Every ``from_url`` of the package that refuses its arguments leaves no client open.

Each case passes a URL of a real server and one bad argument; the client factory is
wrapped to record the clients it builds and whether they were closed. A blocking client
must be closed (it may hold a connection already: ``single_connection_client``, used
here, connects at construction); an asyncio client opens none before its first awaited
command, so there is nothing to close, and the argument checks that can run before it
exists do.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_memory.core import client_factory
from agent_memory.core.clients import is_async_client
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import InvalidInputError
from tests.conftest import _Servers

pytestmark = pytest.mark.integration


@dataclass
class Made:
    """The clients the factory built, and the blocking ones closed since."""

    clients: list[Any] = field(default_factory=list)
    closed: list[Any] = field(default_factory=list)

    def open_blocking(self) -> list[Any]:
        return [c for c in self.clients if not is_async_client(c) and c not in self.closed]


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[Made]:
    record = Made()
    original = client_factory.client_from_url

    def recording(url: str, *, asyncio: bool, **options: Any) -> Any:
        client = original(url, asyncio=asyncio, **options)
        record.clients.append(client)
        if not asyncio:
            close = client.close

            def closing() -> None:
                record.closed.append(client)
                close()

            client.close = closing
        return client

    # every module that imported the factory by name
    for name, module in list(sys.modules.items()):
        if name.startswith("agent_memory") and getattr(module, "client_from_url", None) is original:
            monkeypatch.setattr(module, "client_from_url", recording)
    yield record
    for client in record.open_blocking():
        client.close()


def _embed() -> HashingEmbedder:
    return HashingEmbedder(dim=8)


def _cases() -> list[tuple[str, bool, Callable[[str], Any]]]:
    """(id, whether the refusal comes before any client is built, the call)."""
    from agent_memory.integrations.checkpoint import AgentMemorySaver
    from agent_memory.integrations.langchain import AgentMemoryByteStore, AgentMemoryCache
    from agent_memory.integrations.langgraph import AgentMemoryStore
    from agent_memory.integrations.llama_index import AgentMemoryChatStore
    from agent_memory.integrations.llama_index.db_chat_store import AgentMemoryDBChatStore
    from agent_memory.integrations.openai_agents import AgentMemorySession
    from agent_memory.integrations.pydantic_ai import (
        AgentMemoryConversationStore,
        AgentMemoryMessageHistory,
    )

    one: dict[str, Any] = {"single_connection_client": True}
    junk: dict[str, Any] = {"registry": "junk", **one}
    return [
        ("openai-session-name", True, lambda u: AgentMemorySession.from_url(u, "s", name="", **one)),
        ("openai-session-registry", False, lambda u: AgentMemorySession.from_url(u, "s", name="n", **junk)),
        ("checkpoint-saver-name", False, lambda u: AgentMemorySaver.from_url(u, name="", **one)),
        ("checkpoint-saver-registry", False, lambda u: AgentMemorySaver.from_url(u, **junk)),
        ("byte-store-name", False, lambda u: AgentMemoryByteStore.from_url(u, name="", **one)),
        ("byte-store-namespace", False,
         lambda u: AgentMemoryByteStore.from_url(u, name="n", namespace="", **one)),
        ("llm-cache-name", False, lambda u: AgentMemoryCache.from_url(u, name="", **one)),
        ("llm-cache-ttl", False, lambda u: AgentMemoryCache.from_url(u, name="n", ttl=-1, **one)),
        ("langgraph-store-ttl", False, lambda u: AgentMemoryStore.from_url(
            u, name="n", embed=_embed(), ttl={"default_ttl": -1}, client_single_connection_client=True)),
        ("llama-chat-store-registry", False, lambda u: AgentMemoryChatStore.from_url(u, name="n", **junk)),
        ("llama-db-chat-store-registry", False,
         lambda u: AgentMemoryDBChatStore.from_url(u, name="n", **junk)),
        ("pydantic-history-registry", False,
         lambda u: AgentMemoryMessageHistory.from_url(u, "c", name="n", blocking=True, **junk)),
        ("pydantic-conversation-store-registry", False,
         lambda u: AgentMemoryConversationStore.from_url(u, name="n", **junk)),
    ]  # fmt: skip


CASES = _cases()


@pytest.mark.parametrize(("first", "call"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_refused_from_url_leaves_no_client_open(
    first: bool, call: Callable[[str], Any], made: Made, servers: _Servers
) -> None:
    """The blocking clients a refused ``from_url`` built are closed (they stayed open,
    holding their connection); an argument it can check first builds no client."""
    with pytest.raises(InvalidInputError):
        call(servers.get("valkey").url)
    assert made.open_blocking() == []
    if first:
        assert made.clients == []
    for client in made.clients:
        if is_async_client(client):  # never connected: nothing to release
            pool = client.connection_pool
            assert not pool._in_use_connections and not pool._available_connections
