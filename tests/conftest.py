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

from agent_memory.core import clients as _clients
from tests.dialect_audit import check_command

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


_violations: list[str] = []


class DialectAudit:
    """Whether the running test expects only the valkey-search 1.0.2 baseline (set by
    the behavioural suite for stores created with ``ft_dialect="baseline"``)."""

    baseline_only = False


def _audited(cls: type) -> None:
    """Wrap an executor class so every FT command it sends is checked."""
    command, batch = cls.command, cls.batch

    def audit(args: tuple[object, ...]) -> None:
        for problem in check_command(args, allow_extensions=not DialectAudit.baseline_only):
            _violations.append(f"{problem} in {[str(a)[:60] for a in args][:8]}")

    if getattr(cls, "_audited", False):
        return

    if cls is _clients.AsyncExecutor:

        async def acommand(self, cmd):  # type: ignore[no-untyped-def]
            audit(cmd.args)
            return await command(self, cmd)

        async def abatch(self, b):  # type: ignore[no-untyped-def]
            for cmd in b.commands:
                audit(cmd.args)
            return await batch(self, b)

        cls.command, cls.batch = acommand, abatch  # type: ignore[method-assign]
    else:

        def scommand(self, cmd):  # type: ignore[no-untyped-def]
            audit(cmd.args)
            return command(self, cmd)

        def sbatch(self, b):  # type: ignore[no-untyped-def]
            for cmd in b.commands:
                audit(cmd.args)
            return batch(self, b)

        cls.command, cls.batch = scommand, sbatch  # type: ignore[method-assign]
    cls._audited = True  # type: ignore[attr-defined]


_audited(_clients.SyncExecutor)
_audited(_clients.AsyncExecutor)


@pytest.fixture(autouse=True)
def _valkey_search_1_0_dialect() -> Iterator[None]:
    """Fail any test that sent an FT command valkey-search 1.0.2 would reject."""
    start = len(_violations)
    yield
    DialectAudit.baseline_only = False
    new = _violations[start:]
    assert not new, "FT commands outside the valkey-search 1.0 dialect:\n" + "\n".join(new)
