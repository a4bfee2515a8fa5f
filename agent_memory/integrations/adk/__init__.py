"""Google ADK services on agent-memory (the ``adk`` extra).

>>> session_service = AgentMemorySessionService.from_url("redis://localhost:6379")
>>> memory_service = AgentMemoryMemoryService(MemoryStore(client, "my_agent", embed))
>>> runner = Runner(agent=agent, app_name="app", session_service=session_service,
...                 memory_service=memory_service)

* :class:`AgentMemorySessionService` (:mod:`.session_service`): sessions, events and
  ``app:`` / ``user:`` / session state on any Valkey or Redis, standalone or cluster
  (layout: :mod:`.layout`; scripts: :mod:`.scripts`; encoding: :mod:`.codec`;
  operations: :mod:`.session_ops`).
* :class:`AgentMemoryMemoryService` (:mod:`.memory_service`): ADK's long-term memory on
  a :class:`~agent_memory.MemoryStore`; ``(app_name, user_id)`` is
  ``Scope(namespace=app_name, agent_id=user_id)`` (:mod:`.memory_mapping`).

Importing this package without ``google-adk`` raises
:class:`~agent_memory.errors.CapabilityError` naming the extra.
"""

from __future__ import annotations

from agent_memory.integrations._optional import require

require("google.adk.memory.base_memory_service", extra="adk", package="google-adk")
require("google.adk.sessions.base_session_service", extra="adk", package="google-adk")

from agent_memory.integrations.adk.memory_service import AgentMemoryMemoryService  # noqa: E402
from agent_memory.integrations.adk.session_service import AgentMemorySessionService  # noqa: E402

__all__ = ["AgentMemoryMemoryService", "AgentMemorySessionService"]
