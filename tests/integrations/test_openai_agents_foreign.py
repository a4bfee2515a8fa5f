"""The OpenAI Agents SDK session meeting another client's key at its own name, on real
servers: a key of another type is refused and left exactly as it was."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agent_memory.errors import InvalidInputError, WrongTypeError
from agent_memory.integrations.openai_agents import AgentMemorySession

pytestmark = pytest.mark.integration


async def test_a_key_of_another_type_is_refused_and_keeps_its_lifetime(
    aclient: Any, raw: Any
) -> None:
    """Another client's string at the session's key: every call raises WrongTypeError
    and the key keeps its value and its (absent) expiry; the sliding TTL's PEXPIRE,
    sent beside the refused command, gave another client's key a lifetime, so the
    server deleted it later."""
    session = AgentMemorySession("s", client=aclient, name=f"oa{uuid.uuid4().hex[:10]}", ttl=60)
    raw.set(session.key, "another client's value")
    for call in (
        session.get_items,
        lambda: session.get_items(limit=2),
        lambda: session.add_items([{"role": "user", "content": "x"}]),
        session.pop_item,
    ):
        with pytest.raises(WrongTypeError):
            await call()
        assert raw.pttl(session.key) == -1
    assert raw.get(session.key) == "another client's value"


async def test_a_refused_call_is_not_counted(aclient: Any, raw: Any) -> None:
    """Calls refused on another client's key (WrongTypeError) are no reads or writes:
    their counts, sent beside them, are taken back on the session's next round trip;
    they stayed in ``session:reads`` / ``session:writes``."""
    name = f"oa{uuid.uuid4().hex[:10]}"
    session = AgentMemorySession("s", client=aclient, name=name, ttl=60)
    raw.set(session.key, "another client's value")
    for call in (
        session.get_items,
        lambda: session.add_items([{"role": "user", "content": "x"}]),
        session.pop_item,
    ):
        with pytest.raises(WrongTypeError):
            await call()
    raw.delete(session.key)  # the other client is done with it
    assert await session.get_items() == []
    stats = raw.hgetall(f"{name}:__stats")
    assert (stats.get("session:reads"), stats.get("session:writes", "0")) == ("1", "0")


async def test_a_long_append_with_a_lifetime_is_whole(aclient: Any, raw: Any) -> None:
    """Ten thousand items in one ``add_items`` with a TTL: one script pushes them in
    chunks (Lua's ``unpack`` has a stack limit) and restarts the lifetime."""
    session = AgentMemorySession("s", client=aclient, name=f"oa{uuid.uuid4().hex[:10]}", ttl=60)
    items = [{"role": "user", "content": str(i)} for i in range(10_000)]
    await session.add_items(items)  # type: ignore[arg-type]
    assert await session.get_items() == items
    assert 0 < raw.pttl(session.key) <= 60_000


async def test_session_settings_set_after_construction_are_read_as_the_sdk_reads_them(
    aclient: Any,
) -> None:
    """``session_settings`` is a public attribute of the SDK's protocol, and the SDK's
    own sessions resolve it with ``resolve_session_limit`` (a dict of its fields, or
    ``None``, is accepted): assigned a dict it raised AttributeError from get_items;
    junk raises InvalidInputError, before any I/O."""
    session = AgentMemorySession("s", client=aclient, name=f"oa{uuid.uuid4().hex[:10]}")
    await session.add_items([{"role": "user", "content": str(i)} for i in range(4)])  # type: ignore[list-item]
    session.session_settings = {"limit": 2}  # type: ignore[assignment]
    assert [i["content"] for i in await session.get_items()] == ["2", "3"]  # type: ignore[typeddict-item]
    session.session_settings = None
    assert len(await session.get_items()) == 4
    for junk in ({"limit": "many"}, {"unknown": 1}, 5):
        session.session_settings = junk  # type: ignore[assignment]
        with pytest.raises(InvalidInputError):
            await session.get_items()
