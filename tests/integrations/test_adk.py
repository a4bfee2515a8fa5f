"""The Google ADK services against the real ``google-adk`` and real servers.

ADK ships no reusable session-service suite (its sdist has no tests), so the behaviours
of ``tests/unittests/sessions/test_session_service.py`` in google/adk-python are ported
here and run against ``InMemorySessionService`` *and* ours, with the same assertions;
a scripted scenario is also run on both and the results compared. Servers: plain
Valkey and Valkey + valkey-search 1.2, with both client packages (valkey: RESP2,
bytes; redis: RESP3, str).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import datetime
from typing import Any

import google.adk.platform.time as platform_time
import pytest
from google.adk.agents import LlmAgent
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types
from pydantic import Field

from agent_memory import MemoryStore, Scope
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import InvalidInputError
from agent_memory.integrations.adk import AgentMemoryMemoryService, AgentMemorySessionService
from agent_memory.integrations.adk.layout import Layout
from tests.conftest import MISSING_KINDS, _Servers
from tests.integrations.targets import KINDS, PACKAGES

pytestmark = pytest.mark.integration

TARGETS = [(k, p) for k in KINDS for p in PACKAGES]
TARGET_IDS = [f"{k}-{p.name}" for k, p in TARGETS]


def _name() -> str:
    return f"adk{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=TARGETS, ids=TARGET_IDS)
async def client(request: pytest.FixtureRequest, servers: _Servers) -> AsyncIterator[Any]:
    kind, package = request.param
    c = package.client(servers.get(kind).url)
    yield c
    await c.aclose()


@pytest.fixture
def ours(client: Any) -> AgentMemorySessionService:
    return AgentMemorySessionService(client, name=_name())


@pytest.fixture(params=["in-memory", "ours"])
def service(request: pytest.FixtureRequest, ours: AgentMemorySessionService) -> BaseSessionService:
    """Each ported ADK behaviour runs on InMemorySessionService and on ours."""
    return InMemorySessionService() if request.param == "in-memory" else ours


# -- ported from ADK's test_session_service.py ---------------------------------------------


async def test_get_empty_session(service: BaseSessionService) -> None:
    assert await service.get_session(app_name="my_app", user_id="u", session_id="123") is None


async def test_create_get_delete_session(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u", state={"key": "v"})
    assert session.id and session.state == {"key": "v"} and session.events == []
    got = await service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got == session
    await service.delete_session(app_name="my_app", user_id="u", session_id=session.id)
    assert await service.get_session(app_name="my_app", user_id="u", session_id=session.id) is None
    await service.delete_session(app_name="my_app", user_id="u", session_id=session.id)  # no-op


async def test_create_and_list_sessions(service: BaseSessionService) -> None:
    ids = [f"session{i}" for i in range(5)]
    for sid in ids:
        await service.create_session(
            app_name="my_app", user_id="u", session_id=sid, state={"key": "value" + sid}
        )
    sessions = (await service.list_sessions(app_name="my_app", user_id="u")).sessions
    assert [s.id for s in sessions] == ids  # oldest update first
    for s in sessions:
        assert s.state == {"key": "value" + s.id} and s.events == []


async def test_list_sessions_all_users(service: BaseSessionService) -> None:
    for user, sid in (("user1", "s1a"), ("user1", "s1b"), ("user2", "s2a")):
        await service.create_session(
            app_name="my_app", user_id=user, session_id=sid, state={"key": sid}
        )
    one = (await service.list_sessions(app_name="my_app", user_id="user1")).sessions
    assert {s.id: s.state for s in one} == {"s1a": {"key": "s1a"}, "s1b": {"key": "s1b"}}
    every = (await service.list_sessions(app_name="my_app", user_id=None)).sessions
    assert {(s.user_id, s.id) for s in every} == {
        ("user1", "s1a"),
        ("user1", "s1b"),
        ("user2", "s2a"),
    }
    assert (await service.list_sessions(app_name="other", user_id=None)).sessions == []


async def test_app_state_is_shared_by_all_users_of_app(service: BaseSessionService) -> None:
    s1 = await service.create_session(
        app_name="my_app", user_id="u1", session_id="s1", state={"app:k1": "v1"}
    )
    event = Event(
        invocation_id="inv1", author="user", actions=EventActions(state_delta={"app:k2": "v2"})
    )
    await service.append_event(s1, event)
    s2 = await service.create_session(app_name="my_app", user_id="u2", session_id="s2")
    assert s2.state == {"app:k1": "v1", "app:k2": "v2"}
    got = await service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert got is not None and got.state == {"app:k1": "v1", "app:k2": "v2"}


async def test_user_state_is_shared_only_by_user_sessions(service: BaseSessionService) -> None:
    s1 = await service.create_session(
        app_name="my_app", user_id="u1", session_id="s1", state={"user:k1": "v1"}
    )
    event = Event(
        invocation_id="inv1", author="user", actions=EventActions(state_delta={"user:k2": "v2"})
    )
    await service.append_event(s1, event)
    s1b = await service.create_session(app_name="my_app", user_id="u1", session_id="s1b")
    assert s1b.state == {"user:k1": "v1", "user:k2": "v2"}
    s2 = await service.create_session(app_name="my_app", user_id="u2", session_id="s2")
    assert s2.state == {}
    assert await service.get_user_state(app_name="my_app", user_id="u1") == {"k1": "v1", "k2": "v2"}
    assert await service.get_user_state(app_name="my_app", user_id="u2") == {}
    assert await service.get_user_state(app_name="other_app", user_id="u1") == {}


async def test_session_state_is_not_shared(service: BaseSessionService) -> None:
    s1 = await service.create_session(
        app_name="my_app", user_id="u1", session_id="s1", state={"sk1": "v1"}
    )
    event = Event(
        invocation_id="inv1", author="user", actions=EventActions(state_delta={"sk2": "v2"})
    )
    await service.append_event(s1, event)
    got = await service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert got is not None and got.state == {"sk1": "v1", "sk2": "v2"}
    s1b = await service.create_session(app_name="my_app", user_id="u1", session_id="s1b")
    assert s1b.state == {}


async def test_temp_state_is_not_persisted(service: BaseSessionService) -> None:
    session = await service.create_session(
        app_name="my_app", user_id="u1", session_id="s1", state={"temp:gone": 1}
    )
    assert "temp:gone" not in session.state
    event = Event(
        invocation_id="inv1",
        author="user",
        actions=EventActions(state_delta={"temp:k1": "v1", "sk": "v2"}),
    )
    await service.append_event(session, event)
    assert session.state.get("temp:k1") == "v1" and session.state.get("sk") == "v2"
    assert "temp:k1" not in event.actions.state_delta
    got = await service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert got is not None and got.state == {"sk": "v2"}
    assert got.events[0].actions.state_delta == {"sk": "v2"}


async def test_get_session_respects_user_id(service: BaseSessionService) -> None:
    s1 = await service.create_session(app_name="my_app", user_id="u1", session_id="s1")
    await service.append_event(s1, Event(invocation_id="inv1", author="user"))
    await service.create_session(app_name="my_app", user_id="u2", session_id="s1")
    got = await service.get_session(app_name="my_app", user_id="u2", session_id="s1")
    assert got is not None and got.user_id == "u2" and got.events == []


async def test_create_session_with_existing_id_raises(service: BaseSessionService) -> None:
    await service.create_session(app_name="my_app", user_id="u", session_id="existing")
    with pytest.raises(AlreadyExistsError):
        await service.create_session(
            app_name="my_app", user_id="u", session_id="existing", state={"app:x": 1}
        )
    got = await service.get_session(app_name="my_app", user_id="u", session_id="existing")
    assert got is not None and got.state == {}  # the refused create wrote no app: state


async def test_append_event_bytes(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u")
    content = types.Content(
        role="user", parts=[types.Part.from_bytes(data=b"\x00image\xff", mime_type="image/png")]
    )
    grounding = types.GroundingMetadata(
        search_entry_point=types.SearchEntryPoint(sdk_blob=b"test_sdk_blob")
    )
    event = Event(invocation_id="i", author="user", content=content, grounding_metadata=grounding)
    await service.append_event(session, event)
    got = await service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got is not None and len(got.events) == 1
    assert got.events[0].content == content
    assert got.events[0].grounding_metadata == grounding


async def test_append_event_complete(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u")
    event = Event(
        invocation_id="invocation",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="test_text")]),
        turn_complete=True,
        partial=False,
        actions=EventActions(artifact_delta={"file": 0}, transfer_to_agent="agent", escalate=True),
        long_running_tool_ids={"tool1"},
        error_code="error_code",
        error_message="error_message",
        interrupted=True,
        grounding_metadata=types.GroundingMetadata(web_search_queries=["query1"]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2
        ),
        citation_metadata=types.CitationMetadata(),
        custom_metadata={"custom_key": "custom_value"},
        timestamp=1700000000.123,
        input_transcription=types.Transcription(text="in", finished=True),
        output_transcription=types.Transcription(text="out", finished=True),
    )
    await service.append_event(session, event)
    got = await service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got == session


async def test_last_update_time_follows_events(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u")
    stamp = session.last_update_time + 10
    await service.append_event(session, Event(invocation_id="i", author="user", timestamp=stamp))
    assert session.last_update_time == stamp
    got = await service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got is not None and got.last_update_time == stamp


async def test_get_session_with_config(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u")
    for i in range(1, 6):
        await service.append_event(session, Event(author="user", timestamp=i))

    async def stamps(**config: Any) -> list[float]:
        got = await service.get_session(
            app_name="my_app",
            user_id="u",
            session_id=session.id,
            config=GetSessionConfig(**config) if config else None,
        )
        assert got is not None
        return [e.timestamp for e in got.events]

    assert await stamps() == [1, 2, 3, 4, 5]
    assert await stamps(num_recent_events=0) == []
    assert await stamps(num_recent_events=3) == [3, 4, 5]
    assert await stamps(num_recent_events=9) == [1, 2, 3, 4, 5]
    assert await stamps(after_timestamp=4.0) == [4, 5]
    assert await stamps(after_timestamp=50.0) == []
    assert await stamps(after_timestamp=4.0, num_recent_events=3) == [4, 5]
    assert await stamps(after_timestamp=0.0, num_recent_events=2) == [4, 5]


async def test_partial_events_are_not_persisted(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u")
    await service.append_event(session, Event(author="user", partial=True))
    assert session.events == []
    got = await service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got is not None and got.events == []


async def test_get_user_state_reflects_latest_write(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u1")
    for value in (1, 2):
        delta = {"user:counter": value, "user:profile": {"name": "Alice"}, "session_key": 1}
        await service.append_event(
            session, Event(author="system", actions=EventActions(state_delta=delta))
        )
    state = await service.get_user_state(app_name="my_app", user_id="u1")
    assert state == {"counter": 2, "profile": {"name": "Alice"}}


async def test_append_to_missing_session_raises(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u", session_id="s")
    await service.delete_session(app_name="my_app", user_id="u", session_id="s")
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, Event(author="user"))


async def test_redelivered_event_is_appended_once(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u", session_id="s")
    event = Event(author="user", actions=EventActions(state_delta={"n": 1}))
    await service.append_event(session, event)
    await service.append_event(session, event)
    got = await service.get_session(app_name="my_app", user_id="u", session_id="s")
    assert got is not None and [e.id for e in got.events] == [event.id]


async def test_session_ids_are_stripped(service: BaseSessionService) -> None:
    session = await service.create_session(app_name="my_app", user_id="u", session_id="  s1 ")
    assert session.id == "s1"
    assert await service.get_session(app_name="my_app", user_id="u", session_id=" s1") is not None


# -- the same scenario on both services ------------------------------------------------------


async def _scenario(service: BaseSessionService) -> list[Any]:
    out: list[Any] = []
    a = await service.create_session(
        app_name="app", user_id="alice", session_id="a1", state={"app:theme": "dark", "x": 1}
    )
    b = await service.create_session(app_name="app", user_id="bob", session_id="a1")
    for i, (who, delta) in enumerate(
        [
            (a, {"user:lang": "fr", "x": 2, "temp:t": 0}),
            (b, {"app:theme": "light", "y": [1, {"z": None}]}),
            (a, {"x": 3.5, "user:lang": "en"}),
        ]
    ):
        text = types.Content(role="user", parts=[types.Part(text=f"turn {i}")])
        event = Event(
            id=f"e{i}",
            invocation_id=f"inv{i}",
            author="user",
            content=text,
            timestamp=1000.0 + i,
            actions=EventActions(state_delta=delta),
        )
        await service.append_event(who, event)
        out.append(who.model_dump(mode="json"))
    for user in ("alice", "bob", "carol"):
        got = await service.get_session(app_name="app", user_id=user, session_id="a1")
        out.append(None if got is None else got.model_dump(mode="json"))
        out.append(await service.get_user_state(app_name="app", user_id=user))
    listed = await service.list_sessions(app_name="app", user_id=None)
    out.append([s.model_dump(mode="json") for s in listed.sessions])
    await service.delete_session(app_name="app", user_id="alice", session_id="a1")
    out.append(
        (await service.list_sessions(app_name="app", user_id="alice")).model_dump(mode="json")
    )
    return out


async def test_scenario_matches_in_memory_service(client: Any) -> None:
    ticks = iter(range(1, 100))
    ours = AgentMemorySessionService(client, name=_name(), clock=lambda: float(next(ticks)))
    reference_ticks = iter(range(1, 100))
    platform_time.set_time_provider(lambda: float(next(reference_ticks)))
    try:
        expected = await _scenario(InMemorySessionService())
    finally:
        platform_time.reset_time_provider()
    assert await _scenario(ours) == expected


# -- our own: staleness, isolation, layout, TTL, bad input ------------------------------------


async def test_stale_session_is_refused(ours: AgentMemorySessionService) -> None:
    original = await ours.create_session(app_name="app", user_id="u", session_id="s")
    now = original.last_update_time
    await ours.append_event(original, Event(author="user", timestamp=now + 1))
    fresh = await ours.get_session(app_name="app", user_id="u", session_id="s")
    assert fresh is not None
    await ours.append_event(
        fresh, Event(author="user", timestamp=now + 2, actions=EventActions(state_delta={"k": 2}))
    )
    with pytest.raises(StaleSessionError, match="modified in storage"):
        await ours.append_event(
            original,
            Event(author="user", timestamp=now + 3, actions=EventActions(state_delta={"k": 3})),
        )
    final = await ours.get_session(app_name="app", user_id="u", session_id="s")
    assert final is not None and len(final.events) == 2 and final.state == {"k": 2}


async def test_concurrent_stale_writers_one_wins(ours: AgentMemorySessionService) -> None:
    session = await ours.create_session(app_name="app", user_id="u")
    for i in range(5):
        latest = await ours.get_session(app_name="app", user_id="u", session_id=session.id)
        assert latest is not None
        copies = [latest.model_copy(deep=True) for _ in range(2)]
        base = latest.last_update_time + 10
        results = await asyncio.gather(
            *(
                ours.append_event(
                    c,
                    Event(
                        author="user",
                        timestamp=base + j,
                        actions=EventActions(state_delta={f"k{i}": j}),
                    ),
                )
                for j, c in enumerate(copies)
            ),
            return_exceptions=True,
        )
        assert sum(isinstance(r, StaleSessionError) for r in results) == 1
    final = await ours.get_session(app_name="app", user_id="u", session_id=session.id)
    assert final is not None and len(final.events) == 5


async def test_isolation_between_apps_and_users(ours: AgentMemorySessionService) -> None:
    pairs = [("app1", "u1"), ("app1", "u2"), ("app2", "u1"), ("app1:u", "1"), ("app1", "u1 ")]
    for app, user in pairs:
        s = await ours.create_session(
            app_name=app,
            user_id=user,
            session_id="same",
            state={"who": [app, user], f"user:{user}": app},
        )
        await ours.append_event(s, Event(author=f"{app}/{user}"))
    for app, user in pairs:
        got = await ours.get_session(app_name=app, user_id=user, session_id="same")
        assert got is not None
        assert got.state == {"who": [app, user], f"user:{user}": app}
        assert [e.author for e in got.events] == [f"{app}/{user}"]
        assert await ours.get_user_state(app_name=app, user_id=user) == {user: app}
        listed = (await ours.list_sessions(app_name=app, user_id=user)).sessions
        assert [(s.app_name, s.user_id, s.id) for s in listed] == [(app, user, "same")]
    await ours.delete_session(app_name="app1", user_id="u1", session_id="same")
    assert await ours.get_session(app_name="app1", user_id="u2", session_id="same") is not None
    assert await ours.get_session(app_name="app1", user_id="u1 ", session_id="same") is not None


async def test_keys_of_a_user_share_one_slot_and_ttl_applies(client: Any) -> None:
    name = _name()
    service = AgentMemorySessionService(client, name=name, ttl=60)
    s = await service.create_session(
        app_name="app", user_id="u", state={"app:a": 1, "user:b": 2, "c": 3}
    )
    await service.append_event(s, Event(author="user", actions=EventActions(state_delta={"d": 4})))
    found = [k async for k in client.scan_iter(match=f"{name}:*")]
    keys = sorted(k.decode() if isinstance(k, bytes) else k for k in found)
    layout = Layout(name)
    user_root, app_root = layout.user_root("app", "u"), layout.app_root("app")
    assert {k.split("}")[0] + "}" for k in keys} == {user_root, app_root}
    assert len([k for k in keys if k.startswith(user_root)]) == 7
    for key in keys:
        assert 0 < await client.pttl(key) <= 60_000


async def test_bad_input_raises_library_errors(ours: AgentMemorySessionService) -> None:
    with pytest.raises(InvalidInputError):
        await ours.create_session(app_name="", user_id="u")
    with pytest.raises(InvalidInputError):
        await ours.get_session(app_name="a", user_id=None, session_id="s")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        await ours.create_session(app_name="a", user_id="u", state={"f": lambda: 1})
    assert await ours.get_session(app_name="a", user_id="u", session_id="s") is None
    with pytest.raises(InvalidInputError):
        await ours.get_session(app_name="a", user_id="u", session_id="s", config=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        AgentMemorySessionService(object())
    with pytest.raises(InvalidInputError):
        AgentMemorySessionService(ours._executor.client, ttl=0)
    with pytest.raises(ValueError):  # GetSessionConfig's own validation
        GetSessionConfig(num_recent_events=-1)


@pytest.mark.parametrize("timestamp", [float("nan"), float("inf"), float("-inf")])
async def test_an_event_time_with_no_json_form_is_refused_before_anything_is_written(
    ours: AgentMemorySessionService, timestamp: float
) -> None:
    """A non-finite event timestamp has no JSON form (pydantic writes ``null``): stored,
    it would make the session unreadable (and NaN failed the script half-way, its
    event and state delta already written)."""
    s = await ours.create_session(app_name="app", user_id="u", session_id="s")
    await ours.append_event(s, Event(author="user", invocation_id="i", timestamp=1.0))
    bad = Event(
        author="user", invocation_id="i", timestamp=timestamp,
        actions=EventActions(state_delta={"k": "v"}),
    )  # fmt: skip
    with pytest.raises(InvalidInputError, match="timestamp") as caught:
        await ours.append_event(s, bad)
    assert caught.value.field == "event"
    stored = await ours.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None and len(stored.events) == 1 and "k" not in stored.state
    await ours.append_event(stored, Event(author="user", invocation_id="i", timestamp=2.0))
    config = GetSessionConfig(after_timestamp=float("nan"))
    with pytest.raises(InvalidInputError, match="after_timestamp"):
        await ours.get_session(app_name="app", user_id="u", session_id="s", config=config)


async def test_lone_surrogates_are_refused_before_anything_is_written(
    ours: AgentMemorySessionService, client: Any
) -> None:
    """A lone surrogate (no UTF-8 form) in a state value, a state key or an id is
    refused by the checks, not by the client's encoder once the session is stored."""
    bad_states: list[dict[str, Any]] = [
        {"app:greeting": "hi \ud83d"},
        {"user:x": ["ok", {"deep": "\udc00"}]},
        {"plain": "\ud800"},
        {"key\udc00": 1},
        {"app:key\ud800": 1},
    ]
    for state in bad_states:
        with pytest.raises(InvalidInputError) as caught:
            await ours.create_session(app_name="app", user_id="u", session_id="s1", state=state)
        assert caught.value.field == "state"
    for ids in (
        {"app_name": "app", "user_id": "u", "session_id": "s\udc00"},
        {"app_name": "app", "user_id": "u\udc00", "session_id": "s1"},
        {"app_name": "a\ud83d", "user_id": "u", "session_id": "s1"},
    ):
        with pytest.raises(InvalidInputError) as caught:
            await ours.create_session(**ids)
        assert caught.value.field in {"app_name", "user_id", "session_id"}
    assert [k async for k in client.scan_iter(match=f"{ours.name}:*")] == []
    created = await ours.create_session(
        app_name="app", user_id="u", session_id="s1", state={"app:greeting": "hi \U0001f600"}
    )  # the retry is not refused as a duplicate
    assert created.state == {"app:greeting": "hi \U0001f600"}
    delta = EventActions(state_delta={"app:x": "y \udc00"})
    with pytest.raises(InvalidInputError):
        await ours.append_event(created, Event(author="a", invocation_id="i", actions=delta))
    stored = await ours.get_session(app_name="app", user_id="u", session_id="s1")
    assert stored is not None and stored.events == [] and "app:x" not in stored.state


@pytest.mark.parametrize("ttl", [float("inf"), float("nan"), 1e300, 10 * 365 * 86400 + 1, -1])
async def test_a_ttl_out_of_range_is_refused_at_construction(client: Any, ttl: float) -> None:
    with pytest.raises(InvalidInputError) as caught:
        AgentMemorySessionService(client, name=_name(), ttl=ttl)
    assert caught.value.field == "ttl"
    with pytest.raises(InvalidInputError):
        AgentMemorySessionService.from_url("redis://127.0.0.1:1", name=_name(), ttl=ttl)


async def test_the_longest_ttl_is_accepted(client: Any) -> None:
    name = _name()
    service = AgentMemorySessionService(client, name=name, ttl=10 * 365 * 86400)
    await service.create_session(app_name="app", user_id="u", session_id="s", state={"app:a": 1})
    found = [k async for k in client.scan_iter(match=f"{name}:*")]
    assert len(found) == 4  # meta, sessions, app state, users
    for key in found:
        assert await client.pttl(key) > 9 * 365 * 86400 * 1000


async def test_a_session_in_use_keeps_its_apps_state_and_listing_alive(client: Any) -> None:
    """The TTL slides on every read or write of a session for the app's keys too: an
    ``app:`` state written once, and the app's list of users, live as long as a session
    of the app is read or appended to, not ``ttl`` after their own last write."""
    name = _name()
    service = AgentMemorySessionService(client, name=name, ttl=60)
    s = await service.create_session(app_name="app", user_id="u", state={"app:a": 1})
    layout = Layout(name)
    app_keys = (layout.app_state("app"), layout.users("app"))

    async def shortened() -> None:  # as if most of the TTL had run out since the write
        for key in app_keys:
            await client.pexpire(key, 5_000)

    await shortened()
    s = await service.get_session(app_name="app", user_id="u", session_id=s.id)
    assert s is not None
    for key in app_keys:
        assert await client.pttl(key) > 5_000
    await shortened()
    await service.append_event(s, Event(author="user", invocation_id="i"))
    for key in app_keys:
        assert await client.pttl(key) > 5_000
    await shortened()
    await service.create_session(app_name="app", user_id="u2")
    for key in app_keys:
        assert await client.pttl(key) > 5_000


# -- memory service -----------------------------------------------------------------------------


@pytest.fixture
async def memory(client: Any) -> AgentMemoryMemoryService:
    store = MemoryStore(client, _name(), HashingEmbedder(), adopt_interval=None)
    return AgentMemoryMemoryService(store)


def _text_event(text: str, author: str = "user", **kw: Any) -> Event:
    return Event(
        author=author, content=types.Content(role="user", parts=[types.Part(text=text)]), **kw
    )


async def test_add_session_and_search(
    memory: AgentMemoryMemoryService, ours: AgentMemorySessionService
) -> None:
    session = await ours.create_session(app_name="app", user_id="alice")
    await ours.append_event(
        session, _text_event("I love hiking in the Alps", timestamp=1700000000.0)
    )
    await ours.append_event(session, _text_event("Noted: hiking in the Alps", author="agent"))
    await ours.append_event(session, Event(author="agent"))  # no text: not stored
    await memory.add_session_to_memory(session)
    await memory.add_session_to_memory(session)  # idempotent
    listed = await memory.store.list(memory_mapping_scope("app", "alice"))
    assert listed.total == 2
    found = await memory.search_memory(app_name="app", user_id="alice", query="hiking Alps")
    assert {m.content.parts[0].text for m in found.memories} == {
        "I love hiking in the Alps",
        "Noted: hiking in the Alps",
    }
    first = next(m for m in found.memories if m.author == "user")
    assert first.timestamp is not None and first.timestamp.startswith("2023-11-1")
    assert first.content.role == "user"
    for app, user in (("app", "bob"), ("other", "alice"), ("app", "alice ")):
        other = await memory.search_memory(app_name=app, user_id=user, query="hiking Alps")
        assert other.memories == []


def memory_mapping_scope(app: str, user: str) -> Any:
    from agent_memory.integrations.adk.memory_mapping import scope_of

    return scope_of(app, user)


async def test_add_events_add_memory_and_delete(memory: AgentMemoryMemoryService) -> None:
    await memory.add_events_to_memory(
        app_name="app", user_id="u1", events=[_text_event("the wifi password is swordfish")],
        session_id="s1", custom_metadata={"ttl": 60, "tags": ["secrets"], "vendor": "x"},
    )  # fmt: skip
    await memory.add_memory(
        app_name="app",
        user_id="u1",
        memories=[
            MemoryEntry(
                id="m1",
                author="me",
                content=types.Content(parts=[types.Part(text="favourite colour is teal")]),
                custom_metadata={"source": "form"},
            )
        ],
    )
    hits = (
        await memory.search_memory(app_name="app", user_id="u1", query="favourite colour teal")
    ).memories
    assert hits and hits[0].custom_metadata == {"source": "form"} and hits[0].author == "me"
    wifi = (
        await memory.search_memory(app_name="app", user_id="u1", query="wifi password")
    ).memories
    assert wifi and wifi[0].content.parts[0].text == "the wifi password is swordfish"
    item = await memory.store.get(wifi[0].id or "")
    assert item is not None and item.expires_at is not None and item.tags == ("secrets",)
    # another user cannot delete it, its owner can
    await memory.delete_memory(app_name="app", user_id="u2", memory_id=wifi[0].id)
    assert await memory.store.get(wifi[0].id or "") is not None
    await memory.delete_memory(app_name="app", user_id="u1", memory_id=wifi[0].id)
    assert await memory.store.get(wifi[0].id or "") is None
    await memory.delete_memory(app_name="app", user_id="u1", memory_id=None)  # no-op
    with pytest.raises(InvalidInputError):
        await memory.add_memory(
            app_name="app", user_id="u1", memories=[MemoryEntry(content=types.Content(parts=[]))]
        )
    with pytest.raises(InvalidInputError):
        await memory.search_memory(app_name="", user_id="u1", query="x")
    assert (await memory.search_memory(app_name="app", user_id="u1", query="  ")).memories == []
    for bad in (
        {"importance": 5},
        {"importance": float("nan")},
        {"threshold": "x"},
        {"threshold": -3},
    ):
        with pytest.raises(InvalidInputError):  # at construction, not at the first call
            AgentMemoryMemoryService(memory.store, **bad)


@pytest.mark.parametrize("session_id", [None, ""], ids=["none", "empty"])
async def test_events_added_without_a_session_are_stored_without_a_thread(
    memory: AgentMemoryMemoryService, session_id: str | None
) -> None:
    """``session_id`` is optional in ADK's ``add_events_to_memory`` (its in-memory
    service files such events under an unknown session); without one the memories have
    no thread, and adding the same events again rewrites them."""
    events = [_text_event("the office plant is a fern")]
    for _ in range(2):
        await memory.add_events_to_memory(
            app_name="app", user_id="u1", events=events, session_id=session_id
        )
    page = await memory.store.list(Scope(namespace="app", agent_id="u1"))
    assert [(i.content, i.scope.thread_id) for i in page.items] == [
        ("the office plant is a fern", None)
    ]


async def test_a_deleted_event_memory_is_not_added_back(
    memory: AgentMemoryMemoryService, ours: AgentMemorySessionService
) -> None:
    session = await ours.create_session(app_name="app", user_id="alice")
    for text in ("my locker code is 4821", "I walk to work", "lunch is at noon"):
        await ours.append_event(session, _text_event(text))
    await memory.add_session_to_memory(session)
    code = await memory.search_memory(app_name="app", user_id="alice", query="locker code")
    victim = next(m for m in code.memories if "locker" in m.content.parts[0].text)
    await memory.delete_memory(app_name="bob", user_id="alice", memory_id=victim.id)  # not its app
    await memory.delete_memory(app_name="app", user_id="alice", memory_id=victim.id)
    await ours.append_event(session, _text_event("the bus leaves at nine"))
    await memory.add_session_to_memory(session)  # the whole session again, one event more
    await memory.add_events_to_memory(
        app_name="app", user_id="alice", events=session.events, session_id=session.id
    )
    listed = await memory.store.list(memory_mapping_scope("app", "alice"))
    assert sorted(i.content for i in listed.items) == [
        "I walk to work", "lunch is at noon", "the bus leaves at nine",
    ]  # fmt: skip
    assert await memory.store.get(victim.id or "") is None
    # Another user's session with the same events keeps all of its memories.
    other = await ours.create_session(app_name="app", user_id="carol", session_id=session.id)
    for event in session.events:
        await ours.append_event(other, _text_event(event.content.parts[0].text))
    await memory.add_session_to_memory(other)
    assert (await memory.store.list(memory_mapping_scope("app", "carol"))).total == 4


async def test_a_foreign_timestamp_out_of_range_is_reported_not_raised(
    memory: AgentMemoryMemoryService, ours: AgentMemorySessionService
) -> None:
    """A memory of the same scope whose metadata ``timestamp`` is epoch milliseconds
    (another writer's) is found with its creation time, logged and counted; the other
    memories of the (app, user) stay searchable."""
    session = await ours.create_session(app_name="app", user_id="u")
    await ours.append_event(session, _text_event("I like green tea", timestamp=1700000000.0))
    await memory.add_session_to_memory(session)
    store = memory.store
    scope = memory_mapping_scope("app", "u")
    foreign = [
        await store.get(
            await store.remember("green tea order", scope=scope, metadata={"timestamp": ts})
        )
        for ts in (1733270400000, -(10**20), 1e300)
    ]
    before = store._ctx.counters.get("corrupt_records", 0)
    found = await memory.search_memory(app_name="app", user_id="u", query="green tea")
    by_id = {m.id: m for m in found.memories}
    for item in foreign:
        assert item is not None and by_id[item.id].content.parts[0].text == "green tea order"
        want = datetime.fromtimestamp(item.created_at / 1000).isoformat()
        assert by_id[item.id].timestamp == want
    ours_hit = next(m for m in found.memories if m.author == "user")
    assert (ours_hit.timestamp or "").startswith("2023-11-1")
    assert store._ctx.counters.get("corrupt_records", 0) - before == len(foreign)


# -- a real ADK Runner --------------------------------------------------------------------------


class ScriptedModel(BaseLlm):
    """A fake model: answers from a list, records the prompts it got."""

    answers: list[str]
    prompts: list[str] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.prompts.append(str(llm_request.contents))
        text = self.answers.pop(0)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


async def test_runner_with_both_services(
    ours: AgentMemorySessionService, memory: AgentMemoryMemoryService
) -> None:
    model = ScriptedModel(model="scripted", answers=["Hello Ada!", "You are Ada."])
    agent = LlmAgent(
        name="assistant", model=model, instruction="Be brief.", output_key="last_reply"
    )
    runner = Runner(agent=agent, app_name="demo", session_service=ours, memory_service=memory)
    session = await ours.create_session(app_name="demo", user_id="ada", state={"user:name": "Ada"})
    replies = []
    for question in ("Hi, I am Ada", "Who am I?"):
        message = types.Content(role="user", parts=[types.Part(text=question)])
        async for event in runner.run_async(
            user_id="ada", session_id=session.id, new_message=message
        ):
            if event.content and event.content.parts and event.author == "assistant":
                replies.append(event.content.parts[0].text)
    assert replies == ["Hello Ada!", "You are Ada."]
    assert "Hi, I am Ada" in model.prompts[1]  # the history came back from the server
    stored = await ours.get_session(app_name="demo", user_id="ada", session_id=session.id)
    assert stored is not None and stored.state["last_reply"] == "You are Ada."
    assert stored.state["user:name"] == "Ada" and len(stored.events) == 4
    await memory.add_session_to_memory(stored)
    found = await memory.search_memory(app_name="demo", user_id="ada", query="Ada")
    assert len(found.memories) >= 2


# -- a cluster ---------------------------------------------------------------------------------


def _cluster_client(package: str, url: str) -> Any:
    if package == "valkey":
        from valkey.asyncio.cluster import ValkeyCluster

        return ValkeyCluster.from_url(url)
    from redis.asyncio.cluster import RedisCluster

    return RedisCluster.from_url(url, decode_responses=True)


@pytest.mark.parametrize("package", ["valkey", "redis"])
async def test_session_service_on_a_cluster(package: str, cluster_url: str) -> None:
    """Users spread over the three primaries: every call stays within one slot (no
    CROSSSLOT), and listing every user's sessions of an app reaches them all."""
    client = _cluster_client(package, cluster_url)
    service = AgentMemorySessionService(client, name=_name())
    users = [f"user-{i}" for i in range(12)]
    try:
        for user in users:
            session = await service.create_session(
                app_name="app", user_id=user, session_id="s", state={"user:name": user}
            )
            delta = EventActions(state_delta={"app:motd": "hi", "turn": 1})
            await service.append_event(session, _text_event(f"hello from {user}", actions=delta))
        listed = (await service.list_sessions(app_name="app", user_id=None)).sessions
        assert sorted(s.user_id for s in listed) == sorted(users)
        for user in users:
            got = await service.get_session(app_name="app", user_id=user, session_id="s")
            assert got is not None and len(got.events) == 1
            assert got.state == {"user:name": user, "app:motd": "hi", "turn": 1}
            await service.delete_session(app_name="app", user_id=user, session_id="s")
        assert (await service.list_sessions(app_name="app", user_id=None)).sessions == []
    finally:
        await client.aclose()


@pytest.mark.skipif("valkey-search-1.2" in MISSING_KINDS, reason="valkey-search 1.2 not here")
async def test_memory_service_on_a_search_cluster(search_cluster_url: Any) -> None:
    """The memory service on valkey-search 1.2 with the coordinator: memories of many
    users (many slots) found by their owner only, deletions kept across re-adds."""
    client = _cluster_client("valkey", search_cluster_url("valkey-search-1.2"))
    store = MemoryStore(client, _name(), HashingEmbedder(), adopt_interval=None)
    memory = AgentMemoryMemoryService(store)
    try:
        events = {
            i: [_text_event(f"user {i} keeps a red bicycle"), _text_event("rainy day")]
            for i in range(6)
        }
        for i in range(6):
            await memory.add_events_to_memory(
                app_name="app", user_id=f"u{i}", events=events[i], session_id="s"
            )
        for i in range(6):
            found = await memory.search_memory(app_name="app", user_id=f"u{i}", query="bicycle")
            texts = [m.content.parts[0].text for m in found.memories]
            assert f"user {i} keeps a red bicycle" in texts
            assert not any(f"user {j} " in t for t in texts for j in range(6) if j != i)
            victim = next(m for m in found.memories if "bicycle" in m.content.parts[0].text)
            await memory.delete_memory(app_name="app", user_id=f"u{i}", memory_id=victim.id)
            await memory.add_events_to_memory(
                app_name="app", user_id=f"u{i}", events=events[i], session_id="s"
            )  # the same events again: the deleted one stays deleted
            assert await store.get(victim.id or "") is None
            listed = await store.list(memory_mapping_scope("app", f"u{i}"))
            assert [m.content for m in listed.items] == ["rainy day"]
    finally:
        await client.aclose()
