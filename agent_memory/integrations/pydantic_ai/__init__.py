"""pydantic-ai adapters (the ``pydantic-ai`` extra).

* :class:`AgentMemoryMessageHistory` (:mod:`.history`): a conversation's
  ``ModelMessage`` history on a Valkey list per conversation id,
  ``{name}:pai_history:{conversation_id}``, for ``agent.run(..., message_history=await
  history.load())`` then ``await history.append(result.new_messages())``; one round trip
  per call, atomic appends, cluster-safe, optional sliding TTL, corrupt entries skipped
  and counted. Async methods, and ``*_sync`` twins on a blocking client.
* :class:`AgentMemoryConversationStore` (:mod:`.conversation_store`): pydantic-ai's
  ``ConversationStore`` (``store.load`` / ``store.save`` around ``agent.run(...,
  conversation=...)``, ``branch``, ``fork``, ``list_conversations``, ``delete``, scopes,
  optimistic concurrency). Records, indexes and the entry graph of a store share one
  hash slot, updated by one atomic script per write; each entry's message is its own
  key, spread over a cluster; a history reads in two round trips whatever its length.
* :func:`memory_toolset` (:mod:`.tools`): a ``FunctionToolset`` that recalls, saves and
  forgets long-term memories of a :class:`~agent_memory.MemoryStore` in a scope the
  application binds; the model never chooses a namespace, agent, thread or session.

All raise :mod:`agent_memory.errors` exceptions (the tools raise pydantic-ai's
``ModelRetry`` / ``ToolFailed`` for a call the model got wrong; the conversation store
pydantic-ai's ``ConversationConflict`` / ``UserError`` where its in-memory store does).
Importing this package without ``pydantic-ai-slim`` raises
:class:`~agent_memory.errors.CapabilityError` naming the extra.
"""

from agent_memory.integrations._optional import require

require("pydantic_ai", extra="pydantic-ai")

from agent_memory.integrations.pydantic_ai.conversation_store import (  # noqa: E402
    AgentMemoryConversationStore,
)
from agent_memory.integrations.pydantic_ai.history import AgentMemoryMessageHistory  # noqa: E402
from agent_memory.integrations.pydantic_ai.tools import memory_toolset  # noqa: E402

__all__ = ["AgentMemoryConversationStore", "AgentMemoryMessageHistory", "memory_toolset"]
