"""Search backends of the memory store, behind one protocol.

* :mod:`~agent_memory.backends.ft` — FT.SEARCH on valkey-search or RediSearch.
* :mod:`~agent_memory.backends.portable` — exact cosine KNN computed client-side with
  numpy, for servers without a search module.
* :mod:`~agent_memory.backends.inprocess` — an in-process keyspace (no server) for users'
  unit tests; runs the portable backend.

Beside them: :mod:`~agent_memory.backends.context` (what a backend and an operation know
of their store) and :mod:`~agent_memory.backends.reads` (reading memory hashes in one
round trip).
"""
