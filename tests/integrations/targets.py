"""The servers and client packages every framework adapter is tested on.

Each adapter runs on plain Valkey and on Valkey + valkey-search 1.2 (when the suite has
it), with both client packages: valkey with RESP2 and bytes, redis with RESP3 and str.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.conftest import MISSING_KINDS

KINDS = tuple(k for k in ("valkey", "valkey-search-1.2") if k not in MISSING_KINDS)


@dataclass(frozen=True)
class Package:
    """A client package with the protocol and decoding it is tested with."""

    name: str
    protocol: int
    decode: bool

    def client(self, url: str, *, blocking: bool = False) -> Any:
        """An asyncio client for ``url`` (a blocking one with ``blocking``)."""
        options: dict[str, Any] = {"protocol": self.protocol, "decode_responses": self.decode}
        if self.name == "valkey":
            import valkey
            import valkey.asyncio

            return (valkey.Valkey if blocking else valkey.asyncio.Valkey).from_url(url, **options)
        import redis
        import redis.asyncio

        return (redis.Redis if blocking else redis.asyncio.Redis).from_url(url, **options)

    def cluster_clients(self, url: str) -> tuple[Any, Any]:
        """A blocking and an asyncio cluster client for the cluster at ``url``."""
        options: dict[str, Any] = {"decode_responses": self.decode}
        if self.name == "valkey":
            from valkey.asyncio.cluster import ValkeyCluster as AsyncCluster
            from valkey.cluster import ValkeyCluster as Cluster

            return Cluster.from_url(url, **options), AsyncCluster.from_url(url, **options)
        from redis.asyncio.cluster import RedisCluster
        from redis.cluster import RedisCluster as BlockingRedisCluster

        return BlockingRedisCluster.from_url(url, **options), RedisCluster.from_url(url, **options)


PACKAGES = (Package("valkey", 2, False), Package("redis", 3, True))


@dataclass(frozen=True)
class Target:
    """One server kind and one client package."""

    kind: str
    url: str
    package: Package

    def sync_client(self) -> Any:
        return self.package.client(self.url, blocking=True)

    def async_client(self) -> Any:
        return self.package.client(self.url)
