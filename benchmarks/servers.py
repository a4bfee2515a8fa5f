"""Start the servers the benchmark needs, the way the test suite does."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _test_servers() -> ModuleType:
    scripts = str(ROOT / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    import test_servers

    return test_servers


class Servers:
    """Lazily started servers by kind (``valkey-redisearch``, ``valkey``, ...), stopped together."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="agent-memory-bench-"))
        self.running: dict[str, Any] = {}

    def url(self, kind: str) -> str:
        if kind not in self.running:
            self.running[kind] = _test_servers().start(kind, self.root / kind)
        return str(self.running[kind].url)

    def stop_all(self) -> None:
        for process in self.running.values():
            process.stop()
        self.running.clear()


async def server_info(client: Any) -> dict[str, Any]:
    """Server version and loaded modules (for the report)."""
    info = await client.info("server")
    modules = []
    try:
        for entry in await client.execute_command("MODULE", "LIST"):
            if isinstance(entry, dict):
                fields = {_s(k): _s(v) for k, v in entry.items()}
            else:
                fields = {_s(entry[i]): _s(entry[i + 1]) for i in range(0, len(entry), 2)}
            modules.append(f"{fields.get('name')} {fields.get('ver')}")
    except Exception as exc:  # noqa: BLE001 - a server without MODULE LIST
        modules.append(f"(MODULE LIST failed: {exc})")
    version = info.get("valkey_version") or info.get("redis_version")
    return {"server": info.get("server_name", "valkey"), "version": version, "modules": modules}


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def used_memory(client: Any) -> int:
    info = await client.info("memory")
    return int(info["used_memory"])
