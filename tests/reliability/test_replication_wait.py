"""``wait_replicas``: a write returns only once replicas have it (issue 28, part 4).

A primary and a replica of each server kind are started by the test. With
``wait_replicas=1`` every acknowledged write is on the replica when the call returns; a
replica that cannot answer turns the call into ``ReplicationTimeoutError`` (the write
stays applied on the primary). The failover test freezes the replica (SIGSTOP) while a
writer runs, so that replication really lags, SIGKILLs the primary and promotes the
replica: every write the store acknowledged is there, and the writes made while the
replica was frozen were never acknowledged.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import valkey

from agent_memory import CapabilityError, MemoryStore, ReplicationTimeoutError, Scope
from agent_memory.errors import AgentMemoryError
from tests.reliability.conftest import Dedicated
from tests.support import TableEmbedder, random_unit

pytestmark = pytest.mark.integration

FAST_CLIENT = {"client_socket_timeout": 5.0, "client_socket_connect_timeout": 1.0}
KINDS = ["valkey", "valkey-redisearch"]


def _pair(dedicated: Dedicated, tmp_path: Path, kind: str) -> tuple[Any, Any]:
    primary = dedicated.start(kind, tmp_path / "primary")
    replica = dedicated.start(
        kind, tmp_path / "replica", extra_args=("--replicaof", "127.0.0.1", str(primary.port))
    )
    client = valkey.Valkey.from_url(replica.url, decode_responses=True)
    deadline = time.monotonic() + 20
    while client.info("replication").get("master_link_status") != "up":
        assert time.monotonic() < deadline, "the replica never synced"
        time.sleep(0.05)
    client.close()
    return primary, replica


def _exists(url: str, key: str) -> bool:
    client = valkey.Valkey.from_url(url)
    try:
        return bool(client.exists(key))
    finally:
        client.close()


def _waiting(url: str, name: str, embed: TableEmbedder, timeout_ms: int) -> MemoryStore:
    """A store on ``url`` whose writes wait for one replica."""
    return MemoryStore.from_url(url, name=name, embed=embed, wait_replicas=1,
                                wait_timeout_ms=timeout_ms, **FAST_CLIENT)  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
async def test_acknowledged_writes_are_on_the_replica(
    dedicated: Dedicated, tmp_path: Path, kind: str
) -> None:
    primary, replica = _pair(dedicated, tmp_path, kind)
    name = f"w{uuid.uuid4().hex[:10]}"
    store = _waiting(primary.url, name, TableEmbedder(), 5000)
    try:
        one = await store.remember("first fact", scope=Scope(namespace="ns"))
        assert _exists(replica.url, f"{name}:mem:{one}")
        many = await store.remember_many(
            [{"content": f"fact {i}", "scope": Scope(namespace="ns")} for i in range(20)]
        )
        assert all(_exists(replica.url, f"{name}:mem:{m}") for m in many)
        assert await store.forget(one) is True
        assert not _exists(replica.url, f"{name}:mem:{one}")
        exported = [r async for r in store.export(Scope(namespace="ns"))]
        imported = await store.import_records(
            [{**r, "scope": {"namespace": "copy"}} for r in exported[-5:]]
        )
        assert all(_exists(replica.url, f"{name}:mem:{m}") for m in imported)
        assert await store.forget_by_scope(Scope(namespace="copy")) == 5
        assert not any(_exists(replica.url, f"{name}:mem:{m}") for m in imported)

        os.kill(replica.process.pid, signal.SIGSTOP)  # the replica stops answering
        try:
            impatient = _waiting(primary.url, name, TableEmbedder(), 200)
            with pytest.raises(ReplicationTimeoutError) as info:
                await impatient.remember("written, not replicated", scope=Scope(namespace="ns"))
            assert (info.value.acknowledged, info.value.wanted) == (0, 1)
            assert isinstance(info.value, AgentMemoryError)
            listed = await impatient.list(scope=Scope(namespace="ns"), limit=100)
            assert "written, not replicated" in {i.content for i in listed.items}  # applied
            with pytest.raises(ReplicationTimeoutError):
                await impatient.forget(many[0])
            with pytest.raises(ReplicationTimeoutError):
                await impatient.import_records([{**exported[-1], "scope": {"namespace": "frozen"}}])
            with pytest.raises(ReplicationTimeoutError):
                await impatient.forget_by_scope(Scope(namespace="frozen"))
            await impatient.close()
        finally:
            os.kill(replica.process.pid, signal.SIGCONT)
    finally:
        await store.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_no_acknowledged_write_is_lost_when_the_primary_dies(
    dedicated: Dedicated, tmp_path: Path, kind: str
) -> None:
    primary, replica = _pair(dedicated, tmp_path, kind)
    name = f"w{uuid.uuid4().hex[:10]}"
    embed = TableEmbedder()
    store = _waiting(primary.url, name, embed, 300)
    acked: dict[str, str] = {}
    refused = 0
    try:
        for i in range(60):
            if i == 30:
                os.kill(replica.process.pid, signal.SIGSTOP)  # replication lags from here
            text = f"memory number {i}"
            try:
                acked[await store.remember(text)] = text
            except ReplicationTimeoutError:
                refused += 1
    finally:
        await store.close()
    primary.kill()  # the writes made while the replica was frozen die with the primary
    os.kill(replica.process.pid, signal.SIGCONT)
    promote = valkey.Valkey.from_url(replica.url)
    promote.execute_command("REPLICAOF", "NO", "ONE")
    promote.close()

    assert len(acked) >= 30 and refused > 0
    survivor = MemoryStore.from_url(replica.url, name=name, embed=embed, **FAST_CLIENT)
    try:
        for memory_id, text in acked.items():
            item = await survivor.get(memory_id)
            assert item is not None and item.content == text, f"{text} was acknowledged, then lost"
        for memory_id, text in list(acked.items())[:10]:
            hits = await survivor.recall_by_vector(random_unit(text), k=1, reinforce=False)
            assert [h.item.id for h in hits] == [memory_id]
    finally:
        await survivor.close()


def test_a_cluster_client_is_refused(cluster_url: str) -> None:
    from valkey.cluster import ValkeyCluster

    from agent_memory import SyncMemoryStore

    client = ValkeyCluster.from_url(cluster_url)
    try:
        with pytest.raises(CapabilityError, match="cluster"):
            SyncMemoryStore(client, "w", TableEmbedder(), wait_replicas=1)
    finally:
        client.close()
