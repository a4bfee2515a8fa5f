"""Real servers for the test suite.

Session-scoped fixtures start each server kind (``scripts/test_servers.py``) on a free
loopback port the first time a test needs it and stop it at the end, unless an
environment variable points at a server that is already running (for example the
docker compose services):

* ``AGENT_MEMORY_TEST_URL``                   Valkey with the RediSearch module
* ``AGENT_MEMORY_TEST_PLAIN_URL``             Valkey without any module
* ``AGENT_MEMORY_TEST_REDIS_URL``             Redis with the RediSearch module
* ``AGENT_MEMORY_TEST_VALKEY_SEARCH_1_0_URL`` Valkey with valkey-search 1.0.x
* ``AGENT_MEMORY_TEST_VALKEY_SEARCH_1_2_URL`` Valkey with valkey-search 1.2.x

No wheel ships valkey-search, so its two kinds run only where its modules are
(``AGENT_MEMORY_VALKEY_SEARCH_MODULES``) or its URLs are set. Elsewhere the run says at
the top and in the summary which kinds it did not run and how to get them; under
``CI=true`` a missing kind fails the run. A server that cannot start fails the test run
with the end of its log: nothing is skipped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import test_cluster
import test_servers

from agent_memory.core import clients as _clients
from tests.dialect_audit import check_command

ENV_URLS = {
    "valkey-redisearch": "AGENT_MEMORY_TEST_URL",
    "valkey": "AGENT_MEMORY_TEST_PLAIN_URL",
    "redis-search": "AGENT_MEMORY_TEST_REDIS_URL",
    "valkey-search-1.0": "AGENT_MEMORY_TEST_VALKEY_SEARCH_1_0_URL",
    "valkey-search-1.2": "AGENT_MEMORY_TEST_VALKEY_SEARCH_1_2_URL",
}


def _missing_valkey_search() -> dict[str, str]:
    """The valkey-search kinds neither a module nor a URL makes available here."""
    return {
        kind: why
        for kind, why in test_servers.unavailable_kinds().items()
        if not os.environ.get(ENV_URLS[kind])
    }


MISSING_KINDS = _missing_valkey_search()
VALKEY_SEARCH_KINDS = tuple(k for k in test_servers.VALKEY_SEARCH_KINDS if k not in MISSING_KINDS)
SEARCH_KINDS = ("valkey-redisearch", "redis-search", *VALKEY_SEARCH_KINDS)
ALL_KINDS = ("valkey-redisearch", "valkey", "redis-search", *VALKEY_SEARCH_KINDS)


def _missing_report() -> list[str]:
    if not MISSING_KINDS:
        return []
    return [
        "server kinds NOT run here: "
        + "; ".join(f"{kind} ({why})" for kind, why in MISSING_KINDS.items()),
        f"  to run them: {test_servers.HOW_TO_GET_VALKEY_SEARCH}",
    ]


def pytest_configure(config: pytest.Config) -> None:
    if MISSING_KINDS and os.environ.get("CI") == "true":
        raise pytest.UsageError(
            "CI=true but the real valkey-search kinds cannot run: " + "; ".join(_missing_report())
        )
    if os.environ.get("AGENT_MEMORY_TEST_UNKNOWN_SCRIPTS") == "1":
        _name_every_script_unknown()


def _name_every_script_unknown() -> None:
    """Send every script first under a SHA no server knows, so each batch meets the
    ``NOSCRIPT`` a restarted or failed-over server answers, and every command that must
    follow a script has to be sent again after it (``Command.after_scripts``)."""
    from agent_memory.core import clients
    from agent_memory.core.effects import Command

    def unknown(cmd: Command) -> Command:
        if cmd.name.upper() != "EVAL":
            return cmd
        return Command(("EVALSHA", "0" * 40, *cmd.args[2:]), binary=cmd.binary)

    clients._by_sha = unknown


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"server kinds: {', '.join(ALL_KINDS)}", *_missing_report()]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _missing_report():
        terminalreporter.write_line(line, yellow=True, bold=True)


@dataclass(frozen=True)
class ServerInfo:
    kind: str
    url: str
    process: test_servers.ServerProcess | None  # None when the URL came from the environment

    @property
    def has_search(self) -> bool:
        return self.kind in SEARCH_KINDS or self.kind in test_servers.VALKEY_SEARCH_KINDS

    @property
    def is_valkey_search(self) -> bool:
        """The real valkey-search module (not RediSearch)."""
        return self.kind in test_servers.VALKEY_SEARCH_KINDS


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
    the behavioural suite for stores created with ``ft_dialect="baseline"`` and on the
    real valkey-search 1.0)."""

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


# -- clusters: one of each per session, shared by every test module ------------------------


@pytest.fixture(scope="session")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real 3-primary Valkey cluster (started once per session)."""
    url = os.environ.get("AGENT_MEMORY_TEST_CLUSTER_URL")
    if url:
        yield url
        return
    cluster = test_cluster.start(tmp_path_factory.mktemp("cluster"))
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def search_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], str]]:
    """A 3-primary valkey-search cluster with the search coordinator, per valkey-search
    kind, started the first time a test asks for that kind (``search_cluster_url(kind)``)."""
    started: dict[str, test_cluster.Cluster] = {}

    def url(kind: str) -> str:
        if kind not in started:
            root = tmp_path_factory.mktemp(f"cluster-{kind}")
            started[kind] = test_cluster.start(root, kind=kind)
        return started[kind].url

    try:
        yield url
    finally:
        for cluster in started.values():
            cluster.stop()
