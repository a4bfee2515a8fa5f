"""Helpers of the reliability suite: dedicated servers that tests may kill, and a
keyspace snapshot that proves a failed call changed nothing.

Long soak variants run only with ``AGENT_MEMORY_SOAK=1``; the default suite runs the
short form of every test.
"""

from __future__ import annotations

import copy
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import test_servers

from agent_memory.backends.inprocess import Keyspace

SOAK = os.environ.get("AGENT_MEMORY_SOAK") == "1"


def soak(short: int, long: int) -> int:
    """``long`` under ``AGENT_MEMORY_SOAK=1``, else ``short``."""
    return long if SOAK else short


class Dedicated:
    """Start servers owned by one test (killed and restarted at will), stop them after."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[test_servers.ServerProcess] = []

    def start(
        self,
        kind: str,
        data_dir: Path,
        *,
        port: int | None = None,
        appendonly: bool = False,
        extra_args: tuple[str, ...] = (),
    ) -> test_servers.ServerProcess:
        process = test_servers.start(
            kind, data_dir, port=port, appendonly=appendonly, extra_args=extra_args
        )
        self.started.append(process)
        return process

    def stop_all(self) -> None:
        for process in self.started:
            process.stop()


@pytest.fixture
def dedicated(tmp_path: Path) -> Iterator[Dedicated]:
    servers = Dedicated(tmp_path)
    try:
        yield servers
    finally:
        servers.stop_all()


def server_snapshot(
    url: str, pattern: str = "*", exclude: tuple[bytes, ...] = ()
) -> tuple[int, str]:
    """A key count and a digest of every key (DUMP payload and TTL) matching ``pattern``,
    leaving out the keys listed in ``exclude`` (from the key count too). The count is
    DBSIZE for ``*``, else the number of matching keys."""
    import valkey

    client = valkey.Valkey.from_url(url)
    try:
        digest = hashlib.sha256()
        keys = sorted(set(client.scan_iter(match=pattern, count=1000)) - set(exclude))
        for key in keys:
            digest.update(key + b"\0")
            digest.update(client.dump(key) or b"<gone>")
            digest.update(str(client.pttl(key) > 0).encode())
        if pattern != "*":
            # Other tests' keys may expire meanwhile: count only the keys looked at.
            return len(keys), digest.hexdigest()
        excluded = sum(int(client.exists(key)) for key in exclude)
        return int(client.dbsize()) - excluded, digest.hexdigest()
    finally:
        client.close()


def keyspace_snapshot(keyspace: Keyspace) -> tuple[int, Any]:
    """The same for an in-process keyspace (a deep copy of its data)."""
    with keyspace.lock:
        return len(keyspace.data), (copy.deepcopy(keyspace.data), set(keyspace.expires))
