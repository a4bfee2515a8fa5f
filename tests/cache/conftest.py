"""Fixtures of the cache-tier tests: client flavours, a tier factory and a real cluster.

Every test body is written once as ``async def`` against :class:`Tier`, which calls a
sync facade directly and awaits an async one, so each test runs for both.

Client flavours (a pairwise subset of package x protocol x decoding), each sync and
async: valkey+RESP2+bytes, valkey+RESP3+str, redis+RESP2+str, redis+RESP3+bytes.

The 3-primary cluster (``cluster_url``, in ``tests/conftest.py``) is started once per
session by ``scripts/test_cluster.py`` unless ``AGENT_MEMORY_TEST_CLUSTER_URL`` points at
a running one. A cluster that fails to start fails the tests with its logs.
"""

from __future__ import annotations

import inspect
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))


@dataclass(frozen=True)
class Flavour:
    package: str
    protocol: int
    decode: bool
    is_async: bool

    @property
    def id(self) -> str:
        mode = "async" if self.is_async else "sync"
        return f"{self.package}-resp{self.protocol}-{'str' if self.decode else 'bytes'}-{mode}"

    def client(self, url: str, *, cluster: bool = False) -> Any:
        options: dict[str, Any] = {"protocol": self.protocol, "decode_responses": self.decode}
        if self.package == "valkey":
            if cluster:
                from valkey.asyncio.cluster import ValkeyCluster as AsyncCluster
                from valkey.cluster import ValkeyCluster as SyncCluster

                return (AsyncCluster if self.is_async else SyncCluster).from_url(url, **options)
            import valkey
            import valkey.asyncio

            cls = valkey.asyncio.Valkey if self.is_async else valkey.Valkey
            return cls.from_url(url, **options)
        if cluster:
            from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
            from redis.cluster import RedisCluster

            return (AsyncRedisCluster if self.is_async else RedisCluster).from_url(url, **options)
        import redis
        import redis.asyncio

        cls = redis.asyncio.Redis if self.is_async else redis.Redis
        return cls.from_url(url, **options)


_BASE = [("valkey", 2, False), ("valkey", 3, True), ("redis", 2, True), ("redis", 3, False)]
FLAVOURS = [Flavour(p, proto, d, a) for p, proto, d in _BASE for a in (False, True)]


class Tier:
    """Calls a sync or an async tier the same way from an async test."""

    def __init__(self, tier: Any) -> None:
        self.tier = tier

    def __getattr__(self, attr: str) -> Any:
        target = getattr(self.tier, attr)
        if attr == "wrap":

            def wrap(fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
                wrapped = target(fn, **options)

                async def invoke(*args: Any, **kwargs: Any) -> Any:
                    result = wrapped(*args, **kwargs)
                    return await result if inspect.isawaitable(result) else result

                return invoke

            return wrap

        async def method(*args: Any, **kwargs: Any) -> Any:
            result = target(*args, **kwargs)
            return await result if inspect.isawaitable(result) else result

        return method


async def _close(client: Any) -> None:
    closer = getattr(client, "aclose", None) or client.close
    result = closer()
    if inspect.isawaitable(result):
        await result


# A chat completion's parameters, the key of the LLM cache tests' entries.
CHAT_PARAMS: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "hi"}],
}


@dataclass
class Env:
    """One test's world: flavour, server URL, a unique cache name and a raw client."""

    flavour: Flavour
    url: str
    cluster: bool
    name: str
    raw: Any  # a sync, decoding client for assertions
    clients: list[Any]

    def make(self, async_cls: type, sync_cls: type, **kwargs: Any) -> Tier:
        client = self.flavour.client(self.url, cluster=self.cluster)
        self.clients.append(client)
        cls = async_cls if self.flavour.is_async else sync_cls
        return Tier(cls(client, kwargs.pop("name", self.name), **kwargs))

    def keys(self, pattern: str = "*") -> list[str]:
        return sorted(self.raw.scan_iter(match=f"{self.name}:{pattern}"))

    def events(self, registry: Any, event: str) -> float:
        """This cache's ``agent_memory_events_total`` for ``event`` in ``registry``."""
        found = registry.get_sample_value(
            "agent_memory_events_total", {"name": self.name, "event": event}
        )
        return 0.0 if found is None else float(found)


def _raw(url: str, cluster: bool) -> Any:
    import valkey
    from valkey.cluster import ValkeyCluster

    if cluster:
        return ValkeyCluster.from_url(url, decode_responses=True)
    return valkey.Valkey.from_url(url, decode_responses=True)


async def open_env(flavour: Flavour, url: str, cluster: bool) -> AsyncIterator[Env]:
    raw = _raw(url, cluster)
    env = Env(flavour, url, cluster, f"t{uuid.uuid4().hex[:12]}", raw, [])
    try:
        yield env
    finally:
        for client in env.clients:
            await _close(client)
        raw.close()


@pytest.fixture(params=FLAVOURS, ids=[f.id for f in FLAVOURS])
def flavour(request: pytest.FixtureRequest) -> Flavour:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
async def env(flavour: Flavour, any_server: Any) -> AsyncIterator[Env]:
    """Every flavour on every standalone server kind."""
    async for item in open_env(flavour, any_server.url, False):
        yield item


@pytest.fixture
async def cluster_env(flavour: Flavour, cluster_url: str) -> AsyncIterator[Env]:
    """Every flavour on the 3-node cluster."""
    async for item in open_env(flavour, cluster_url, True):
        yield item
