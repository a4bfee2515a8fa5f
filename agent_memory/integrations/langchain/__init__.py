"""LangChain adapters over agent-memory's cache tiers (the ``langchain`` extra).

* :class:`AgentMemoryCache` (:mod:`.llm_cache`): a ``BaseCache`` over the LLM cache tier,
  exact match on the prompt and the ``llm_string``.
* :class:`AgentMemoryChatMessageHistory` (:mod:`.chat_history`): a
  ``BaseChatMessageHistory`` on the session tier, one history per session id.
* :class:`AgentMemoryByteStore` (:mod:`.byte_store`): a ``BaseStore[str, bytes]`` (for
  ``CacheBackedEmbeddings``, document stores...), one round trip per call.

Each serves LangChain's blocking methods from a blocking ``valkey``/``redis`` client and
its async twins from an asyncio client (``from_url`` makes both), standalone or
cluster, and raises :mod:`agent_memory.errors` exceptions. Importing this package
without ``langchain-core`` raises :class:`~agent_memory.errors.CapabilityError` naming
the extra.
"""

from agent_memory.integrations._optional import require

require("langchain_core", extra="langchain", package="langchain-core")

from agent_memory.integrations.langchain.byte_store import (  # noqa: E402
    AgentMemoryByteStore,
    InvalidStoreKeyError,
)
from agent_memory.integrations.langchain.chat_history import (  # noqa: E402
    AgentMemoryChatMessageHistory,
)
from agent_memory.integrations.langchain.llm_cache import AgentMemoryCache  # noqa: E402

__all__ = [
    "AgentMemoryByteStore",
    "AgentMemoryCache",
    "AgentMemoryChatMessageHistory",
    "InvalidStoreKeyError",
]
