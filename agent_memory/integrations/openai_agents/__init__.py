"""OpenAI Agents SDK adapters (the ``openai-agents`` extra).

* :class:`AgentMemorySession` (:mod:`.session`): the SDK's ``Session`` (conversation
  history for ``Runner.run(..., session=...)``) on a Valkey list per session id,
  ``{name}:oai_session:{session_id}``; one round trip per call, atomic appends and pops,
  cluster-safe, optional sliding TTL. Asyncio clients only (the protocol is async).
* :func:`memory_tools` (:mod:`.tools`): ``agents.FunctionTool`` objects that recall, save
  and forget long-term memories of a :class:`~agent_memory.MemoryStore` in a scope the
  application binds; the model never chooses a namespace, agent, thread or session.

Both raise :mod:`agent_memory.errors` exceptions. Importing this package without
``openai-agents`` raises :class:`~agent_memory.errors.CapabilityError` naming the extra.
"""

from agent_memory.integrations._optional import require

require("agents", extra="openai-agents")

from agent_memory.integrations.openai_agents.session import AgentMemorySession  # noqa: E402
from agent_memory.integrations.openai_agents.tools import memory_tools  # noqa: E402

__all__ = ["AgentMemorySession", "memory_tools"]
