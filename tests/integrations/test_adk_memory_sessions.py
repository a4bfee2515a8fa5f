"""``AgentMemoryMemoryService.add_session_to_memory`` on real servers: adding a session
replaces what it stored before (ADK's ``InMemoryMemoryService`` replaces the session's
events), and one event over the store's text limit is cut, not fatal to the add."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types
from prometheus_client import CollectorRegistry

from agent_memory import MemoryStore, Scope
from agent_memory.embedders import HashingEmbedder
from agent_memory.integrations.adk import AgentMemoryMemoryService
from tests.conftest import _Servers
from tests.integrations.targets import KINDS, PACKAGES

pytestmark = pytest.mark.integration

TARGETS = [(k, p) for k in KINDS for p in PACKAGES]


@pytest.fixture(params=TARGETS, ids=[f"{k}-{p.name}" for k, p in TARGETS])
async def client(request: pytest.FixtureRequest, servers: _Servers) -> AsyncIterator[Any]:
    kind, package = request.param
    c = package.client(servers.get(kind).url)
    yield c
    await c.aclose()


def _service(client: Any, registry: CollectorRegistry | None = None) -> AgentMemoryMemoryService:
    name = f"adk{uuid.uuid4().hex[:10]}"
    store = MemoryStore(client, name, HashingEmbedder(), adopt_interval=None, registry=registry)
    return AgentMemoryMemoryService(store)


def _event(text: str, event_id: str) -> Event:
    content = types.Content(role="user", parts=[types.Part(text=text)])
    return Event(id=event_id, author="user", content=content)


def _session(events: list[Event], session_id: str = "s1", user_id: str = "alice") -> Session:
    return Session(id=session_id, app_name="app", user_id=user_id, events=events)


async def _texts(service: BaseMemoryService, user_id: str = "alice") -> list[str]:
    """Every memory of (app, user), by a query matching all (ADK's service matches
    words; ours lists the store)."""
    if isinstance(service, AgentMemoryMemoryService):
        page = await service.store.list(Scope(namespace="app", agent_id=user_id), limit=100)
        return sorted(i.content for i in page.items)
    found = await service.search_memory(app_name="app", user_id=user_id, query="note")
    return sorted(m.content.parts[0].text or "" for m in found.memories)


async def test_adding_a_rewound_session_replaces_its_memories(client: Any) -> None:
    ours = _service(client)
    for service in (InMemoryMemoryService(), ours):
        first = [_event(f"note {w}", f"e{i}") for i, w in enumerate(("one", "two", "three"))]
        await service.add_session_to_memory(_session(first))
        await service.add_session_to_memory(_session(first, session_id="s2"))  # untouched
        await service.add_events_to_memory(
            app_name="app", user_id="alice", events=[_event("note extra", "x")], session_id="s1"
        )  # a delta of s1: ADK's service replaces it with the session's events too
        await service.add_session_to_memory(_session(first, user_id="bob"))  # another user
        rewound = [first[0], _event("note four", "e4")]  # rewound past e1, then e4
        await service.add_session_to_memory(_session(rewound))
        assert await _texts(service) == [
            "note four", "note one", "note one", "note three", "note two",
        ], type(service).__name__  # fmt: skip
        assert await _texts(service, "bob") == ["note one", "note three", "note two"]
    # Our memories of the explicit entries (no thread) are never a session's.
    await ours.add_memory(
        app_name="app", user_id="alice",
        memories=[MemoryEntry(content=types.Content(parts=[types.Part(text="note kept")]))],
    )  # fmt: skip
    await ours.add_session_to_memory(_session([]))  # every event of s1 gone
    assert await _texts(ours) == ["note kept", "note one", "note three", "note two"]


async def test_an_event_over_the_text_limit_is_cut_and_the_rest_stored(client: Any) -> None:
    registry = CollectorRegistry()
    service = _service(client, registry)
    limit = service.store.max_content_bytes
    long_text = "é" * limit  # twice the limit in UTF-8 bytes
    events = [_event("note before", "a"), _event(long_text, "b"), _event("note after", "c")]
    await service.add_session_to_memory(_session(events))
    texts = await _texts(service)
    assert texts[:2] == ["note after", "note before"]
    assert texts[2] == "é" * (limit // 2)  # cut at a character boundary
    sample = registry.get_sample_value(
        "agent_memory_events_total", {"name": service.store.name, "event": "truncated_contents"}
    )
    assert sample == 1


async def test_an_event_with_characters_the_store_refuses_is_cleaned_and_the_rest_stored(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool's output with ANSI colours (an escape character) or a lone surrogate: the
    store refuses those characters, so the whole add failed; they become a space and
    U+FFFD, logged, and every event is stored."""
    service = _service(client)
    events = [
        _event("note before", "a"),
        _event("\x1b[32mok\x1b[0m", "b"),
        _event("half \ud83d pair", "c"),
    ]
    await service.add_session_to_memory(_session(events))
    assert sorted(await _texts(service)) == sorted(
        ["note before", " [32mok [0m", "half \ufffd pair"]
    )
    assert "2 ADK event text(s) held control characters" in caplog.text
