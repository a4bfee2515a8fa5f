"""Adapters that build keys ``{name}:{segment}:{id}`` refuse the names with which two
(name, id) pairs would share a key."""

from __future__ import annotations

from typing import Any

import pytest
import valkey
import valkey.asyncio

from agent_memory.errors import InvalidInputError
from agent_memory.integrations._keys import check_name_for_segment


@pytest.mark.parametrize("name", ["a:seg:b", "a:seg", "x:seg:"])
def test_a_name_holding_the_segment_is_refused(name: str) -> None:
    with pytest.raises(InvalidInputError, match=":seg") as info:
        check_name_for_segment(name, "seg")
    assert info.value.field == "name"


@pytest.mark.parametrize("name", ["app", "a:segment", "a:seg2:b", "seg", "a:b:seg-x"])
def test_other_names_are_kept(name: str) -> None:
    assert check_name_for_segment(name, "seg") == name


def _openai(name: str) -> Any:
    from agent_memory.integrations.openai_agents import AgentMemorySession

    return AgentMemorySession("s", client=valkey.asyncio.Valkey(), name=name)


def _llama(name: str) -> Any:
    from agent_memory.integrations.llama_index import AgentMemoryChatStore

    return AgentMemoryChatStore(client=valkey.Valkey(), name=name)


def _pydantic(name: str) -> Any:
    from agent_memory.integrations.pydantic_ai import AgentMemoryMessageHistory

    return AgentMemoryMessageHistory("c", client=valkey.asyncio.Valkey(), name=name)


def _langchain(name: str) -> Any:
    from agent_memory.integrations.langchain import AgentMemoryByteStore

    return AgentMemoryByteStore(client=valkey.Valkey(), name=name)


def _langchain_history(name: str) -> Any:
    from agent_memory.integrations.langchain import AgentMemoryChatMessageHistory

    return AgentMemoryChatMessageHistory("s", client=valkey.Valkey(), name=name)


@pytest.mark.parametrize(
    ("make", "segment"),
    [
        (_openai, "oai_session"),
        (_llama, "li_chat"),
        (_pydantic, "pai_history"),
        (_langchain, "kv"),
        (_langchain_history, "session"),
    ],
    ids=[
        "openai-session",
        "llama-index-chat",
        "pydantic-ai-history",
        "langchain-bytes",
        "langchain-history",
    ],
)
def test_every_adapter_refuses_a_name_whose_keys_would_be_another_names(
    make: Any, segment: str
) -> None:
    with pytest.raises(InvalidInputError) as info:
        make(f"app:{segment}:x")
    assert info.value.field == "name"
    make("app")  # a plain name is fine
