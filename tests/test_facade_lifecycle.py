"""AgentMemory's resources: a refused construction releases what it started, closing
never blocks the event loop, and stats() sends every tier's buffered counters."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from agent_memory import AgentMemory, InvalidInputError, SyncAgentMemory, SyncMemoryStore
from agent_memory.core import client_factory
from agent_memory.embedded.server import EmbeddedServer
from agent_memory.facade import discovery
from tests.conftest import ServerInfo, _Servers
from tests.support import TableEmbedder


@pytest.fixture
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey-redisearch")


def _name() -> str:
    return f"a{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize("cls", [AgentMemory, SyncAgentMemory])
def test_embedded_refuses_a_bad_name_before_starting_a_server(cls: Any, tmp_path: Path) -> None:
    for name in ("", "has space", 5, "{tag}"):
        with pytest.raises(InvalidInputError) as info:
            cls.embedded(str(tmp_path), name=name, embed=TableEmbedder())
        assert info.value.field == "name"
    assert not (tmp_path / "server.log").exists()  # no server was started


@pytest.mark.parametrize("cls", [AgentMemory, SyncAgentMemory])
def test_embedded_stops_its_server_when_the_constructor_refuses(cls: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as info:
        cls.embedded(str(tmp_path), name="ok", embed=TableEmbedder(), memory={"bogus": 1})
    assert info.value.field == "memory"
    log = (tmp_path / "server.log").read_text()
    assert "Ready to accept connections" in log  # one was started...
    assert not (tmp_path / "server.json").exists()  # ...and stopped again
    assert "ready to exit" in log.lower()


async def test_close_stops_the_embedded_server_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = AgentMemory.embedded(str(tmp_path), name="off", embed=TableEmbedder(), discovery=False)
    embedded = agent._server
    assert embedded is not None and embedded.process is not None
    process = embedded.process.process
    stopped_in: list[threading.Thread] = []

    real_stop = EmbeddedServer.stop

    def stop(self: EmbeddedServer) -> None:
        stopped_in.append(threading.current_thread())
        real_stop(self)

    monkeypatch.setattr(EmbeddedServer, "stop", stop)
    await agent.close()
    assert stopped_in and stopped_in[0] is not threading.main_thread()
    assert process.poll() is not None and not (tmp_path / "server.json").exists()


@pytest.mark.parametrize("interval", [30.5, 59, 60, 3600])
@pytest.mark.parametrize("cls", [AgentMemory, SyncAgentMemory])
def test_a_heartbeat_interval_the_heartbeat_would_not_survive_is_refused(
    cls: Any, interval: float
) -> None:
    import valkey
    import valkey.asyncio

    client = valkey.Valkey() if cls is SyncAgentMemory else valkey.asyncio.Valkey()
    with pytest.raises(InvalidInputError, match="at most 30") as info:
        cls(client, "n", TableEmbedder(), heartbeat_interval=interval)
    assert info.value.field == "heartbeat_interval"
    assert discovery.MAX_HEARTBEAT_INTERVAL * 2 == discovery.HEARTBEAT_TTL_SECONDS
    cls(client, "n", TableEmbedder(), heartbeat_interval=30)


async def test_stats_sends_every_tiers_buffered_counters(server: ServerInfo) -> None:
    agent = AgentMemory.from_url(
        server.url, name=_name(), embed=TableEmbedder(), discovery=False, embedding_cache=True
    )
    try:
        # Counters a tier buffers (on a cluster) until its next round trip.
        agent.tool._core.tier.buffer.add({"tool:search:hits": 2})
        agent.session._core.tier.buffer.add({"session:writes": 3})
        assert agent.embeddings is not None
        agent.embeddings._core.tier.buffer.add({"embedding:hits": 4})
        stats = (await agent.stats()).cache
        assert [(t.tool, t.hits) for t in stats.tools] == [("search", 2)]
        assert stats.session_writes == 3 and stats.embedding_hits == 4
    finally:
        await agent.close()


@pytest.mark.parametrize(
    ("module", "make"),
    [
        ("agent_memory.facade.sync_agent",
         lambda url, **kw: SyncAgentMemory.from_url(url, name="ok", embed=TableEmbedder(),
                                                    memory={"bogus": 1}, **kw)),
        ("agent_memory.store.sync_store",
         lambda url, **kw: SyncMemoryStore.from_url(url, name="has space", embed=TableEmbedder(),
                                                    **kw)),
    ],
    ids=["SyncAgentMemory", "SyncMemoryStore"],
)  # fmt: skip
def test_from_url_closes_the_client_it_made_when_refused(
    server: ServerInfo, monkeypatch: pytest.MonkeyPatch, module: str, make: Any
) -> None:
    made: list[Any] = []  # keeps the client alive: only close() may drop its connection
    real = client_factory.client_from_url

    def spy(url: str, **kwargs: Any) -> Any:
        made.append(real(url, **kwargs))
        return made[-1]

    monkeypatch.setattr(f"{module}.client_from_url", spy)
    probe = f"probe-{uuid.uuid4().hex[:8]}"
    raw = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        with pytest.raises(InvalidInputError):
            make(server.url, client_single_connection_client=True, client_client_name=probe)
        assert len(made) == 1
        assert probe not in raw.execute_command("CLIENT", "LIST")
    finally:
        raw.close()
