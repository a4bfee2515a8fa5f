"""The servers the suite depends on are really what DESIGN.md says they are."""

from __future__ import annotations

import redis

from agent_memory.search.dialect import decode_version
from tests.conftest import ServerInfo


def _module_names(url: str) -> dict[str, int]:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        modules = client.execute_command("MODULE", "LIST")
        out: dict[str, int] = {}
        for entry in modules:
            if isinstance(entry, dict):
                out[str(entry["name"])] = int(entry["ver"])
            else:
                pairs = dict(zip(entry[::2], entry[1::2], strict=False))
                out[str(pairs["name"])] = int(pairs["ver"])
        return out
    finally:
        client.close()


def test_each_server_kind_runs_the_expected_binary_and_module(any_server: ServerInfo) -> None:
    client = redis.Redis.from_url(any_server.url, decode_responses=True)
    try:
        info = client.info("server")
    finally:
        client.close()
    modules = _module_names(any_server.url)
    if any_server.kind.startswith("valkey"):
        assert str(info.get("server_name")) == "valkey"
        if any_server.process is not None:  # the suite's own Valkey, not a compose image
            assert str(info["valkey_version"]).startswith("9.1")
    else:
        assert str(info["redis_version"]).startswith("8.2")
    if any_server.is_valkey_search:
        series = tuple(int(p) for p in any_server.kind.removeprefix("valkey-search-").split("."))
        assert decode_version(modules["search"], "valkey-search")[:2] == series
    elif any_server.has_search:
        assert modules["search"] // 10000 == 2  # RediSearch 2.x
    else:
        assert "search" not in modules
