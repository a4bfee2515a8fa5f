"""Scripts travel by SHA; a server that forgot them (restart, SCRIPT FLUSH) gets them again."""

from __future__ import annotations

import valkey
import valkey.asyncio

from agent_memory import MemoryStore, SyncMemoryStore
from agent_memory.core.clients import script_sha
from tests.conftest import ServerInfo
from tests.support import TableEmbedder


def _script_calls(client: valkey.Valkey) -> dict[str, int]:
    stats = client.info("commandstats")
    return {
        name: int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("eval", "evalsha")
    }


async def test_scripts_are_sent_by_sha_and_reloaded_after_a_flush(any_server: ServerInfo) -> None:
    probe = valkey.Valkey.from_url(any_server.url)
    client = valkey.asyncio.Valkey.from_url(any_server.url)
    store = MemoryStore(client, "sha_async", TableEmbedder(), default_threshold=2.0)
    try:
        await store.remember("first", ttl=60)  # the TTL write is a script
        probe.execute_command("SCRIPT", "FLUSH")
        before = _script_calls(probe)
        await store.remember("second", ttl=60)  # NOSCRIPT, then EVAL loads it
        await store.remember("third", ttl=60)  # known again: EVALSHA only
        hits = await store.recall("second")  # the recall side effects are a script too
        after = _script_calls(probe)
        assert len(hits) == 3
        assert after["evalsha"] - before["evalsha"] >= 3
        assert after["eval"] - before["eval"] >= 1  # the reload
        assert (await store.get(hits[0].item.id)).exposures == 1  # type: ignore[union-attr]
    finally:
        await store.close()
        await client.aclose()
        probe.close()


def test_sync_store_reloads_scripts_in_a_pipeline(any_server: ServerInfo) -> None:
    client = valkey.Valkey.from_url(any_server.url)
    store = SyncMemoryStore(client, "sha_sync", TableEmbedder(), default_threshold=2.0)
    try:
        store.remember("one", ttl=60)
        store.recall("one")
        client.execute_command("SCRIPT", "FLUSH")
        result = store.recall("one")  # side-effect script inside a pipeline: reloaded
        assert len(result) == 1
        assert store.get(result[0].item.id).exposures == 2  # type: ignore[union-attr]
    finally:
        store.close()
        client.close()


def test_script_sha_matches_the_server() -> None:
    assert script_sha("return 1") == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
