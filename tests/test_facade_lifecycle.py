"""AgentMemory's resources: a refused construction releases what it started, closing
never blocks the event loop, and stats() sends every tier's buffered counters."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio

from agent_memory import (
    AgentMemory,
    InvalidInputError,
    Scope,
    ServerUnavailableError,
    StoreClosedError,
    SyncAgentMemory,
    SyncMemoryStore,
)
from agent_memory.core import client_factory
from agent_memory.core.effects import Sleep
from agent_memory.embedded.server import EmbeddedServer
from agent_memory.facade import agent as agent_module
from agent_memory.facade import discovery
from tests.conftest import ServerInfo, _Servers
from tests.support import TableEmbedder


@pytest.fixture
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey-redisearch")


def _name() -> str:
    return f"a{uuid.uuid4().hex[:10]}"


def _identified() -> TableEmbedder:
    """An embedder with the ``id`` the embedding cache needs."""
    embed = TableEmbedder()
    embed.id = "table-v1"  # type: ignore[attr-defined]
    return embed


@pytest.mark.parametrize("cls", [AgentMemory, SyncAgentMemory])
def test_embedded_refuses_a_bad_name_before_starting_a_server(cls: Any, tmp_path: Path) -> None:
    for name in ("", "has space", 5, "{tag}"):
        with pytest.raises(InvalidInputError) as info:
            cls.embedded(str(tmp_path), name=name, embed=TableEmbedder())
        assert info.value.field == "name"
    assert not (tmp_path / "server.log").exists()  # no server was started


def _assert_started_and_stopped(folder: Path) -> None:
    log = (folder / "server.log").read_text()
    assert "Ready to accept connections" in log  # one was started...
    assert not (folder / "server.json").exists()  # ...and stopped again
    assert "ready to exit" in log.lower()


def test_embedded_stops_its_server_when_the_constructor_refuses(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as info:
        SyncAgentMemory.embedded(
            str(tmp_path), name="ok", embed=TableEmbedder(), memory={"bogus": 1}
        )
    assert info.value.field == "memory"
    _assert_started_and_stopped(tmp_path)


async def test_async_embedded_stops_its_server_when_the_constructor_refuses(
    tmp_path: Path,
) -> None:
    opening = AgentMemory.embedded(
        str(tmp_path), name="ok", embed=TableEmbedder(), memory={"bogus": 1}
    )
    assert not (tmp_path / "server.log").exists()  # nothing starts before the await
    with pytest.raises(InvalidInputError) as info:
        await opening
    assert info.value.field == "memory"
    _assert_started_and_stopped(tmp_path)


def _recording_starts(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    started_in: list[threading.Thread] = []
    real_open = agent_module.open_embedded

    def open_embedded(path: str) -> EmbeddedServer:
        started_in.append(threading.current_thread())
        return real_open(path)

    monkeypatch.setattr(agent_module, "open_embedded", open_embedded)
    return started_in


async def test_async_embedded_starts_its_server_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started_in = _recording_starts(monkeypatch)
    async with AgentMemory.embedded(str(tmp_path), name="emb", embed=TableEmbedder()) as agent:
        assert agent._initialized  # the context manager initializes what it opened
        await agent.memory.remember("kept across the opening", scope=Scope(namespace="n"))
        assert (await agent.memory.stats()).items == 1
    assert started_in and started_in[0] is not threading.current_thread()
    assert not (tmp_path / "server.json").exists()  # closing stopped the server it started


async def test_a_cancelled_embedded_opening_closes_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = threading.Event()
    release = threading.Event()
    real_open = agent_module.open_embedded

    def slow_open(path: str) -> EmbeddedServer:
        started.set()
        release.wait(10)
        return real_open(path)

    monkeypatch.setattr(agent_module, "open_embedded", slow_open)
    opening = AgentMemory.embedded(str(tmp_path), name="cancel", embed=TableEmbedder())

    async def opened() -> AgentMemory:
        return await opening

    task = asyncio.create_task(opened())
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    _assert_started_and_stopped(tmp_path)


async def test_close_stops_the_embedded_server_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = await AgentMemory.embedded(
        str(tmp_path), name="off", embed=TableEmbedder(), discovery=False
    )
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


@pytest.mark.parametrize("cls", [AgentMemory, SyncAgentMemory])
@pytest.mark.parametrize(
    "interval",
    [0, -1, float("nan"), float("inf"), 10**400, -(10**400), "1"],
    ids=["zero", "negative", "nan", "inf", "int-beyond-float", "negative-int-beyond-float", "str"],
)
def test_a_heartbeat_interval_that_is_not_a_positive_number_is_refused(
    cls: Any, interval: object
) -> None:
    """10**400 raised OverflowError."""
    import valkey
    import valkey.asyncio

    client = valkey.Valkey() if cls is SyncAgentMemory else valkey.asyncio.Valkey()
    with pytest.raises(InvalidInputError, match="finite number of seconds") as info:
        cls(client, "n", TableEmbedder(), heartbeat_interval=interval)
    assert info.value.field == "heartbeat_interval"


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
        server.url, name=_name(), embed=_identified(), discovery=False, embedding_cache=True
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


async def test_an_async_context_manager_whose_initialize_fails_closes_the_agent() -> None:
    agent = AgentMemory.from_url("redis://127.0.0.1:1", name=_name(), embed=TableEmbedder())
    with pytest.raises(ServerUnavailableError):
        async with agent:
            pass
    assert agent._closed  # its own client is closed, although no __aexit__ ran


def test_a_context_manager_whose_initialize_fails_closes_the_agent() -> None:
    agent = SyncAgentMemory.from_url("redis://127.0.0.1:1", name=_name(), embed=TableEmbedder())
    with pytest.raises(ServerUnavailableError), agent:
        pass
    assert agent._closed


async def test_close_sends_the_buffered_counters_of_every_tier(server: ServerInfo) -> None:
    name = _name()
    agent = AgentMemory.from_url(
        server.url, name=name, embed=_identified(), discovery=False, embedding_cache=True
    )
    assert agent.embeddings is not None
    agent.embeddings._core.tier.buffer.add({"embedding:hits": 4})  # a lookup's, unsent
    await agent.close()
    raw = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        assert raw.hget(f"{name}:__stats", "embedding:hits") == "4"
    finally:
        raw.close()


async def test_a_cancelled_close_still_releases_the_store_and_the_client(
    server: ServerInfo,
) -> None:
    agent = AgentMemory.from_url(server.url, name=_name(), embed=TableEmbedder())
    await agent.initialize()  # starts the heartbeat, which close() stops first
    closing = asyncio.create_task(agent.close())
    await asyncio.sleep(0)  # close() is now waiting for the heartbeat to stop
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    assert agent.memory._closed
    pool = agent._client.connection_pool
    assert not pool._in_use_connections
    assert all(not c.is_connected for c in pool._available_connections)


async def test_a_close_cancelled_during_a_beat_leaves_the_closed_client_unused(
    server: ServerInfo,
) -> None:
    """Cancelled while it waited for a beat in flight, close() released the store and
    closed its own client, but the beat went on: it reconnected the closed client (a
    connection nothing released) and announced the closed agent again."""
    agent = AgentMemory.from_url(
        server.url, name=_name(), embed=TableEmbedder(), heartbeat_interval=0.01
    )
    await agent.initialize()
    beating, proceed = asyncio.Event(), asyncio.Event()
    real_beat = agent._heartbeat._beat
    beats: list[str] = []

    async def held_beat() -> None:  # a beat waiting for the server, held at will
        beating.set()
        await proceed.wait()
        await real_beat()
        beats.append("beat")

    agent._heartbeat._beat = held_beat
    await beating.wait()
    beat_task = agent._heartbeat._task
    assert beat_task is not None
    closing = asyncio.create_task(agent.close())
    while not closing.done() and not agent._heartbeat._stopping.is_set():  # type: ignore[union-attr]
        await asyncio.sleep(0)
    await asyncio.sleep(0)  # close() now waits for the beat in flight
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    proceed.set()  # the server answers the beat
    await asyncio.gather(beat_task, return_exceptions=True)
    assert beat_task.done() and not beats
    assert agent.memory._closed
    pool = agent._client.connection_pool
    assert not pool._in_use_connections
    assert all(not c.is_connected for c in pool._available_connections)


async def test_a_close_during_initialize_leaves_no_heartbeat(
    server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    registering = asyncio.Event()
    real_register = discovery.register

    def slow_register(*args: Any, **kwargs: Any) -> Any:
        registering.set()
        yield Sleep(0.2)
        return (yield from real_register(*args, **kwargs))

    monkeypatch.setattr(discovery, "register", slow_register)
    agent = AgentMemory.from_url(server.url, name=_name(), embed=TableEmbedder())
    initializing = asyncio.create_task(agent.initialize())
    await registering.wait()
    await agent.close()
    with pytest.raises(StoreClosedError):
        await initializing
    assert agent._heartbeat._task is None
    raw = redis.Redis.from_url(server.url, decode_responses=True)
    try:  # its heartbeats are withdrawn (the markers stay: Monitor shows it gone)
        for field in (f"{agent.name}:mem", agent.name):
            assert raw.exists(discovery.heartbeat_key(field)) == 0
    finally:
        raw.close()
    pool = agent._client.connection_pool
    assert all(not c.is_connected for c in pool._available_connections)
    assert not pool._in_use_connections


def _closed_by_another_thread_at_start(
    agent: SyncAgentMemory, after: bool
) -> tuple[StoreClosedError | None, bool]:
    """initialize(), with close() run to its end by another thread as the heartbeat is
    about to start (``after``: once it started); what initialize() raised, and whether a
    heartbeat thread ran after it (then stopped)."""
    heartbeat = agent._heartbeat
    real_start = heartbeat.start

    def start() -> Any:
        started = real_start() if after else None
        closer = threading.Thread(target=agent.close)
        closer.start()
        closer.join(timeout=30)
        assert not closer.is_alive()
        return started if after else real_start()

    heartbeat.start = start  # type: ignore[method-assign]
    raised = None
    try:
        agent.initialize()
    except StoreClosedError as exc:
        raised = exc
    beating = heartbeat._thread is not None and heartbeat._thread.is_alive()
    heartbeat.stop()  # a heartbeat started for the closed agent
    return raised, beating


def _announced(url: str, agent: SyncAgentMemory) -> list[str]:
    raw = redis.Redis.from_url(url, decode_responses=True)
    try:
        return [
            field
            for field in (f"{agent.name}:mem", agent.name)
            if raw.exists(discovery.heartbeat_key(field))
        ]
    finally:
        raw.close()


def test_a_close_from_another_thread_as_initialize_starts_the_heartbeat_starts_none(
    server: ServerInfo,
) -> None:
    # initialize() checked that the agent was open, then started the heartbeat: a
    # close() in between left a heartbeat thread beating for the closed agent (its beats
    # reopening the closed client and announcing it live to Monitor).
    agent = SyncAgentMemory.from_url(server.url, name=_name(), embed=TableEmbedder())
    raised, beating = _closed_by_another_thread_at_start(agent, after=False)
    assert not beating
    assert isinstance(raised, StoreClosedError)
    assert _announced(server.url, agent) == []
    pool = agent._client.connection_pool
    assert all(not c.is_connected for c in pool._available_connections)


def test_a_close_from_another_thread_once_the_heartbeat_started_withdraws_it(
    server: ServerInfo,
) -> None:
    # close() ran after the heartbeat started but before initialize() marked the agent
    # initialized: it stopped the beats but left the heartbeats register wrote, so
    # Monitor showed the closed agent live until they expired.
    agent = SyncAgentMemory.from_url(server.url, name=_name(), embed=TableEmbedder())
    assert _closed_by_another_thread_at_start(agent, after=True) == (None, False)
    assert _announced(server.url, agent) == []


async def test_a_close_cancelled_while_sending_counters_still_releases_everything(
    server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = AgentMemory.from_url(server.url, name=_name(), embed=TableEmbedder(), discovery=False)
    await agent.memory.remember("warm the client up")

    async def slow_flush(self: Any) -> None:
        await asyncio.sleep(10)

    monkeypatch.setattr(type(agent.llm), "flush_stats", slow_flush)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(agent.close(), 0.1)
    assert agent.memory._closed
    pool = agent._client.connection_pool
    assert all(not c.is_connected for c in pool._available_connections)
    assert not pool._in_use_connections


async def test_a_heartbeat_that_raises_anything_is_counted_and_goes_on() -> None:
    from agent_memory.facade.heartbeat import AsyncHeartbeat

    beats: list[int] = []
    failures: list[Exception] = []

    async def beat() -> None:
        beats.append(1)
        raise RuntimeError("a bug in a beat")

    heartbeat = AsyncHeartbeat(beat, 0.01, failures.append)
    heartbeat.start()
    while len(beats) < 3:
        await asyncio.sleep(0.01)
    await heartbeat.stop()
    assert len(failures) >= 2 and all(isinstance(f, RuntimeError) for f in failures)


_REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _connections(raw: redis.Redis, probe: str) -> int:
    return str(raw.execute_command("CLIENT", "LIST")).count(f"name={probe} ")


async def test_the_cache_tiers_are_closed_with_the_agent(server: ServerInfo) -> None:
    """Used after close(), a tier reopened the client the agent had closed, and nothing
    released that connection."""
    probe = f"probe-{uuid.uuid4().hex[:8]}"
    raw = redis.Redis.from_url(server.url, decode_responses=True)
    agent = AgentMemory.from_url(
        server.url, name=_name(), embed=_identified(), discovery=False,
        embedding_cache=True, client_client_name=probe,
    )  # fmt: skip
    try:
        async with agent:
            await agent.llm.check(_REQUEST)
        assert agent.embeddings is not None
        calls = [
            agent.llm.check(_REQUEST),
            agent.llm.wrap(lambda **kw: "answer")(**_REQUEST),
            agent.tool.check("t", {"a": 1}),
            agent.session.get("thread", "field"),
            agent.embeddings.get_many("id", ["text"]),
            agent.memory.recall("x"),
        ]
        for call in calls:
            with pytest.raises(StoreClosedError, match="is closed"):
                await call
        await agent.close()  # still a no-op
        assert _connections(raw, probe) == 0
    finally:
        raw.close()


def test_the_cache_tiers_of_the_blocking_agent_are_closed_with_it(server: ServerInfo) -> None:
    probe = f"probe-{uuid.uuid4().hex[:8]}"
    raw = redis.Redis.from_url(server.url, decode_responses=True)
    agent = SyncAgentMemory.from_url(
        server.url, name=_name(), embed=_identified(), discovery=False,
        embedding_cache=True, client_client_name=probe,
    )  # fmt: skip
    try:
        with agent:
            agent.tool.check("t", {"a": 1})
        assert agent.embeddings is not None
        calls = [
            lambda: agent.llm.check(_REQUEST),
            lambda: agent.tool.store("t", {"a": 1}, "result"),
            lambda: agent.session.set("thread", "field", 1),
            lambda: agent.embeddings.get_many("id", ["text"]),  # type: ignore[union-attr]
        ]
        for call in calls:
            with pytest.raises(StoreClosedError, match="SyncAgentMemory"):
                call()
        agent.close()
        assert _connections(raw, probe) == 0
    finally:
        raw.close()


async def test_tiers_sharing_the_callers_client_stay_usable_after_the_agent_closed(
    server: ServerInfo,
) -> None:
    """Closing an agent closes its own tiers only: a tier made on its own (it has no
    close()) goes on with the caller's client, which the agent does not close."""
    import redis.asyncio

    from agent_memory import LlmCache

    client = redis.asyncio.Redis.from_url(server.url)
    name = _name()
    try:
        agent = AgentMemory(client, name, TableEmbedder(), discovery=False)
        await agent.close()
        with pytest.raises(StoreClosedError):
            await agent.llm.check(_REQUEST)
        assert not (await LlmCache(client, name).check(_REQUEST)).hit
    finally:
        await client.aclose()


def test_a_beat_held_up_past_close_leaves_no_heartbeat(
    server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A beat the server holds up longer than close() used to wait for it (interval +
    5 s) must not re-announce the agent after close() withdrew its heartbeats."""
    agent = SyncAgentMemory.from_url(
        server.url, name=_name(), embed=TableEmbedder(), heartbeat_interval=0.05
    )
    agent.initialize()
    in_flight, release = threading.Event(), threading.Event()
    real_heartbeat = discovery.heartbeat

    def held_heartbeat(*args: Any, **kwargs: Any) -> Any:  # a stalled server, then the write
        in_flight.set()
        while not release.is_set():
            yield Sleep(0.01)
        return (yield from real_heartbeat(*args, **kwargs))

    monkeypatch.setattr(discovery, "heartbeat", held_heartbeat)
    assert in_flight.wait(10)
    raw = redis.Redis.from_url(server.url, decode_responses=True)
    keys = [discovery.heartbeat_key(f) for f in (f"{agent.name}:mem", agent.name)]

    def release_when_withdrawn_or_late() -> None:
        # The old close() gave up on the beat after 5.05 s and deleted the heartbeats;
        # the beat is released once they are gone (or after 8 s, when close() waits).
        for _ in range(800):
            if raw.exists(*keys) == 0:
                break
            release.wait(0.01)
        release.set()

    beats = agent._heartbeat._thread
    assert beats is not None
    releaser = threading.Thread(target=release_when_withdrawn_or_late)
    releaser.start()
    try:
        agent.close()
        releaser.join()
        beats.join()  # the held beat has finished, whenever close() returned
        assert raw.exists(*keys) == 0
    finally:
        release.set()
        releaser.join()
        raw.close()


@pytest.mark.parametrize("cached", [True, False], ids=["cache-on", "cache-off"])
@pytest.mark.parametrize("cls", [AgentMemory, SyncAgentMemory])
@pytest.mark.parametrize(
    "ttl",
    [-1, 0, float("nan"), float("inf"), "x", True, 10**400],
    ids=["negative", "zero", "nan", "inf", "str", "bool", "int-beyond-float"],
)
def test_a_bad_embedding_cache_ttl_is_refused_whether_or_not_the_cache_is_on(
    cls: Any, cached: bool, ttl: object
) -> None:
    """With the cache off it passed silently; with it on the error named ``ttl``."""
    client = redis.Redis() if cls is SyncAgentMemory else redis.asyncio.Redis()
    with pytest.raises(InvalidInputError) as info:
        cls(client, "n", _identified(), embedding_cache=cached, embedding_cache_ttl=ttl)
    assert info.value.field == "embedding_cache_ttl"


@pytest.mark.parametrize("ttl", [None, 1, 0.5, 3600.0])
def test_a_good_embedding_cache_ttl_is_kept(ttl: float | None) -> None:
    agent = SyncAgentMemory(
        redis.Redis(), "n", _identified(), embedding_cache=True, embedding_cache_ttl=ttl
    )
    assert agent.embeddings is not None
    assert agent.embeddings._core.ttl_ms == (None if ttl is None else round(ttl * 1000))
