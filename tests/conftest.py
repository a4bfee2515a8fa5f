"""Real servers for the test suite.

Session-scoped fixtures start each server kind on a free loopback port the first time a
test needs it and stop it at the end, unless an environment variable points at a server
that is already running (for example the docker compose services):

* ``AGENT_MEMORY_TEST_URL``        Valkey with a search module
* ``AGENT_MEMORY_TEST_PLAIN_URL``  Valkey without any module
* ``AGENT_MEMORY_TEST_REDIS_URL``  Redis with a search module

A server that cannot start fails the test run with the end of its log: nothing is
skipped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import test_servers

ENV_URLS = {
    "valkey-search": "AGENT_MEMORY_TEST_URL",
    "valkey": "AGENT_MEMORY_TEST_PLAIN_URL",
    "redis-search": "AGENT_MEMORY_TEST_REDIS_URL",
}
SEARCH_KINDS = ("valkey-search", "redis-search")
ALL_KINDS = ("valkey-search", "valkey", "redis-search")


@dataclass(frozen=True)
class ServerInfo:
    kind: str
    url: str
    process: test_servers.ServerProcess | None  # None when the URL came from the environment

    @property
    def has_search(self) -> bool:
        return self.kind in SEARCH_KINDS


class _Servers:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.running: dict[str, ServerInfo] = {}

    def get(self, kind: str) -> ServerInfo:
        if kind not in self.running:
            url = os.environ.get(ENV_URLS[kind])
            if url:
                self.running[kind] = ServerInfo(kind, url, None)
            else:
                process = test_servers.start(kind, self.root / kind)
                self.running[kind] = ServerInfo(kind, process.url, process)
        return self.running[kind]

    def stop_all(self) -> None:
        for info in self.running.values():
            if info.process is not None:
                info.process.stop()


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Servers]:
    registry = _Servers(tmp_path_factory.mktemp("servers"))
    yield registry
    registry.stop_all()


@pytest.fixture(scope="session", params=ALL_KINDS)
def any_server(request: pytest.FixtureRequest, servers: _Servers) -> ServerInfo:
    """Each server kind in turn."""
    return servers.get(request.param)


@pytest.fixture(scope="session", params=SEARCH_KINDS)
def search_server(request: pytest.FixtureRequest, servers: _Servers) -> ServerInfo:
    """Each server kind that has a search module."""
    return servers.get(request.param)


@pytest.fixture(scope="session")
def plain_server(servers: _Servers) -> ServerInfo:
    """Valkey without any module."""
    return servers.get("valkey")
