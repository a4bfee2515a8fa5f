"""The LLM cache shares entries with BetterDB agent-cache (its Python port, run from the
peer virtual environment): the same request hits whichever side stored it."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from typing import Any

import redis

from agent_memory import SyncLlmCache
from agent_memory.cache.llm_params import request_digest
from benchmarks.peer import ensure_venv
from tests.conftest import _Servers

HASHES = r"""
import json, sys
from betterdb_agent_cache.utils import llm_cache_hash
print(json.dumps([llm_cache_hash(p) for p in json.loads(sys.argv[1])]))
"""

PEER = r"""
import asyncio, json, sys
import valkey.asyncio as valkey
from betterdb_agent_cache import AgentCache
from betterdb_agent_cache.types import (AgentCacheOptions, AnalyticsOptions,
    ConfigRefreshOptions, DiscoveryOptions)

async def main():
    url, name, mine, theirs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    client = valkey.from_url(url)
    cache = AgentCache(AgentCacheOptions(client=client, name=name,
        analytics=AnalyticsOptions(disabled=True),
        config_refresh=ConfigRefreshOptions(enabled=False),
        discovery=DiscoveryOptions(enabled=False)))
    seen = await cache.llm.check(mine)
    await cache.llm.store(theirs, "stored by agent-cache")
    print(json.dumps({"hit": seen.hit, "response": seen.response}))
    await client.aclose()

asyncio.run(main())
"""

# Requests made of the parameters agent-cache keys (OpenAI models: defaults 1).
SHARED: list[dict[str, Any]] = [
    {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.2},
    {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "temperature": 1,
     "top_p": 1, "max_tokens": 64, "seed": 7, "stop": ["\n"]},
    {"model": "gpt-4o", "messages": [{"role": "system", "content": "be brief"},
                                     {"role": "user", "content": "hi"}],
     "tool_choice": "auto", "response_format": {"type": "json_object"},
     "tools": [{"type": "function", "function": {"name": "a", "parameters": {}}},
               {"type": "function", "function": {"name": "b", "parameters": {}}}]},
    {"model": "o3-mini", "messages": [{"role": "user", "content": "ü ∑ 漢字"}],
     "reasoning_effort": "high"},
]  # fmt: skip


def _run(script: str, *args: str) -> Any:
    env = {**os.environ, "BETTERDB_TELEMETRY": "false"}
    run = subprocess.run(
        [str(ensure_venv()), "-c", script, *args], capture_output=True, text=True,
        timeout=120, env=env, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_keys_equal_agent_cache_keys_for_the_parameters_it_keys() -> None:
    theirs = _run(HASHES, json.dumps(SHARED))
    assert [request_digest(p) for p in SHARED] == theirs
    # A parameter agent-cache ignores stays in our key (their two such requests collide).
    extra = {**SHARED[0], "presence_penalty": 0.5}
    assert request_digest(extra) not in theirs


def test_each_side_hits_what_the_other_stored(servers: _Servers) -> None:
    url = servers.get("valkey").url
    name = f"shared{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(url)
    cache = SyncLlmCache(client, name)
    try:
        mine, theirs = SHARED[1], SHARED[0]
        cache.store(mine, "stored by agent-memory")
        seen = _run(PEER, url, name, json.dumps(mine), json.dumps(theirs))
        assert seen == {"hit": True, "response": "stored by agent-memory"}
        found = cache.check(theirs)
        assert found.hit and found.response == "stored by agent-cache"
        stats = {k.decode(): int(v) for k, v in client.hgetall(f"{name}:__stats").items()}
        assert stats["llm:hits"] == 2  # one on each side, in one hash
    finally:
        client.close()


TOOL_PEER = r"""
import asyncio, json, sys
import valkey.asyncio as valkey
from betterdb_agent_cache import AgentCache
from betterdb_agent_cache.types import (AgentCacheOptions, AnalyticsOptions,
    ConfigRefreshOptions, DiscoveryOptions)
from betterdb_agent_cache.utils import tool_cache_hash

async def main():
    url, name = sys.argv[1], sys.argv[2]
    client = valkey.from_url(url)
    cache = AgentCache(AgentCacheOptions(client=client, name=name,
        analytics=AnalyticsOptions(disabled=True),
        config_refresh=ConfigRefreshOptions(enabled=False),
        discovery=DiscoveryOptions(enabled=False)))
    seen = await cache.tool.check("weather", {"units": "C", "city": "Paris"})
    await cache.tool.store("search", {"q": "valkey"}, "3 results")
    print(json.dumps({"hit": seen.hit, "response": seen.response,
                      "hash": tool_cache_hash({"city": "Paris", "units": "C"})}))
    await client.aclose()

asyncio.run(main())
"""


def test_tool_entries_are_shared_both_ways(servers: _Servers) -> None:
    from agent_memory import SyncToolCache

    url = servers.get("valkey").url
    name = f"tools{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(url)
    cache = SyncToolCache(client, name)
    try:
        key = cache.store("weather", {"city": "Paris", "units": "C"}, {"temp": 21.5})
        seen = _run(TOOL_PEER, url, name)
        assert key == f"{name}:tool:weather:{seen['hash']}"
        assert seen["hit"] and json.loads(seen["response"]) == {"temp": 21.5}
        theirs = cache.check("search", {"q": "valkey"})
        assert theirs.hit and theirs.result == "3 results"
        assert cache.check("weather", {"units": "C", "city": "Paris"}).result == {"temp": 21.5}
    finally:
        client.close()
