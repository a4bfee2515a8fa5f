"""LlamaIndex adapters (the ``llama-index`` extra).

* :class:`AgentMemoryChatStore` (:mod:`.chat_store`): LlamaIndex's ``BaseChatStore`` on
  a Valkey list per key, ``{name}:li_chat:{key}``, one ``ChatMessage`` JSON per element
  (LlamaIndex's own serialisation); every method and its async twin is one round trip,
  appends are atomic, rewrites (``set_messages``, inserts, deletes by index) are one
  server-side script on one key, so it is cluster-safe; optional sliding TTL; corrupt
  entries skipped, logged and counted.
* :class:`AgentMemoryDBChatStore` (:mod:`.db_chat_store`): LlamaIndex's
  ``AsyncDBChatStore``, the short-term queue of ``Memory`` (``Memory.from_defaults(
  chat_store=...)``): a Valkey sorted set per key, ``{name}:li_db:{key}``, ACTIVE and
  ARCHIVED messages told apart by the sign of their score; every method is one round trip
  on one key (multi-step changes one script), so it is atomic and cluster-safe;
  ``SQLAlchemyChatStore``'s semantics (status, ``limit``/``offset``, archiving).
* :class:`AgentMemoryBlock` (:mod:`.memory_block`): a long-term ``BaseMemoryBlock`` for
  LlamaIndex's ``Memory``: messages flushed out of the short-term queue are stored as
  memories of a :class:`~agent_memory.MemoryStore` in a scope the application binds, and
  recalled for the latest messages.

All raise :mod:`agent_memory.errors` exceptions. Importing this package without
``llama-index-core`` raises :class:`~agent_memory.errors.CapabilityError` naming the
extra.
"""

from agent_memory.integrations._optional import require

require("llama_index.core", extra="llama-index", package="llama-index-core")

from agent_memory.integrations.llama_index.chat_store import AgentMemoryChatStore  # noqa: E402
from agent_memory.integrations.llama_index.db_chat_store import AgentMemoryDBChatStore  # noqa: E402
from agent_memory.integrations.llama_index.memory_block import AgentMemoryBlock  # noqa: E402

__all__ = ["AgentMemoryBlock", "AgentMemoryChatStore", "AgentMemoryDBChatStore"]
