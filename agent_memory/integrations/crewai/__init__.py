"""CrewAI adapters (the ``crewai`` extra; CrewAI 1.15's unified memory).

>>> embed = HashingEmbedder()          # or MiniLMEmbedder(), ... : one model for both sides
>>> store = SyncMemoryStore(client, "crew_memory", embed)
>>> storage = AgentMemoryStorage(store, scope=Scope(namespace=user_id, agent_id="research-crew"))
>>> crew = Crew(agents=[...], tasks=[...],
...             memory=Memory(storage=storage, embedder=CrewAIEmbedder(embed), llm=llm))

* :class:`AgentMemoryStorage` (:mod:`.storage`): CrewAI's memory ``StorageBackend``
  protocol (``crewai.memory.storage.backend``: ``save``, ``search``, ``delete``,
  ``update``, ``get_record``, ``list_records``, ``get_scope_info``, ``list_scopes``,
  ``list_categories``, ``count``, ``reset``, ``asave``, ``asearch``, ``adelete``) on a
  :class:`~agent_memory.SyncMemoryStore` (and optionally its asyncio twin). Plug it in
  as ``Memory(storage=...)``, then pass that ``Memory`` to ``Crew(memory=...)`` or
  ``Agent(memory=...)`` (or route ``Crew(memory=True)``'s default through
  ``crewai.memory.storage.factory.set_memory_storage_factory``). How a record is stored:
  :mod:`.layout`; the operations: :mod:`.ops` (run by :mod:`.calls`).
* :class:`CrewAIEmbedder` (:mod:`.embedder`): one of this library's embedders as the
  callable ``Memory(embedder=...)`` takes, so CrewAI and the store embed alike.
* :func:`memory_tools` (:mod:`.tools`): ``recall_memory`` / ``save_memory`` /
  ``forget_memory`` as CrewAI ``Tool`` objects bound to a scope.

Scope rules. CrewAI 1.15 has no tenant of its own: a crew's ``Memory`` organises
records by *scope paths* (``Crew(memory=True)`` roots them at ``/crew/<crew name>``, an
agent's saves go to ``/crew/<crew name>/agent/<role>``, the LLM may infer deeper paths)
and a record may carry a ``source`` (a user or session id) and ``private=True``. Those are
soft: ``Memory.recall`` and its LLM-driven ``RecallFlow`` search whatever paths they pick
(RecallFlow may even pick one outside the ``Memory``'s root), the agents of a crew share
their crew's memory, and ``private`` is filtered by ``Memory`` after the storage
answered. The hard boundary is the :class:`~agent_memory.Scope` the application binds
to each :class:`AgentMemoryStorage`:

* ``namespace`` is the tenant (the end user, customer or workspace a crew serves); it is
  the store's own tenant boundary, never crossed by any query.
* ``agent_id`` is what shares one memory inside the tenant: the crew (``crew.name``,
  what ``Crew(memory=True)`` uses as its root) or, for per-agent memories passed as
  ``Agent(memory=Memory(storage=...))``, the crew and the agent's role.
* ``thread_id``, optional, narrows it to a conversation or a run.
* ``session_id`` is refused: CrewAI's memory is long-term (``ttl=`` gives records a
  lifetime instead).

Every memory a storage writes lands in exactly its bound scope, under an id derived from
the scope and the CrewAI record id, and tagged with tags derived from the scope and the
record's path and categories; every read, search, count, listing and delete of a storage
filters on its own tags (``agent_id=None`` and ``thread_id=None`` are values here, not
wildcards). So two storages with different scopes never see, find, overwrite or delete
each other's records, whatever ids, paths or filters CrewAI or its LLM passes; within a
storage, CrewAI's paths, categories, ``source`` and ``private`` keep CrewAI's meaning
(scope prefixes respect path boundaries: ``/app`` never covers ``/apple``).

Bad arguments raise :class:`~agent_memory.errors.InvalidInputError` (a ``ValueError``,
before anything is written); an embedding whose length is not the store's raises
CrewAI's own ``EmbeddingDimensionMismatchError``; server failures raise the other
:mod:`agent_memory.errors` exceptions. Importing this package without ``crewai`` raises
:class:`~agent_memory.errors.CapabilityError` naming the extra.

CrewAI is only imported through :func:`~agent_memory.integrations._optional.require`, so
its classes are typed ``Any`` here: the package type-checks where CrewAI cannot be
installed (its ``mcp`` 1.x pin conflicts with the ``mcp`` extra).
"""

from __future__ import annotations

from agent_memory.integrations._optional import require

require("crewai.memory.storage.backend", extra="crewai", package="crewai")

from agent_memory.integrations.crewai.embedder import CrewAIEmbedder  # noqa: E402
from agent_memory.integrations.crewai.storage import AgentMemoryStorage  # noqa: E402
from agent_memory.integrations.crewai.tools import memory_tools  # noqa: E402

__all__ = ["AgentMemoryStorage", "CrewAIEmbedder", "memory_tools"]
