"""The built-in HTTP embedder behind a store and the facade, on a real server: its
failures reach the caller as EmbedderError, and its ``dim`` (a probe request when not
declared) is never read on the event loop."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
import valkey
import valkey.asyncio

from agent_memory import AgentMemory, MemoryStore, SyncMemoryStore
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import EmbedderError, OperationTimeoutError, ServerUnavailableError
from tests.conftest import _Servers
from tests.embedders.test_openai_compat import DIM, Behaviour, FakeServer, make

pytestmark = pytest.mark.integration


@pytest.fixture
def http(module_server: FakeServer) -> FakeServer:
    module_server.requests.clear()
    module_server.behaviour = Behaviour()
    return module_server


@pytest.fixture(scope="module")
def module_server() -> Any:
    srv = FakeServer()
    yield srv
    srv.close()


def _name() -> str:
    return f"emb{uuid.uuid4().hex[:10]}"


class DimReaders:
    """An embedder whose ``dim`` property notes the threads that read it."""

    id = "dim-readers"

    def __init__(self) -> None:
        self.readers: list[int] = []
        self._embed = HashingEmbedder(dim=DIM)

    @property
    def dim(self) -> int:
        self.readers.append(threading.get_ident())
        return DIM

    def __call__(self, text: str) -> list[float]:
        return self._embed(text)


@pytest.mark.parametrize(
    ("status", "cause"), [(503, ServerUnavailableError), (504, OperationTimeoutError)]
)
async def test_http_failures_reach_the_caller_as_embedder_errors(
    servers: _Servers, http: FakeServer, status: int, cause: type[Exception]
) -> None:
    client = valkey.asyncio.Valkey.from_url(servers.get("valkey-redisearch").url)
    probing = MemoryStore(client, _name(), make(http))  # no dim: ensure_index probes
    declared = MemoryStore(client, _name(), make(http, dim=DIM))
    try:
        await declared.ensure_index()
        http.behaviour.status = status
        for call in (probing.ensure_index, lambda: declared.remember("a fact")):
            with pytest.raises(EmbedderError) as info:
                await call()
            assert isinstance(info.value.__cause__, cause)
        http.behaviour = Behaviour()
        assert (await probing.ensure_index()).dim == DIM
        assert (await declared.list()).items == ()  # nothing written by the failed call
    finally:
        await client.aclose()


async def test_the_async_store_reads_dim_off_the_event_loop(servers: _Servers) -> None:
    loop_thread = threading.get_ident()
    embed = DimReaders()
    client = valkey.asyncio.Valkey.from_url(servers.get("valkey-redisearch").url)
    try:
        await MemoryStore(client, _name(), embed).ensure_index()
    finally:
        await client.aclose()
    assert embed.readers and loop_thread not in embed.readers


def test_the_blocking_store_reads_dim_in_its_own_thread(servers: _Servers) -> None:
    embed = DimReaders()
    client = valkey.Valkey.from_url(servers.get("valkey-redisearch").url)
    try:
        assert SyncMemoryStore(client, _name(), embed).ensure_index().dim == DIM
    finally:
        client.close()
    assert embed.readers == [threading.get_ident()]


async def test_the_facade_reads_no_dim_until_its_store_asks_off_the_loop(
    servers: _Servers, http: FakeServer
) -> None:
    loop_thread = threading.get_ident()
    embed = DimReaders()
    client = valkey.asyncio.Valkey.from_url(servers.get("valkey-redisearch").url)
    agent = AgentMemory(client, _name(), embed, embedding_cache=True, discovery=False)
    # an HTTP embedder without a declared width: its probe is sent at initialize
    http_agent = AgentMemory(client, _name(), make(http), embedding_cache=True, discovery=False)
    try:
        assert embed.readers == [] and http.requests == []  # constructing sends nothing
        await agent.initialize()
        assert embed.readers and loop_thread not in embed.readers
        await http_agent.initialize()
        assert len(http.requests) == 1
        await http_agent.memory.remember("a fact")
        assert len(http.requests) == 2
    finally:
        await agent.close()
        await http_agent.close()
        await client.aclose()
