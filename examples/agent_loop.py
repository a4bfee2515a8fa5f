"""An agent loop with long-term memory, runnable offline: ``python examples/agent_loop.py``.

Each turn:

1. recall the memories relevant to the user's message (the recall gets a
   ``selection_id``);
2. call the model with them in the prompt and the memory tool in ``tools=[...]``
   (``tool.to_openai()``; ``tool.to_anthropic()`` is the same tool for Anthropic's API);
3. run the tool calls the model makes (``tool.run(arguments)``: the namespace, agent
   and session were bound when the tool was made, the model cannot choose them);
4. grade the answer (here against an expected keyword, in production an eval, a user
   rating or a task outcome) and ``complete(selection_id, score)`` the recall, so the
   store learns which memories help.

The "LLM" is a deterministic function speaking the OpenAI chat-completions shape and
the store runs on the in-process client: no network, no server, no API key. Swap in
``openai.OpenAI().chat.completions.create`` and ``SyncMemoryStore.from_url(...)`` for
the real thing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agent_memory import Scope, SyncMemoryStore, memory_tool
from agent_memory.backends.inprocess import InProcessClient, Keyspace
from agent_memory.embedders import HashingEmbedder
from agent_memory.errors import InvalidInputError

SCOPE = Scope(namespace="acme", agent_id="assistant", session_id="session-1")


def fake_llm(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A deterministic stand-in for a chat model: returns one assistant message."""
    user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    if messages[-1]["role"] == "tool":  # the tool ran: acknowledge its result
        result = json.loads(messages[-1]["content"])
        text = "Noted." if result.get("stored") else f"I could not save that: {result['error']}"
        return {"role": "assistant", "content": text}
    tool_name = tools[0]["function"]["name"]
    saved = re.match(r"remember (?:for (\S+) )?that (.+)", user, re.IGNORECASE)
    if saved:
        arguments: dict[str, Any] = {"text": saved.group(2), "importance": 0.8}
        if saved.group(1):  # a model trying to write into another tenant
            arguments["namespace"] = saved.group(1)
        call = {"name": tool_name, "arguments": json.dumps(arguments)}
        return {"role": "assistant", "tool_calls": [{"id": "call-1", "function": call}]}
    memories = messages[0]["content"].split("\n")[1:]
    words = set(re.findall(r"\w+", user.lower())) - {"what", "is", "the", "my", "do", "i", "a"}
    for memory in memories:
        if words & set(re.findall(r"\w+", memory.lower())):
            return {"role": "assistant", "content": f"From memory: {memory.lstrip('- ')}"}
    return {"role": "assistant", "content": "I don't know yet."}


@dataclass
class Turn:
    user: str
    answer: str
    recalled: list[str]
    score: float | None
    completed: bool


def agent_turn(
    store: SyncMemoryStore, user: str, *, expect: str | None = None, llm: Any = fake_llm
) -> Turn:
    """One turn: recall, call the model (running its tool calls), grade, complete."""
    tool = memory_tool(
        store, namespace=SCOPE.namespace, agent_id=SCOPE.agent_id, session_id=SCOPE.session_id
    )
    hits = store.recall(user, scope=SCOPE, k=3)
    recalled = [hit.item.content for hit in hits]
    system = "You are a helpful assistant. Relevant memories:\n" + "\n".join(
        f"- {text}" for text in recalled
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    tools = [tool.to_openai()]
    reply = llm(messages, tools)
    while reply.get("tool_calls"):
        messages.append(reply)
        for call in reply["tool_calls"]:
            try:
                result = tool.run(call["function"]["arguments"])  # a JSON string is fine
            except InvalidInputError as exc:  # rejected arguments: tell the model why
                result = {"stored": False, "error": str(exc)}
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )
        reply = llm(messages, tools)
    answer = reply["content"]
    score = None if expect is None else float(expect.lower() in answer.lower())
    completed = store.complete(hits.selection_id, score) if score is not None else False
    return Turn(user, answer, recalled, score, completed)


def run() -> list[Turn]:
    store = SyncMemoryStore(InProcessClient(Keyspace()), "agent_loop", HashingEmbedder())
    with store:
        script = [
            ("What is my favourite editor theme?", None),
            ("Remember that my favourite editor theme is solarized dark", None),
            ("Remember for globex that their launch code is 0000", None),
            ("What is my favourite editor theme?", "solarized"),
        ]
        turns = [agent_turn(store, user, expect=expect) for user, expect in script]
        # The write aimed at another tenant was refused: only the theme was stored.
        assert store.list(Scope(namespace="globex")).total == 0
        return turns


def main() -> None:
    for turn in run():
        print(f"user:      {turn.user}")
        print(f"recalled:  {turn.recalled}")
        print(f"assistant: {turn.answer}")
        if turn.score is not None:
            print(f"eval:      score {turn.score} (selection completed: {turn.completed})")
        print()


if __name__ == "__main__":
    main()
