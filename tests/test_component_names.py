"""No two components share a key or lie under another's search index, whatever names
users give them (pure: no server; each constructor is built on a client never used).

Each component lists what it *claims* under a name ``a`` (regexes over whole keys: the
families whose rest is any id a caller picks, or a digest; ``a:mem:`` is store ``a``'s
index prefix, which takes in every hash) and *sample keys* of a name, built with its own
key builders from ids chosen to collide (any text, ``:`` included, and 64 hex digits).
For every pair of components and every name that extends ``a`` across a segment, either
the component refuses the name at construction or none of its keys is claimed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import valkey
import valkey.asyncio

from agent_memory import MemoryStore
from agent_memory.cache import EmbeddingCache, LlmCache, SessionStore, ToolCache
from agent_memory.cache.keys import KeyLayout
from agent_memory.core.names import OPEN_PREFIXES, TOOL_SEGMENT
from agent_memory.errors import InvalidInputError
from agent_memory.schema.layout import INDEX_SEGMENT, Keys
from tests.support import TableEmbedder

HEX = "0123456789abcdef" * 4  # 64 hex digits: a digest, or an id a caller picked
IDS = ["t", "b:c", HEX, "mem:x", "__x"]
_ANY = ".+"
_WORD = r"(?:[A-Za-z0-9_.\-]{1,128}|~[0-9a-f]{32})"  # a tool name or namespace segment


def _sync() -> Any:
    return valkey.Valkey()


def _async() -> Any:
    return valkey.asyncio.Valkey()


def _claims(name: str, *families: str) -> list[re.Pattern[str]]:
    return [re.compile(re.escape(f"{name}:") + family, re.DOTALL) for family in families]


@dataclass(frozen=True)
class Component:
    label: str
    make: Callable[[str], object]  # the public constructor (no I/O)
    keys: Callable[[str], list[str]]  # sample keys of a name
    claims: Callable[[str], list[re.Pattern[str]]]  # what it owns under a name


def _store_keys(name: str) -> list[str]:
    keys = Keys(name)
    return [*(keys.memory(i) for i in ("x", HEX)), keys.meta, keys.registry("tok"), keys.usage]


def _cache(tier: str) -> Callable[[str], list[str]]:
    def keys(name: str) -> list[str]:
        layout = KeyLayout(name)
        built = {
            "llm": [layout.llm(HEX)],
            "tool": [layout.tool("t", HEX), layout.tool_policies],
            "session": [layout.session(i) for i in IDS],
            "emb": [layout.embedding(HEX)],
        }[tier]
        return [*built, layout.stats]

    return keys


def _list_log(key_of: Callable[[str, str], str]) -> Callable[[str], list[str]]:
    return lambda name: [*(key_of(name, i) for i in IDS), KeyLayout(name).stats]


def _components() -> list[Component]:
    from agent_memory.integrations.adk import AgentMemorySessionService
    from agent_memory.integrations.adk.layout import Layout as AdkLayout
    from agent_memory.integrations.checkpoint import AgentMemorySaver
    from agent_memory.integrations.checkpoint import Layout as CpLayout
    from agent_memory.integrations.langchain import (
        AgentMemoryByteStore,
        AgentMemoryCache,
        AgentMemoryChatMessageHistory,
    )
    from agent_memory.integrations.langchain.byte_store import KvCore
    from agent_memory.integrations.llama_index import AgentMemoryChatStore, AgentMemoryDBChatStore
    from agent_memory.integrations.llama_index.db_chat_store.layout import chat_key as db_key
    from agent_memory.integrations.llama_index.ops import chat_key
    from agent_memory.integrations.openai_agents import AgentMemorySession
    from agent_memory.integrations.openai_agents.ops import session_key
    from agent_memory.integrations.pydantic_ai import (
        AgentMemoryConversationStore,
        AgentMemoryMessageHistory,
    )
    from agent_memory.integrations.pydantic_ai.conversation_store.layout import Layout as PaiLayout
    from agent_memory.integrations.pydantic_ai.ops import history_key

    def adk_keys(name: str) -> list[str]:
        layout = AdkLayout(name)
        return [*layout.session("app", "u", "b:c").all, layout.user_state("app", "u")]

    def cp_keys(name: str) -> list[str]:
        layout = CpLayout(name)
        return [*layout.lane("b:c", "n").keys, layout.run("r")]

    def kv_keys(name: str) -> list[str]:
        return [*KvCore(name, "default", None).keys_of(IDS), KeyLayout(name).stats]

    def pai_conv_keys(name: str) -> list[str]:
        layout = PaiLayout(name)
        return [layout.record("b:c"), layout.entry("b:c"), layout.entry(HEX), layout.updated]

    session_claims = lambda n: _claims(n, "session:" + _ANY)  # noqa: E731
    return [
        Component(
            "MemoryStore",
            lambda n: MemoryStore(_async(), n, TableEmbedder()),
            _store_keys,
            # the index takes in every hash under the prefix; the rest are exact keys
            lambda n: _claims(n, f"{INDEX_SEGMENT}:" + _ANY, r"__mem_[a-z_]+(?::tok)?"),
        ),
        Component(
            "LlmCache",
            lambda n: LlmCache(_async(), n),
            _cache("llm"),
            lambda n: _claims(n, f"llm:{'[0-9a-f]' * 64}"),
        ),
        Component(
            "ToolCache",
            lambda n: ToolCache(_async(), n),
            _cache("tool"),
            lambda n: _claims(n, f"{TOOL_SEGMENT}:{_WORD}:{'[0-9a-f]' * 64}", "__tool_policies"),
        ),
        Component(
            "SessionStore", lambda n: SessionStore(_async(), n), _cache("session"), session_claims
        ),
        Component(
            "EmbeddingCache",
            lambda n: EmbeddingCache(_async(), n),
            _cache("emb"),
            lambda n: _claims(n, f"emb:{'[0-9a-f]' * 64}"),
        ),
        Component(
            "LangChain byte store",
            lambda n: AgentMemoryByteStore(client=_sync(), name=n),
            kv_keys,
            lambda n: _claims(n, f"kv:{_WORD}:" + _ANY),
        ),
        Component(
            "LangChain chat history",
            lambda n: AgentMemoryChatMessageHistory("s", client=_sync(), name=n),
            _cache("session"),
            session_claims,
        ),
        Component(
            "LangChain LLM cache",
            lambda n: AgentMemoryCache(async_cache=LlmCache(_async(), n)),
            _cache("llm"),
            lambda n: _claims(n, f"llm:{'[0-9a-f]' * 64}"),
        ),
        Component(
            "LlamaIndex chat store",
            lambda n: AgentMemoryChatStore(client=_sync(), name=n),
            _list_log(chat_key),
            lambda n: _claims(n, "li_chat:" + _ANY),
        ),
        Component(
            "LlamaIndex DB chat store",
            lambda n: AgentMemoryDBChatStore(client=_sync(), name=n),
            _list_log(db_key),
            lambda n: _claims(n, "li_db:" + _ANY),
        ),
        Component(
            "pydantic-ai history",
            lambda n: AgentMemoryMessageHistory("c", client=_async(), name=n),
            _list_log(history_key),
            lambda n: _claims(n, "pai_history:" + _ANY),
        ),
        Component(
            "pydantic-ai conversation store",
            lambda n: AgentMemoryConversationStore(client=_async(), name=n),
            pai_conv_keys,
            lambda n: _claims(n, r"pai_conv:entry:" + _ANY, r"pai_conv:\{[0-9a-f]{16}\}:" + _ANY),
        ),
        Component(
            "OpenAI Agents session",
            lambda n: AgentMemorySession("s", client=_async(), name=n),
            _list_log(session_key),
            lambda n: _claims(n, "oai_session:" + _ANY),
        ),
        Component(
            "ADK session service",
            lambda n: AgentMemorySessionService(_async(), name=n),
            adk_keys,
            lambda n: _claims(n, r"adk:\{[0-9a-f]{32}\}:" + _ANY),
        ),
        Component(
            "LangGraph checkpointer",
            lambda n: AgentMemorySaver(_sync(), name=n),
            cp_keys,
            lambda n: _claims(n, r"cp:\{[0-9a-f]{32}\}:" + _ANY, r"cp:run:\{.+\}"),
        ),
    ]


COMPONENTS = _components()
# Names extending ``a`` (or ``x:y``) across every segment a component writes after a name.
SEGMENTS = sorted({*OPEN_PREFIXES, TOOL_SEGMENT, "llm", "emb", "adk", "cp", "pai_conv"})
CANDIDATES = [
    (before, f"{before}:{segment}{tail}")
    for segment in SEGMENTS
    for before in ("a", "x:y")
    for tail in ("", ":b")
]


def _accepts(component: Component, name: str) -> bool:
    try:
        component.make(name)
    except InvalidInputError as exc:
        assert exc.field == "name"
        return False
    return True


def _claimed(owner: Component, owner_name: str, keys: list[str]) -> list[str]:
    claims = owner.claims(owner_name)
    return [key for key in keys if any(c.fullmatch(key) for c in claims)]


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.label)
def test_every_component_claims_its_own_keys(component: Component) -> None:
    # the claims describe what the key builders really build (else the test below is void)
    keys = [k for k in component.keys("a") if k != KeyLayout("a").stats]
    assert _claimed(component, "a", keys) == keys


@pytest.mark.parametrize("owner", COMPONENTS, ids=lambda c: c.label)
@pytest.mark.parametrize("other", COMPONENTS, ids=lambda c: c.label)
def test_no_accepted_name_has_a_key_another_component_claims(
    owner: Component, other: Component
) -> None:
    shared = {
        (before, name, key)
        for before, name in CANDIDATES
        if _accepts(other, name)
        for key in _claimed(owner, before, other.keys(name))
    }
    assert shared == set()


# Names that share no key with any component, kept by every component.
KEPT_BY_ALL = ["a", "a:b", "a:memory", "a:sessions", "a:mem2", "mem:a", "session", "a:llm",
               "a:emb", "a:adk", "a:cp", "a:tool:b", "a:li_chat2"]  # fmt: skip
# ``a:tool`` collides only where a key after a word may be 64 hex digits.
TOOL_NAME_KEPT = {"ToolCache", "LangChain byte store", "pydantic-ai conversation store",
                  "ADK session service", "LangGraph checkpointer"}  # fmt: skip


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.label)
def test_names_that_collide_with_nothing_are_kept(component: Component) -> None:
    refused = [name for name in KEPT_BY_ALL if not _accepts(component, name)]
    assert refused == []
    assert _accepts(component, "a:tool") is (component.label in TOOL_NAME_KEPT)


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.label)
@pytest.mark.parametrize("prefix", list(OPEN_PREFIXES))
def test_a_name_under_an_open_prefix_is_refused_by_every_component(
    component: Component, prefix: str
) -> None:
    for name in (f"a:{prefix}", f"a:{prefix}:b", f"x:y:{prefix}"):
        with pytest.raises(InvalidInputError, match=re.escape(f":{prefix}")) as info:
            component.make(name)
        assert info.value.field == "name"


def test_every_open_segment_of_the_layouts_is_listed() -> None:
    from agent_memory.integrations.langchain.byte_store import SEGMENT as KV
    from agent_memory.integrations.langchain.chat_history import SEGMENT as HISTORY
    from agent_memory.integrations.llama_index.db_chat_store.layout import SEGMENT as LI_DB
    from agent_memory.integrations.llama_index.ops import SEGMENT as LI_CHAT
    from agent_memory.integrations.openai_agents.ops import SEGMENT as OAI
    from agent_memory.integrations.pydantic_ai.conversation_store.layout import Layout
    from agent_memory.integrations.pydantic_ai.ops import SEGMENT as PAI

    segments = {INDEX_SEGMENT, KV, HISTORY, LI_DB, LI_CHAT, OAI, PAI, "pai_conv:entry"}
    assert segments == set(OPEN_PREFIXES)
    assert KeyLayout("a").session("t") == "a:session:t"
    assert Layout("a").entry("e") == "a:pai_conv:entry:e"
