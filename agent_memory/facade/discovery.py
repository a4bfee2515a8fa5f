"""The BetterDB Monitor discovery protocol (operations; no I/O here).

Monitor finds every instance on a server with no configuration by reading the hash
``__betterdb:caches``: one field per instance (``{name}:mem`` for the memory store,
``{name}`` for the cache tiers) holding a JSON marker, and a heartbeat key
``__betterdb:heartbeat:{field}`` that expires 60 s after its last refresh (refreshed
every 30 s). ``__betterdb:protocol`` holds the protocol version.
"""

from __future__ import annotations

import json
import math
import os
import socket
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from agent_memory._version import __version__
from agent_memory.core.effects import Operation, command, execute, execute_batch
from agent_memory.core.replies import optional_text, raise_first_error, text
from agent_memory.errors import InvalidInputError, ReplyParseError, ServerResponseError
from agent_memory.schema import scripts

PROTOCOL_VERSION = 1
REGISTRY_KEY = "__betterdb:caches"
PROTOCOL_KEY = "__betterdb:protocol"
HEARTBEAT_PREFIX = "__betterdb:heartbeat:"
HEARTBEAT_TTL_SECONDS = 60
HEARTBEAT_INTERVAL_SECONDS = 30.0
MAX_HEARTBEAT_INTERVAL = HEARTBEAT_TTL_SECONDS / 2  # a late beat still lands in time
MEMORY_TYPE = "agent_memory"
CACHE_TYPE = "agent_cache"
_MAX_TOOL_POLICIES = 500

Unreadable = Callable[[str, str], None]
"""Report of a value another writer damaged: ``(what, why)``; the value is skipped."""


def now_iso() -> str:
    """Current UTC time, ISO-8601."""
    return datetime.now(timezone.utc).isoformat()


def memory_marker(
    name: str, *, started_at: str, backend: str | None, threshold: float
) -> dict[str, Any]:
    """The marker of a memory store."""
    return {
        "type": MEMORY_TYPE,
        "prefix": name,
        "version": __version__,
        "protocol_version": PROTOCOL_VERSION,
        "capabilities": ["recall", "consolidate", "reinforce", "forget", "ttl", "capacity"],
        "stats_key": f"{name}:__mem_stats",
        "index_name": f"{name}:mem:idx",
        "config_key": f"{name}:__mem_config",
        "backend": backend,
        "recall_threshold": threshold,
        "started_at": started_at,
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
    }


def cache_marker(
    name: str,
    *,
    started_at: str,
    tiers: Mapping[str, float | None],
    tool_policies: Sequence[str],
    has_cost_table: bool,
    uses_default_cost_table: bool,
) -> dict[str, Any]:
    """The marker of the cache tiers (``tiers`` maps tier name to default TTL)."""
    marker: dict[str, Any] = {
        "type": CACHE_TYPE,
        "prefix": name,
        "version": __version__,
        "protocol_version": PROTOCOL_VERSION,
        "capabilities": ["tool_ttl_adjust", "invalidate_by_tool", "tool_effectiveness"],
        "stats_key": f"{name}:__stats",
        "tiers": {
            tier: {"enabled": True, **({"ttl_default": math.ceil(ttl)} if ttl is not None else {})}
            for tier, ttl in tiers.items()
        },
        "tool_policies": list(tool_policies[:_MAX_TOOL_POLICIES]),
        "has_cost_table": has_cost_table,
        "uses_default_cost_table": uses_default_cost_table,
        "started_at": started_at,
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
    }
    if len(tool_policies) > _MAX_TOOL_POLICIES:
        marker["tool_policies_truncated"] = True
    return marker


def heartbeat_key(field: str) -> str:
    return HEARTBEAT_PREFIX + field


def _check_owner(field: str, existing: Any, expected_type: str, unreadable: Unreadable) -> None:
    try:
        raw = optional_text(existing)
        found = None if raw is None else json.loads(raw).get("type")
        if found is not None and not isinstance(found, str):
            raise ValueError(f"its type is a JSON {type(found).__name__}, not a string")
    except (ReplyParseError, ValueError, AttributeError, RecursionError) as exc:
        # An unreadable marker (not UTF-8, not a JSON object, nested too deep to decode,
        # a type that is not text) is simply replaced.
        unreadable(f"the marker {field!r} of {REGISTRY_KEY}", f"{exc or type(exc).__name__}")
        return
    if found and found != expected_type:
        raise InvalidInputError(
            f"discovery field {field!r} of {REGISTRY_KEY} is taken by a {found!r} "
            f"instance; choose another name for this {expected_type}",
            field="name",
        )


def register(
    markers: Mapping[str, tuple[str, dict[str, Any]]], *, unreadable: Unreadable
) -> Operation[str]:
    """Write markers (``field -> (type, marker)``), the protocol key and heartbeats. An
    existing marker that cannot be read is reported to ``unreadable`` and replaced.
    Returns the heartbeats' stamp (for :func:`unregister`).

    Raises:
        InvalidInputError: a field already holds a marker of another type.
    """
    fields = list(markers)
    existing = yield from execute("HMGET", REGISTRY_KEY, *fields)
    for field, value in zip(fields, existing or [None] * len(fields), strict=True):
        _check_owner(field, value, markers[field][0], unreadable)
    stamp = yield from heartbeat(markers)
    yield from execute("SET", PROTOCOL_KEY, str(PROTOCOL_VERSION), "NX")
    return stamp


def heartbeat(markers: Mapping[str, tuple[str, dict[str, Any]]]) -> Operation[str]:
    """Refresh heartbeats and re-write markers (so a server restarted empty is repaired).
    Returns the stamp the heartbeats hold (for :func:`unregister`)."""
    stamp = now_iso()
    commands = []
    for field, (_, marker) in markers.items():
        commands.append(command("HSET", REGISTRY_KEY, field, json.dumps(marker)))
        commands.append(
            command("SET", heartbeat_key(field), stamp, "EX", str(HEARTBEAT_TTL_SECONDS))
        )
    replies = yield from execute_batch(commands)
    raise_first_error(replies)
    return stamp


def unregister(fields: Sequence[str], stamp: str | None) -> Operation[None]:
    """Delete the heartbeats that still hold ``stamp``, the last one this instance wrote
    (``None``: it wrote none); one another instance of the same name wrote since stays.
    The markers stay, so Monitor shows the instance as gone."""
    if fields and stamp is not None:
        replies = yield from execute_batch(
            [command("EVAL", scripts.DELETE_IF_HOLDS, "1", heartbeat_key(f), stamp) for f in fields]
        )
        raise_first_error(replies)


def tool_policy_names(
    name: str, *, unreadable: Unreadable, previous: Sequence[str] = ()
) -> Operation[list[str]]:
    """Names of the tools with a persisted TTL policy (a best-effort extra of the
    marker); a name that is not text (another writer's damage) is reported to
    ``unreadable`` and left out. A policy hash the server refuses to read (another
    writer gave the key another type) is reported too, and ``previous`` is returned:
    it never stops a registration or a heartbeat.

    Raises:
        ServerUnavailableError, OperationTimeoutError: the server cannot be reached.
    """
    key = f"{name}:__tool_policies"
    try:
        reply = yield from execute("HKEYS", key)
    except ServerResponseError as exc:
        unreadable(key, f"{exc}; the previous tool names are kept")
        return list(previous)
    names = []
    for raw in reply or []:
        try:
            names.append(text(raw))
        except ReplyParseError as exc:
            unreadable(f"a tool name in {key} ({raw!r})", str(exc))
    return sorted(names)
