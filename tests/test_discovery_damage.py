"""Another writer's damage in the shared discovery keys (a marker or a tool-policy name
that is not UTF-8 or not a JSON object) is reported and skipped: initialize() and every
heartbeat go on."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

import pytest
import redis
from prometheus_client import CollectorRegistry

from agent_memory import InvalidInputError, SyncAgentMemory
from agent_memory.core.effects import Operation
from agent_memory.facade import discovery
from tests.conftest import ServerInfo, _Servers
from tests.support import TableEmbedder


def _run(op: Operation[Any], replies: list[Any]) -> Any:
    """Drive an operation with canned replies (one per command or batch)."""
    try:
        op.send(None)
        for reply in replies:
            op.send(reply)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the operation asked for more replies")


def test_tool_policy_names_skip_a_name_that_is_not_text() -> None:
    reported: list[tuple[str, str]] = []
    op = discovery.tool_policy_names("n", unreadable=lambda *r: reported.append(r))
    assert _run(op, [[b"search", b"\xff tool", "fetch"]]) == ["fetch", "search"]
    assert len(reported) == 1 and "n:__tool_policies" in reported[0][0]


@pytest.mark.parametrize(
    "marker",
    [b"\xff\xfe", b"not json", b'"a string"', b"[1, 2]", b"[" * 100_000, b'{"type": ["x"]}'],
    ids=["not-utf8", "not-json", "string", "list", "nested-too-deep", "type-not-text"],
)
def test_an_unreadable_marker_is_reported_and_replaced(marker: bytes) -> None:
    reported: list[tuple[str, str]] = []
    markers = {"n": (discovery.CACHE_TYPE, {"type": discovery.CACHE_TYPE})}
    op = discovery.register(markers, unreadable=lambda *r: reported.append(r))
    assert isinstance(_run(op, [[marker], ["OK", "OK"], "OK"]), str)  # the stamp
    assert len(reported) == 1 and "'n'" in reported[0][0]


def test_a_readable_marker_of_another_type_still_refuses() -> None:
    markers = {"n": (discovery.CACHE_TYPE, {})}
    op = discovery.register(markers, unreadable=lambda *r: None)
    with pytest.raises(InvalidInputError, match="taken by"):
        _run(op, [[json.dumps({"type": discovery.MEMORY_TYPE})]])


@pytest.fixture
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey")


def test_initialize_and_heartbeats_survive_damaged_discovery_fields(
    server: ServerInfo, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"a{uuid.uuid4().hex[:10]}"
    raw = redis.Redis.from_url(server.url)
    raw.hset(f"{name}:__tool_policies", mapping={b"\xff tool": b'{"ttl": 5}', b"ok": b'{"ttl": 5}'})
    raw.hset(discovery.REGISTRY_KEY, name, b"\xff\xfe")
    registry = CollectorRegistry()
    agent = SyncAgentMemory.from_url(
        server.url, name=name, embed=TableEmbedder(), registry=registry, heartbeat_interval=0.1
    )
    try:
        with caplog.at_level(logging.WARNING, logger="agent_memory.facade.sync_agent"):
            agent.initialize()
            marker = json.loads(raw.hget(discovery.REGISTRY_KEY, name) or b"")
            assert marker["type"] == discovery.CACHE_TYPE  # the damaged marker was replaced
            assert marker["tool_policies"] == ["ok"]
            raw.delete(discovery.heartbeat_key(name))
            deadline = time.monotonic() + 5
            while raw.get(discovery.heartbeat_key(name)) is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert raw.get(discovery.heartbeat_key(name)) is not None  # beats go on
        assert any("is unreadable" in r.getMessage() for r in caplog.records)
        events = registry.get_sample_value(
            "agent_memory_events_total", {"name": name, "event": "discovery_unreadable"}
        )
        failures = registry.get_sample_value(
            "agent_memory_events_total", {"name": name, "event": "heartbeat_failures"}
        )
        assert events is not None and events >= 2
        assert not failures
    finally:
        agent.close()
        raw.close()


def test_a_policy_hash_of_another_type_is_reported_and_keeps_the_previous_names() -> None:
    from agent_memory.errors import WrongTypeError

    reported: list[tuple[str, str]] = []
    op = discovery.tool_policy_names(
        "n", unreadable=lambda *r: reported.append(r), previous=["kept"]
    )
    op.send(None)
    with pytest.raises(StopIteration) as stop:
        op.throw(WrongTypeError("WRONGTYPE Operation against a key", command="HKEYS"))
    assert stop.value.value == ["kept"]
    assert len(reported) == 1 and reported[0][0] == "n:__tool_policies"


def _wait_for_heartbeat(raw: redis.Redis, field: str) -> bool:
    raw.delete(discovery.heartbeat_key(field))
    deadline = time.monotonic() + 5
    while raw.get(discovery.heartbeat_key(field)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return raw.get(discovery.heartbeat_key(field)) is not None


def test_a_policy_key_of_another_type_neither_blocks_initialize_nor_stops_the_heartbeat(
    server: ServerInfo,
) -> None:
    """HKEYS on a key another writer made a string raised WRONGTYPE: initialize() failed,
    and once started every beat failed before it refreshed the heartbeats."""
    name = f"a{uuid.uuid4().hex[:10]}"
    raw = redis.Redis.from_url(server.url)
    raw.set(f"{name}:__tool_policies", "oops")
    registry = CollectorRegistry()
    agent = SyncAgentMemory.from_url(
        server.url, name=name, embed=TableEmbedder(), registry=registry, heartbeat_interval=0.1
    )
    try:
        agent.initialize()
        assert json.loads(raw.hget(discovery.REGISTRY_KEY, name) or b"")["tool_policies"] == []
        raw.delete(f"{name}:__tool_policies")
        agent.tool.set_policy("search", ttl=60)
        assert _wait_for_heartbeat(raw, name)
        raw.delete(f"{name}:__tool_policies")
        raw.set(f"{name}:__tool_policies", "oops")  # damage after the start

        def count(event: str) -> float:
            labels = {"name": name, "event": event}
            return registry.get_sample_value("agent_memory_events_total", labels) or 0

        deadline = time.monotonic() + 5
        while count("discovery_unreadable") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # a beat read the damaged key (initialize reported it once)
        assert count("discovery_unreadable") >= 2
        assert _wait_for_heartbeat(raw, name)  # beats go on
        assert _wait_for_heartbeat(raw, f"{name}:mem")
        marker = json.loads(raw.hget(discovery.REGISTRY_KEY, name) or b"")
        assert marker["tool_policies"] == ["search"]  # the names read before are kept
        assert count("heartbeat_failures") == 0
    finally:
        agent.close()
        raw.delete(f"{name}:__tool_policies")
        raw.close()


async def test_initialize_replaces_a_marker_nested_too_deep_to_decode(server: ServerInfo) -> None:
    """json.loads raised RecursionError out of initialize()."""
    from agent_memory import AgentMemory

    name = f"a{uuid.uuid4().hex[:10]}"
    raw = redis.Redis.from_url(server.url)
    raw.hset(discovery.REGISTRY_KEY, f"{name}:mem", b"[" * 100_000)
    agent = AgentMemory.from_url(server.url, name=name, embed=TableEmbedder())
    try:
        async with agent:
            marker = json.loads(raw.hget(discovery.REGISTRY_KEY, f"{name}:mem") or b"")
            assert marker["type"] == discovery.MEMORY_TYPE
    finally:
        raw.hdel(discovery.REGISTRY_KEY, name, f"{name}:mem")
        raw.close()
