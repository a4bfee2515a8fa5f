"""Server faults: SIGKILL in the middle of a write stream, restart with and without AOF.

Promises under test (see the README "Guarantees" section):

* With ``appendonly yes`` + ``appendfsync always``, every ``remember`` that returned an
  id survives a SIGKILL of the server and is found again by vector recall.
* The same store object reconnects by itself once the server is back.
* While the server is down every call raises :class:`ServerUnavailableError` (a
  socket timeout raises :class:`OperationTimeoutError`), within a bounded time.
* The client's retry policy is the user's: ``client_retry=Retry(...)`` reaches the
  client, and a generous policy rides out a short outage invisibly.
* A server that comes back EMPTY: the next recall re-creates the index (FT backend)
  and the store keeps working; nothing raises a raw client exception.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_memory import (
    MemoryInput,
    MemoryStore,
    OperationTimeoutError,
    ServerUnavailableError,
    SyncMemoryStore,
)
from agent_memory.search.parse import parse_index_info
from tests.conftest import VALKEY_SEARCH_KINDS
from tests.reliability.conftest import Dedicated, soak
from tests.reliability.load import (
    WriteRecallLoad,
    assert_read_back,
    assert_recalled,
    not_outage_errors,
)
from tests.support import TableEmbedder

AOF_ALWAYS = ("--appendfsync", "always")
DOWN_BOUND_S = 15.0  # generous: a call against a dead server must return within this
FAST_CLIENT = {"client_socket_timeout": 2.0, "client_socket_connect_timeout": 1.0}


async def _until_up(store: Any, deadline_s: float = 30.0) -> None:
    """Poll the SAME store until it answers (it must reconnect by itself)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            await store.stats()
            return
        except ServerUnavailableError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def _assert_down_fast(call: Any) -> type[BaseException]:
    started = time.monotonic()
    with pytest.raises((ServerUnavailableError, OperationTimeoutError)) as info:
        await asyncio.wait_for(call(), timeout=DOWN_BOUND_S + 5)
    assert time.monotonic() - started < DOWN_BOUND_S
    # Connection refused on a dead server is "unavailable", never a timeout.
    assert isinstance(info.value, ServerUnavailableError), repr(info.value)
    return type(info.value)


@pytest.mark.parametrize(
    "kind", ["valkey-redisearch", "valkey", "redis-search", *VALKEY_SEARCH_KINDS]
)
async def test_sigkill_mid_stream_loses_nothing_acknowledged(
    dedicated: Dedicated, tmp_path: Path, kind: str
) -> None:
    """Writes and recalls run while the server is SIGKILLed (AOF, fsync always) and
    restarted: every acknowledged write is read back and recalled, every call during the
    outage fails as unavailable, and the same store carries on."""
    data = tmp_path / "data"
    server = dedicated.start(kind, data, appendonly=True, extra_args=AOF_ALWAYS)
    embed = TableEmbedder()
    name = f"f{uuid.uuid4().hex[:10]}"
    store = MemoryStore.from_url(server.url, name=name, embed=embed, **FAST_CLIENT)
    expected_backend = "portable" if kind == "valkey" else "ft"
    assert (await store.ensure_index()).backend == expected_backend
    async with WriteRecallLoad(store) as load:
        await load.until_acked(soak(40, 2000))
        server.kill()  # SIGKILL while the writer and the recaller keep going
        await asyncio.sleep(0.3)
        await _assert_down_fast(lambda: store.recall("memory number 1"))
        await _assert_down_fast(lambda: store.remember("while down"))
    assert load.failures, "writes against a dead server must fail"
    assert not not_outage_errors(load.failures), not_outage_errors(load.failures)[:3]
    assert load.recalled and load.recall_failures
    assert not not_outage_errors(load.recall_failures), not_outage_errors(load.recall_failures)[:3]

    dedicated.start(kind, data, port=server.port, appendonly=True, extra_args=AOF_ALWAYS)
    await _until_up(store)
    await assert_read_back(store, load.acked)
    if kind != "valkey":  # the module re-indexes the reloaded hashes in the background
        await _wait_indexed(store, len(load.acked))
    await assert_recalled(store, load.acked)
    # The same store keeps writing after the restart.
    new_id = await store.remember("after restart")
    assert (await store.recall("after restart", k=1))[0].item.id == new_id
    await store.close()


async def _wait_indexed(store: Any, count: int) -> None:
    """RediSearch re-indexes the AOF-loaded hashes in the background after a restart."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        reply = await store.client.execute_command("FT.INFO", f"{store.name}:mem:idx")
        info = parse_index_info(reply)
        if info.num_docs >= count and not info.indexing:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the index did not catch up with the reloaded data")


def test_sync_store_reconnects_and_fails_fast(dedicated: Dedicated, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = dedicated.start("valkey", data, appendonly=True, extra_args=AOF_ALWAYS)
    store = SyncMemoryStore.from_url(server.url, name="sync", embed=TableEmbedder(), **FAST_CLIENT)
    first = store.remember("before the crash")
    server.kill()
    for call in (lambda: store.remember("x"), lambda: store.get(first), store.stats):
        started = time.monotonic()
        with pytest.raises(ServerUnavailableError):
            call()
        assert time.monotonic() - started < DOWN_BOUND_S
    dedicated.start("valkey", data, port=server.port, appendonly=True, extra_args=AOF_ALWAYS)
    item = store.get(first)
    assert item is not None and item.content == "before the crash"
    store.close()


@pytest.mark.parametrize("package", ["valkey", "redis"])
async def test_retry_policy_is_configurable(
    dedicated: Dedicated, tmp_path: Path, package: str
) -> None:
    if package == "valkey":
        from valkey.asyncio.retry import Retry
        from valkey.backoff import ConstantBackoff, NoBackoff
        from valkey.exceptions import BusyLoadingError
        from valkey.exceptions import ConnectionError as ClientConnectionError
    else:
        from redis.asyncio.retry import Retry  # type: ignore[assignment]
        from redis.backoff import ConstantBackoff, NoBackoff  # type: ignore[assignment]
        from redis.exceptions import (  # type: ignore[assignment]
            BusyLoadingError,
        )
        from redis.exceptions import (  # type: ignore[assignment]
            ConnectionError as ClientConnectionError,
        )
    scheme = "valkey" if package == "valkey" else "redis"
    data = tmp_path / "data"
    server = dedicated.start("valkey", data, appendonly=True, extra_args=AOF_ALWAYS)
    url = f"{scheme}://127.0.0.1:{server.port}"
    patient = MemoryStore.from_url(
        url,
        name="retry",
        embed=TableEmbedder(),
        # A restarting server first answers "loading the dataset": retry that too.
        client_retry=Retry(
            ConstantBackoff(0.2), 50, (ClientConnectionError, BusyLoadingError, OSError)
        ),
        # Commands are retried only on the errors listed here (the connect step on any
        # error of the Retry above).
        client_retry_on_error=[ClientConnectionError, BusyLoadingError],
        **FAST_CLIENT,
    )
    impatient = MemoryStore.from_url(
        url, name="retry", embed=TableEmbedder(), client_retry=Retry(NoBackoff(), 0), **FAST_CLIENT
    )
    assert type(patient.client).__module__.startswith(package)
    first = await patient.remember("first")
    assert await impatient.get(first) is not None
    server.kill()
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError):
        await impatient.get(first)
    assert time.monotonic() - started < DOWN_BOUND_S

    def restart_soon() -> None:
        time.sleep(1.0)
        dedicated.start("valkey", data, port=server.port, appendonly=True, extra_args=AOF_ALWAYS)

    restarter = threading.Thread(target=restart_soon)
    restarter.start()
    try:
        # The outage (>= 1 s) is covered by the patient policy (50 x 0.2 s): no error.
        item = await patient.get(first)
    finally:
        restarter.join()
    assert item is not None and item.content == "first"
    await patient.close()
    await impatient.close()


async def test_socket_timeout_raises_operation_timeout(
    dedicated: Dedicated, tmp_path: Path
) -> None:
    server = dedicated.start("valkey", tmp_path / "data")
    store = MemoryStore.from_url(
        server.url, name="slow", embed=TableEmbedder(), client_socket_timeout=0.5
    )
    await store.remember("x")
    pauser = MemoryStore.from_url(server.url, name="slow", embed=TableEmbedder())
    await pauser.client.execute_command("CLIENT", "PAUSE", "3000", "ALL")
    started = time.monotonic()
    with pytest.raises(OperationTimeoutError):
        await store.remember("y")
    assert time.monotonic() - started < DOWN_BOUND_S
    await pauser.client.execute_command("CLIENT", "UNPAUSE")
    await store.close()
    await pauser.close()


@pytest.mark.parametrize("kind", ["valkey-redisearch", "valkey", *VALKEY_SEARCH_KINDS])
async def test_server_restarting_empty_recreates_the_index(
    dedicated: Dedicated, tmp_path: Path, kind: str
) -> None:
    server = dedicated.start(kind, tmp_path / "first")  # no AOF: a restart loses all
    store = MemoryStore.from_url(server.url, name="empty", embed=TableEmbedder(), **FAST_CLIENT)
    lost = await store.remember("lost in the restart")
    server.kill()
    dedicated.start(kind, tmp_path / "second", port=server.port)
    await _until_up(store)
    assert await store.get(lost) is None
    assert len(await store.recall("lost in the restart")) == 0  # re-creates the index
    kept = await store.remember("written after the restart")
    hits = await store.recall("written after the restart", k=1)
    assert [h.item.id for h in hits] == [kept]
    status = await store.ensure_index()
    assert status.backend == ("portable" if kind == "valkey" else "ft")
    await store.close()


async def test_server_restarting_empty_remember_before_recall(
    dedicated: Dedicated, tmp_path: Path
) -> None:
    """Writes made before the index is re-created are indexed by the re-creation (once the
    server's background backfill of the existing hashes has finished)."""
    server = dedicated.start("valkey-redisearch", tmp_path / "first")
    store = MemoryStore.from_url(server.url, name="empty2", embed=TableEmbedder(), **FAST_CLIENT)
    await store.remember("before")
    server.kill()
    dedicated.start("valkey-redisearch", tmp_path / "second", port=server.port)
    await _until_up(store)
    ids = [await store.remember(f"after {i}") for i in range(5)]
    await store.recall("after 0")  # re-creates the index; the server backfills it
    await _wait_indexed(store, len(ids))  # ...in the background: searchable once done
    for i, memory_id in enumerate(ids):
        hits = await store.recall(f"after {i}", k=1)
        assert [h.item.id for h in hits] == [memory_id]
    await store.close()


@pytest.mark.parametrize("count", [1, 3])
async def test_portable_mirror_notices_a_server_that_came_back_different(
    dedicated: Dedicated, tmp_path: Path, count: int
) -> None:
    """As many memories written after an empty restart as were held before: the mirror
    must still see that the membership changed (tokens, not counters)."""
    server = dedicated.start("valkey", tmp_path / "first")
    store = MemoryStore.from_url(
        server.url, name="mirror", embed=TableEmbedder(), default_threshold=2.0, **FAST_CLIENT
    )
    for i in range(count):
        await store.remember(f"before {i}")
    assert len(await store.recall("before 0", k=count)) == count  # the mirror is filled
    server.kill()
    dedicated.start("valkey", tmp_path / "second", port=server.port)
    await _until_up(store)
    after = [await store.remember(f"after {i}") for i in range(count)]
    for i, memory_id in enumerate(after):
        hits = await store.recall(f"after {i}", k=1)
        assert [h.item.id for h in hits] == [memory_id]
    await store.close()


async def test_recall_that_recreates_the_index_waits_for_the_backfill(
    dedicated: Dedicated, tmp_path: Path
) -> None:
    """After FLUSHALL and 200 new writes, the recall that re-creates the lost index
    finds the newest memory: it waits for the server to index the existing hashes."""
    server = dedicated.start("valkey-redisearch", tmp_path / "first")
    store = MemoryStore.from_url(server.url, name="refill", embed=TableEmbedder(), **FAST_CLIENT)
    await store.remember("before")
    await store.client.execute_command("FLUSHALL")
    ids = await store.remember_many([MemoryInput(f"fresh {i}") for i in range(200)])
    hits = await store.recall("fresh 199", k=1)  # re-creates the index
    assert [h.item.id for h in hits] == [ids[-1]]
    await store.close()


def test_a_cached_call_keeps_its_response_when_the_server_dies_during_it(
    dedicated: Dedicated, tmp_path: Path
) -> None:
    """The server dies while the completion function runs: the paid-for response is
    returned, and the failed store is counted, not raised."""
    import valkey
    from prometheus_client import CollectorRegistry

    from agent_memory import SyncLlmCache

    server = dedicated.start("valkey", tmp_path / "data")
    client = valkey.Valkey.from_url(server.url, socket_timeout=2.0, socket_connect_timeout=1.0)
    registry = CollectorRegistry()
    cache = SyncLlmCache(client, "paid", registry=registry)

    def complete(**params: Any) -> str:
        server.kill()
        return "paid for"

    params = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert cache.wrap(complete)(**params) == "paid for"
    failures = registry.get_sample_value(
        "agent_memory_events_total", {"name": "paid", "event": "store_failures"}
    )
    assert failures == 1
    with pytest.raises(ServerUnavailableError):  # a lookup still says the server is down
        cache.check(params)
    client.close()
