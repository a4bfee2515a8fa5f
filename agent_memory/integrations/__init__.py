"""Integrations with agent frameworks and protocols, each behind an optional extra.

* :mod:`agent_memory.integrations.mcp`: a Model Context Protocol server over stdio
  (``pip install 'agent-memory[mcp]'``), also ``agent-memory mcp``.
* :mod:`agent_memory.integrations.langgraph`: a LangGraph ``BaseStore`` backed by a
  memory store (``pip install 'agent-memory[langgraph]'``).

Importing this package imports no optional dependency. Each integration module raises
:class:`~agent_memory.errors.CapabilityError` naming its extra when the dependency is
missing.
"""

__all__: list[str] = []
