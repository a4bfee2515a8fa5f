"""Fixtures of the behavioural suite: every server x client package x protocol x
decoding x sync/async combination that matters (pairwise), plus the in-process client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory import MemoryStore, SyncMemoryStore
from agent_memory.backends.inprocess import AsyncInProcessClient, InProcessClient, Keyspace
from tests.conftest import ALL_KINDS, DialectAudit, ServerInfo, _Servers
from tests.support import AsyncView, TableEmbedder


@dataclass(frozen=True)
class ClientConfig:
    package: str
    protocol: int
    decode: bool
    mode: str  # "async" | "sync"
    # The package's pure-Python reply parser instead of the compiled one (libvalkey /
    # hiredis, installed by default on x86-64 and ARM64): the path of other platforms.
    python_parser: bool = False

    @property
    def id(self) -> str:
        parser = "-pyparser" if self.python_parser else ""
        decoding = "str" if self.decode else "bytes"
        return f"{self.package}-resp{self.protocol}-{decoding}-{self.mode}{parser}"


CLIENT_CONFIGS = (
    ClientConfig("valkey", 2, False, "async"),
    ClientConfig("valkey", 3, True, "sync", python_parser=True),
    ClientConfig("redis", 2, True, "sync"),
    ClientConfig("redis", 3, False, "async", python_parser=True),
)


def make_client(url: str, cfg: ClientConfig, keyspace: Keyspace | None = None) -> Any:
    if keyspace is not None:
        return AsyncInProcessClient(keyspace) if cfg.mode == "async" else InProcessClient(keyspace)
    options: dict[str, Any] = {"protocol": cfg.protocol, "decode_responses": cfg.decode}
    if cfg.package == "valkey":
        import valkey
        import valkey.asyncio
        from valkey import _parsers as parsers

        cls = valkey.asyncio.Valkey if cfg.mode == "async" else valkey.Valkey
    else:
        import redis
        import redis.asyncio
        from redis import _parsers as parsers  # type: ignore[no-redef]

        cls = redis.asyncio.Redis if cfg.mode == "async" else redis.Redis
    if cfg.python_parser:
        resp3 = cfg.protocol == 3
        if cfg.mode == "async":
            parser = parsers._AsyncRESP3Parser if resp3 else parsers._AsyncRESP2Parser
        else:
            parser = parsers._RESP3Parser if resp3 else parsers._RESP2Parser
        options["parser_class"] = parser
    return cls.from_url(url, **options)


@dataclass
class StoreEnv:
    server: ServerInfo
    cfg: ClientConfig
    clients: list[Any]
    keyspace: Keyspace | None = None

    def make(self, embed: Any = None, *, name: str | None = None, **kwargs: Any) -> Any:
        """A store (async, or a sync one behind AsyncView) on a fresh name."""
        embed = embed or TableEmbedder()
        name = name if name is not None else f"t{uuid.uuid4().hex[:12]}"
        client = make_client(self.server.url, self.cfg, self.keyspace)
        self.clients.append(client)
        if self.server.kind == "valkey-redisearch":
            # RediSearch capped to the valkey-search 1.0.2 dialect (the baseline cap on a
            # server that accepts more); Redis exercises the RediSearch features, and the
            # valkey-search kinds are production's own module, detected as it is.
            kwargs.setdefault("ft_dialect", "baseline")
        if self.cfg.mode == "async":
            return MemoryStore(client, name, embed, **kwargs)
        return AsyncView(SyncMemoryStore(client, name, embed, **kwargs))

    @property
    def expected_backend(self) -> str:
        if self.keyspace is not None:
            return "inprocess"
        return "ft" if self.server.has_search else "portable"


ENV_PARAMS = [
    *((kind, cfg) for kind in ALL_KINDS for cfg in CLIENT_CONFIGS),
    ("inprocess", ClientConfig("inprocess", 0, True, "async")),
    ("inprocess", ClientConfig("inprocess", 0, True, "sync")),
]


@pytest.fixture(scope="package")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Servers]:
    """The behavioural suite's own servers, holding only its own data: the damage
    matrix's checks and its adoption and ghost paths walk the whole keyspace with
    ``SCAN`` (README "Limits"), which on the servers the rest of the suite has filled
    took several times as long."""
    registry = _Servers(tmp_path_factory.mktemp("store-servers"))
    yield registry
    registry.stop_all()


@pytest.fixture(params=ENV_PARAMS, ids=lambda p: f"{p[0]}-{p[1].id}")
async def env(request: pytest.FixtureRequest, servers: _Servers) -> AsyncIterator[StoreEnv]:
    kind, cfg = request.param
    if kind == "inprocess":
        environment = StoreEnv(ServerInfo("inprocess", "", None), cfg, [], Keyspace())
    else:
        environment = StoreEnv(servers.get(kind), cfg, [])
    DialectAudit.baseline_only = kind in ("valkey-redisearch", "valkey-search-1.0")
    yield environment
    for client in environment.clients:
        if cfg.mode == "async":
            await client.aclose()
        else:
            client.close()
