"""Integrations with agent frameworks and protocols, each behind an optional extra.

* :mod:`agent_memory.integrations.mcp`: a Model Context Protocol server over stdio
  (``pip install 'agent-memory[mcp]'``), also ``agent-memory mcp``.
* :mod:`agent_memory.integrations.langgraph`: a LangGraph ``BaseStore`` backed by a
  memory store, and :mod:`agent_memory.integrations.checkpoint`: a LangGraph
  checkpointer (``pip install 'agent-memory[langgraph]'``).
* :mod:`agent_memory.integrations.langchain`: an LLM cache, a chat message history and
  a byte store (``langchain``).
* :mod:`agent_memory.integrations.openai_agents`: a ``Session`` and memory tools
  (``openai-agents``).
* :mod:`agent_memory.integrations.adk`: Google ADK's memory and session services
  (``adk``).
* :mod:`agent_memory.integrations.pydantic_ai`: message history, ``ConversationStore``
  and a memory toolset (``pydantic-ai``).
* :mod:`agent_memory.integrations.llama_index`: chat stores (``BaseChatStore`` and
  ``Memory``'s ``AsyncDBChatStore``) and a memory block (``llama-index``).
* :mod:`agent_memory.integrations.crewai`: CrewAI's ``StorageBackend``, embedder and
  tools (``crewai``).

Importing this package imports no optional dependency. Each integration module raises
:class:`~agent_memory.errors.CapabilityError` naming its extra when the dependency is
missing.
"""

__all__: list[str] = []
