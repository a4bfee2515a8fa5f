"""A LangGraph ``BaseStore`` backed by agent-memory (the ``langgraph`` extra).

>>> store = AgentMemoryStore.from_url("redis://localhost:6379", name="graph", embed=embedder)
>>> store.put(("users", "u1", "prefs"), "theme", {"text": "prefers dark mode"})
>>> store.search(("users", "u1"), query="which theme?", limit=3)

Each LangGraph item is one memory in the ``memory_namespace`` (a plain agent-memory
namespace, the tenant boundary; ``None`` is the default namespace):

* its id is derived from ``(memory_namespace, namespace, key)`` (a SHA-256 digest), so
  ``get`` and ``delete`` are one lookup;
* the LangGraph namespace tuple is stored as JSON in the memory's metadata, and as one
  digest tag per prefix length (``("a", "b")`` carries the tags of ``("a",)`` and
  ``("a", "b")``) plus a marker tag: any characters work in labels, and a search or a
  namespace listing under a prefix is a tag filter of the index;
* the value is stored as JSON in the metadata (at most 64 KiB of JSON); the memory's
  content, the text that is embedded (cut at 16 KiB), is taken from the value's index fields
  (``index_fields``, default ``["$"]``: the whole value as JSON; or the ``index=``
  argument of ``put``), several texts joined by newlines. ``index=False`` (or fields
  that are absent from the value) stores the item unindexed: it is found by key, by
  filters and listings, and comes after every scored item in a semantic search,
  without a score;
* ``created_at`` is kept across overwrites; ``updated_at`` is the time of the last put
  (both from ``clock``, microsecond resolution; an overwrite is always later).

Operations:

* ``search(prefix, query=...)`` is a vector search of our index restricted to the
  prefix, ordered by cosine similarity (``SearchItem.score`` is the similarity, no
  threshold). It ranks at most the 1000 nearest items (the store's largest ``k``):
  a page past them (``offset + limit`` over 1000) or a filter that leaves fewer
  than the page among them goes on with every other item of the prefix, unscored
  (``score`` ``None``) and newest first, after the ranked ones, as unindexed items
  do; that part reads the whole prefix. So every page is full until the items run
  out, and a filtered search finds a matching item wherever it ranks. Without
  ``query`` items come newest ``updated_at`` first (at the store's millisecond
  resolution), any ``limit`` (read 10,000 per store call).
* ``filter=`` matches value fields client-side, as LangGraph's ``InMemoryStore`` does:
  equality (nested objects and lists compare as JSON) and ``$eq``, ``$ne``, ``$gt``,
  ``$gte``, ``$lt``, ``$lte``. A listing with a filter reads the whole prefix.
* TTL (``supports_ttl = True``): ``put(..., ttl=minutes)`` sets a server-side expiry,
  applied atomically with the write; reads with ``refresh_ttl`` (the default, see
  ``TTLConfig.refresh_on_read``) restart it: that is a write (the expiry of each item
  returned is rewritten in its indexed record), one ``expire_many`` step (two round
  trips) for all the items of a get batch or a search; ``refresh_on_read=False`` or
  ``refresh_ttl=False`` turns it off. ``TTLConfig.default_ttl`` applies to puts without
  ``ttl``. No sweeper is needed: the server expires keys itself.
* ``list_namespaces(prefix=, suffix=, max_depth=, limit=, offset=)`` reads the
  namespaces of the items under the longest wildcard-free part of ``prefix``
  (every item when there is none): cost grows with that number of items.
* A batch checks every operation before it runs the first one: a bad namespace, key,
  value (not a JSON object with string keys, NaN, a set..., objects and arrays nested
  more than 100 deep, an int beyond the float range such as ``10**400``), ``ttl``
  (at most ten years), ``index``, filter (an operand is checked as a value is), limit,
  offset or depth refuses the whole batch with ``InvalidInputError`` and nothing is
  written or deleted. A stored number a filter cannot compare (another writer's
  ``10**400``) does not match ``$gt``/``$gte``/``$lt``/``$lte``. ``put(..., index="text")`` is refused (write
  ``index=["text"]``), where LangGraph's ``InMemoryStore`` reads a string as one path
  per character.
* A batch runs its operations in order; consecutive puts are one step (one read of the
  previous items, one deletion, one ``remember_many``; the last put of a key wins),
  consecutive gets one read. An overwrite deletes the previous memory before writing
  the new one: a concurrent reader can miss the item for that instant.

``batch`` drives a :class:`~agent_memory.SyncMemoryStore`, ``abatch`` a
:class:`~agent_memory.MemoryStore` (or the sync store in a worker thread when only that
one is given). Both run the same operation plans.
"""

from __future__ import annotations

from agent_memory.integrations.langgraph.plans import MARKER_TAG, NOINDEX_TAG
from agent_memory.integrations.langgraph.store import AgentMemoryStore
from agent_memory.integrations.langgraph.values import matches_filter, prefix_tag

__all__ = [
    "MARKER_TAG",
    "NOINDEX_TAG",
    "AgentMemoryStore",
    "matches_filter",
    "prefix_tag",
]
