"""A cluster node SIGKILLed while writes and recalls run, then restarted.

Promises under test (README "Guarantees"): with AOF and ``appendfsync always`` on every
node, each ``remember`` that returned an id is read back and recalled after the node is
back; every call that fails during the outage fails as unavailable; the same store
carries on; and a write cut short never leaves a stored memory that nothing lists (at
worst an entry naming a memory that was never stored, which readers skip, and which two
prunes the ghost grace apart remove).
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_memory import MemoryStore, OperationTimeoutError, ServerUnavailableError
from agent_memory.store.ops.ghosts import GHOST_GRACE_MS
from tests.conftest import VALKEY_SEARCH_KINDS
from tests.reliability.conftest import soak
from tests.reliability.load import (
    WriteRecallLoad,
    assert_read_back,
    assert_recalled,
    not_outage_errors,
)
from tests.support import TableEmbedder

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import test_cluster

pytestmark = pytest.mark.integration

# A restarted primary may be left out of fanned-out searches until the next shard check
# and the coordinators' links are back (README "Cluster": up to 10 s).
SHARD_WINDOW = 12.0

AOF_ALWAYS = ("--appendfsync", "always")
# Plain Valkey (the portable backend) loses each node in turn; valkey-search with its
# coordinator (the FT backend) loses the node that holds no store counter and one that may.
KILLS = [("valkey", 0), ("valkey", 1), ("valkey", 2)] + [
    (kind, node) for kind in VALKEY_SEARCH_KINDS for node in (0, 2)
]
CLUSTER_KINDS = ("valkey", *VALKEY_SEARCH_KINDS)


class _Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _backend(kind: str) -> str:
    return "portable" if kind == "valkey" else "ft"


def _outage(kind: str, failures: list[Exception]) -> bool:
    """How a recall may fail while a node is down: unavailable, or (FT backend) a
    timeout when valkey-search's coordinator waits for the dead shard longer than the
    client's ``socket_timeout`` (README "Faults")."""
    allowed = (
        ServerUnavailableError
        if kind == "valkey"
        else (ServerUnavailableError, OperationTimeoutError)
    )
    return all(isinstance(failure, allowed) for failure in failures)


async def _create_index(url: str, name: str) -> None:
    """Create the store's index through a patient client: on a cluster that has just
    formed, valkey-search 1.2.1's ``FT.CREATE`` can take seconds (see
    ``test_cluster._wait_coordinator``), more than the 2 s the fault tests give a call."""
    from valkey.asyncio.cluster import ValkeyCluster

    client = ValkeyCluster.from_url(url, socket_timeout=30.0)
    try:
        async with MemoryStore(client, name, TableEmbedder()) as setup:
            await setup.ensure_index()
    finally:
        await client.aclose()


async def _until_up(store: Any, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            await store.stats()
            return
        except ServerUnavailableError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _stored_ids(client: Any, prefix: str) -> set[str]:
    keys = [k async for k in client.scan_iter(match=f"{prefix}*")]
    return {(k.decode() if isinstance(k, bytes) else k)[len(prefix) :] for k in keys}


async def _registered_ids(client: Any, name: str) -> set[str]:
    ids: set[str] = set()
    async for key in client.scan_iter(match=f"{name}:__mem_reg:*"):
        ids |= {m.decode() if isinstance(m, bytes) else m for m in await client.zrange(key, 0, -1)}
    return ids


@pytest.mark.parametrize(("kind", "node"), KILLS)
async def test_cluster_node_sigkill_loses_nothing_acknowledged(
    tmp_path: Path, kind: str, node: int
) -> None:
    from valkey.asyncio.cluster import ValkeyCluster

    cluster = test_cluster.start(
        tmp_path / "cluster", appendonly=True, extra_args=AOF_ALWAYS, kind=kind
    )
    client = ValkeyCluster.from_url(cluster.url, socket_timeout=2.0, socket_connect_timeout=1.0)
    name = f"cf{uuid.uuid4().hex[:10]}"
    store = MemoryStore(client, name, TableEmbedder())
    try:
        await _create_index(cluster.url, name)
        assert (await store.ensure_index()).backend == _backend(kind)
        async with WriteRecallLoad(store) as load:
            await load.until_acked(soak(40, 1000))
            cluster.kill(node)  # SIGKILL while the writer and the recaller keep going
            await asyncio.sleep(1.0)
        assert load.failures, "writes touching the dead node must fail"
        assert not not_outage_errors(load.failures), not_outage_errors(load.failures)[:3]
        assert _outage(kind, load.recall_failures), load.recall_failures[:3]

        cluster.restart(node)
        await _until_up(store)
        await assert_read_back(store, load.acked)
        await assert_recalled(store, load.acked, within=SHARD_WINDOW)
        stored = await _stored_ids(client, f"{name}:mem:")
        registered = await _registered_ids(client, name)
        assert stored <= registered, "a stored memory that nothing lists"
        assert len(registered - stored) <= len(load.failures)  # entries of writes cut short
        new_id = await store.remember("after restart")
        assert (await store.recall("after restart", k=1))[0].item.id == new_id
        # Two prunes the ghost grace apart remove exactly the entries of writes cut short.
        clock = _Clock()
        sweeper = MemoryStore(client, name, TableEmbedder(), clock=clock)
        await sweeper.prune()
        clock.now += GHOST_GRACE_MS / 1000
        swept = await sweeper.prune()
        assert swept.ghost_entries == len(registered - stored)
        stored = await _stored_ids(client, f"{name}:mem:")
        assert await _registered_ids(client, name) == stored
        assert (await store.stats()).items == len(stored)
    finally:
        await store.close()
        await client.aclose()
        cluster.stop()


@pytest.mark.parametrize("kind", CLUSTER_KINDS)
async def test_cluster_primary_failover_keeps_the_store_going(tmp_path: Path, kind: str) -> None:
    """The primary holding the store's write counter (every write needs it) is SIGKILLed
    while a writer and a recaller run; its replica takes over, and the store carries on
    without a restart. Found after the failover: every acknowledged write (loopback
    replication; over a network, writes acknowledged just before the crash can be lost,
    see README)."""
    from valkey.asyncio.cluster import ValkeyCluster

    cluster = test_cluster.start(
        tmp_path / "cluster", appendonly=True, extra_args=AOF_ALWAYS, replicas=1,
        node_timeout_ms=1000, kind=kind,
    )  # fmt: skip
    client = ValkeyCluster.from_url(cluster.url, socket_timeout=2.0, socket_connect_timeout=1.0)
    name = f"cf{uuid.uuid4().hex[:10]}"
    store = MemoryStore(client, name, TableEmbedder())
    try:
        await _create_index(cluster.url, name)
        assert (await store.ensure_index()).backend == _backend(kind)
        owner = client.get_node_from_key(f"{name}:__mem_seq")
        primary = next(i for i, n in enumerate(cluster.nodes) if n.port == int(owner.port))
        async with WriteRecallLoad(store, backoff=0.05) as load:
            await load.until_acked(soak(40, 1000))
            before_kill = len(load.acked)
            cluster.kill(primary)
            # the replica took over when the same store writes again (no restart)
            await asyncio.wait_for(load.until_acked(before_kill + 20), timeout=30.0)
        cluster.wait_ok(30.0)
        assert load.failures, "writes during the failover must fail"
        assert not not_outage_errors(load.failures), not_outage_errors(load.failures)[:3]
        assert _outage(kind, load.recall_failures), load.recall_failures[:3]
        missing = [m for m in load.acked if (await store.get(m)) is None]
        assert not missing, f"{len(missing)} of {len(load.acked)} acknowledged writes lost"
        await assert_read_back(store, load.acked)
        await assert_recalled(store, load.acked, within=SHARD_WINDOW)
        stored = await _stored_ids(client, f"{name}:mem:")
        registered = await _registered_ids(client, name)
        assert stored <= registered, "a stored memory that nothing lists"

        cluster.restart(primary)  # the old primary comes back as a replica
        assert cluster.role(primary) == "slave"
        new_id = await store.remember("after failover")
        # valkey-search serves each shard's part of a search from a random node of that
        # shard, replicas included: the rejoined replica re-indexes after its full sync
        await assert_recalled(store, {new_id: "after failover"}, within=SHARD_WINDOW)
    finally:
        await store.close()
        await client.aclose()
        cluster.stop()
