"""On a real server with a search module: a component named under a store's index
prefix, or a store named under a session store's threads, no longer puts a hash in the
store's index (each such name is refused at construction; before, the store's stats
counted the other component's hash as a foreign document of its index)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis

from agent_memory import SyncMemoryStore
from agent_memory.cache import SyncSessionStore
from agent_memory.errors import InvalidInputError
from tests.support import TableEmbedder


@pytest.fixture
def client(search_server: Any) -> Any:
    client = redis.Redis.from_url(search_server.url)
    yield client
    client.close()


def _build(make: Any) -> Any:
    """The component ``make`` builds, or ``None`` when it refuses its name."""
    try:
        return make()
    except InvalidInputError as exc:
        assert exc.field == "name"
        return None


def test_an_adapter_named_under_a_stores_index_prefix_stays_out_of_its_index(
    client: Any,
) -> None:
    from llama_index.core.llms import ChatMessage

    from agent_memory.integrations.llama_index import AgentMemoryChatStore

    name = f"a-{uuid.uuid4().hex}"
    store = SyncMemoryStore(client, name, TableEmbedder())
    store.remember("the sky is blue")
    chats = _build(lambda: AgentMemoryChatStore(client=client, name=f"{name}:mem"))
    if chats is not None:  # the code before: its chats and counters lay under a:mem:
        chats.add_message("k", ChatMessage(role="user", content="hi"))
    stats = store.stats()
    assert (stats.items, stats.foreign) == (1, 0)


def test_a_store_named_under_a_session_stores_threads_indexes_none_of_them(
    client: Any,
) -> None:
    name = f"x-{uuid.uuid4().hex}"
    store = _build(lambda: SyncMemoryStore(client, f"{name}:session", TableEmbedder()))
    if store is None:
        return  # refused: no index prefix x:session:mem: exists to take in a thread
    store.remember("the grass is green")
    # thread "mem:t" of SessionStore(x) is the hash x:session:mem:t
    SyncSessionStore(client, name).set("mem:t", "content", "the grass is green")
    stats = store.stats()
    assert (stats.items, stats.foreign) == (1, 0)
