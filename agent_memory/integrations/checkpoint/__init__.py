"""A LangGraph checkpointer on Valkey or Redis (the ``langgraph`` extra).

>>> saver = AgentMemorySaver.from_url("redis://localhost:6379", ttl={"default_ttl": 1440})
>>> graph = builder.compile(checkpointer=saver)
>>> graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

Any Valkey or Redis works (no search module), standalone or cluster. Every key of a
thread carries one hash tag (a digest of ``thread_id``), so all namespaces of a thread
live in one hash slot; each ``(thread_id, checkpoint_ns)`` is three keys (checkpoint
ids, records, values) and writes and reads are Lua scripts, one round trip each.
Layout: :mod:`.layout`; encoding: :mod:`.codec`; commands and parsing: :mod:`.commands`;
operations: :mod:`.ops`; the class: :mod:`.saver`.
"""

from __future__ import annotations

from agent_memory.integrations._optional import require

require("langgraph.checkpoint.base", extra="langgraph", package="langgraph-checkpoint")

from agent_memory.integrations.checkpoint.layout import DEFAULT_NAME, Layout  # noqa: E402
from agent_memory.integrations.checkpoint.ops import PAGE  # noqa: E402
from agent_memory.integrations.checkpoint.saver import AgentMemorySaver  # noqa: E402

__all__ = ["DEFAULT_NAME", "PAGE", "AgentMemorySaver", "Layout"]
