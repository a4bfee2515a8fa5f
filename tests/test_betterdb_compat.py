"""The BetterDB layout holds: the betterdb-agent-memory package (the Python port of the
TypeScript library, same key layout and queries) recalls and lists what we wrote.

It runs from its own virtual environment (created on first use by the benchmark
harness), with its analytics switched off.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import numpy as np

from agent_memory import Scope, SyncMemoryStore
from benchmarks.peer import ensure_venv
from tests.conftest import _Servers

DIM = 16

PEER_SCRIPT = r"""
import asyncio, json, sys
import valkey.asyncio as valkey
from betterdb_agent_memory import MemoryStore

async def main():
    url, name, vector = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    client = valkey.from_url(url)
    store = MemoryStore(client=client, name=name, embed_fn=None, analytics=False)
    hits = await store.recall_by_vector(vector, k=5, threshold=2.0, agent_id="assistant",
                                        namespace="acme", reinforce=False)
    tagged = await store.recall_by_vector(vector, k=5, threshold=2.0, tags=["prefs"],
                                          agent_id="assistant", namespace="acme", reinforce=False)
    print(json.dumps({
        "recall": [[h.item.content, h.item.tags, h.item.importance] for h in hits],
        "tagged": [h.item.content for h in tagged],
    }))
    await client.aclose()

asyncio.run(main())
"""


def _unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIM)
    return list(v / np.linalg.norm(v))


def test_betterdb_peer_recalls_what_we_wrote(servers: _Servers) -> None:
    url = servers.get("valkey-redisearch").url
    name = f"compat{uuid.uuid4().hex[:8]}"
    vectors = {"dark mode": _unit(1), "deploys on Tuesday": _unit(2), "other agent": _unit(3)}
    store = SyncMemoryStore.from_url(
        url, name=name, embed=lambda text: vectors.get(text) or _unit(99)
    )
    with store:
        scope = Scope(namespace="acme", agent_id="assistant", thread_id="t1")
        store.remember("dark mode", importance=0.8, tags=["prefs"], scope=scope)
        store.remember("deploys on Tuesday", tags=["ops"], scope=scope)
        store.remember("other agent", scope=Scope(namespace="acme", agent_id="someone"))
    python = ensure_venv()
    env = {**os.environ, "BETTERDB_TELEMETRY": "false"}
    run = subprocess.run(
        [str(python), "-c", PEER_SCRIPT, url, name, json.dumps(vectors["dark mode"])],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["recall"][0] == ["dark mode", ["prefs"], 0.8]
    assert sorted(c for c, _, _ in seen["recall"]) == ["dark mode", "deploys on Tuesday"]
    assert seen["tagged"] == ["dark mode"]


PEER_WRITER = r"""
import asyncio, json, sys
import valkey.asyncio as valkey
from betterdb_agent_memory import MemoryStore

async def main():
    url, name, vector = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    client = valkey.from_url(url)
    async def embed(text):
        return vector
    store = MemoryStore(client=client, name=name, embed_fn=embed, analytics=False)
    await store.ensure_index()
    await store.remember("written by the peer", importance=0.5)
    await client.aclose()

asyncio.run(main())
"""


def test_an_index_created_by_the_peer_is_never_replaced(servers: _Servers) -> None:
    import valkey

    from agent_memory import IndexMismatchError

    url = servers.get("valkey-redisearch").url
    name = f"theirs{uuid.uuid4().hex[:8]}"
    python = ensure_venv()
    env = {**os.environ, "BETTERDB_TELEMETRY": "false"}
    run = subprocess.run(
        [str(python), "-c", PEER_WRITER, url, name, json.dumps(_unit(5))],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    client = valkey.Valkey.from_url(url)
    try:

        def schema_and_docs() -> tuple[object, object]:
            info = client.execute_command("FT.INFO", f"{name}:mem:idx")
            fields = dict(zip(info[::2], info[1::2], strict=True))
            return fields[b"attributes"], fields[b"num_docs"]

        before = schema_and_docs()
        store = SyncMemoryStore(client, name, lambda text: _unit(5))
        try:
            store.ensure_index()
            raise AssertionError("the peer's index must not be taken over")
        except IndexMismatchError as exc:
            assert "not created by agent-memory" in str(exc)
        assert schema_and_docs() == before  # same schema, same documents: untouched
    finally:
        client.close()
