"""pydantic-ai's ``ConversationStore`` on Valkey / Redis (the ``pydantic-ai`` extra).

>>> store = AgentMemoryConversationStore(client=aclient, name="my_agent")
>>> conversation = await store.load(cid, scope=user) or Conversation(conversation_id=cid)
>>> await store.save(await agent.run("Hi", conversation=conversation), scope=user)

pydantic-ai's base class does the bookkeeping (which messages are new, where a history
branches, what a fork shares); this backend implements its storage primitives, so every
method behaves as ``InMemoryConversationStore``'s does.

Layout. ``<c>`` is 16 hex digits of SHA-256 of ``name``: the hash tag that puts a
store's *catalog* (records, indexes, the entry graph) in one cluster slot. An entry's
message is immutable and shared by every conversation whose history reaches it (a fork
points into the conversation it came from), so messages live outside the catalog, one
key per entry, spread over the cluster::

    <name>:pai_conv:{<c>}:rec:<conversation_id>  HASH  record (JSON), revision, tips,
                                                       scope_index, updated
    <name>:pai_conv:{<c>}:updated                ZSET  conversation ids by updated_at (us)
    <name>:pai_conv:{<c>}:scope:<s>              ZSET  the same, for one scope (<s>: 32
                                                       hex digits of SHA-256 of the scope)
    <name>:pai_conv:{<c>}:links                  HASH  entry id -> parent id ("": first)
    <name>:pai_conv:{<c>}:refs                   HASH  entry id -> references to it
    <name>:pai_conv:entry:<entry_id>             HASH  message (JSON, :mod:`.codec`), kind,
                                                       parent

A record's ``tips`` are its ``head_id`` and ``branches`` that name stored entries. An
entry's references are the records naming it as a tip plus its stored children; an
entry nobody references any more is *released*: its link and count leave the catalog
and its message key is unlinked. So ``delete`` erases the entries no remaining history
reaches, as ``InMemoryConversationStore`` does, and keeps those a fork still uses.

Round trips per method (pydantic-ai's ``load`` = ``read_record`` + ``read_history``;
``save`` = ``read_record`` [+ ``read_history``] + ``write_record``):

* ``read_record``: 1 (``HGET``).
* ``read_records``: 1 (a script: index range and the records, one slot).
* ``write_record``: 1 script; before it, when there are new entries, 1 pipeline storing
  their messages (a one-key script per entry key, storing the message unless the key
  holds another one: a reused entry id never replaces a message other histories share;
  the record must never name an entry the server has not acknowledged, and on a
  cluster a pipeline's nodes fail independently); after it, 1 ``UNLINK`` pipeline only
  when entries were released or a conflict or refusal orphaned the messages just
  written.
* ``delete_record``: 1 script, then 1 ``UNLINK`` pipeline of the released messages.
* ``read_history``: 2 whatever the length: a script walks ``links`` from the head (the
  id chain, in the catalog's slot), then one pipeline of ``HMGET`` per entry (a cluster
  client sends one batch per node). 0 for no head or ``limit=0``.
* ``read_entry``: 1 (``HMGET``).

So ``load`` takes 3 round trips whatever the history's length, ``save`` of a loaded
conversation or a run's result 3, ``list_conversations`` 1, ``fork`` 4 (no message is
copied), ``delete`` 2 or 3. Each call also counts itself as ``session:reads`` or
``session:writes`` in ``{name}:__stats``, in a round trip it makes anyway.

Atomic: each script runs on the catalog slot alone, so ``write_record``'s revision check
(compare-and-set on the record), the record, both indexes and the entry graph change
together or not at all; likewise ``delete_record``. Not atomic: a message key is written
before and deleted after the script that links or releases it (that deletion is best
effort: a failure is logged, never reported as a failed write). An interrupted save can
leave messages no record reaches (never read, not listed); a reader racing a delete can
find an entry gone, which pydantic-ai's base class takes for a concurrent change (it
reads the record again and retries or reports the conversation gone).

Scope: a record's ``scope`` is stored in the record and indexes it in its own sorted set,
so ``list_conversations(scope=s)`` reads that set only (and re-checks each record's
scope); ``load``/``branch``/``fork``/``delete`` with ``scope=`` compare the stored scope,
so a tenant's scope never reaches another tenant's conversation. Conversation ids are
keys of one store: as pydantic-ai's docs say, make them unguessable or prefix them per
tenant.

Histories never loop: ``write_record`` refuses (``InvalidInputError``, nothing written)
new entries that repeat an id, name themselves or a later new entry as parent (checked
before anything is sent), or name a parent neither stored nor an earlier new entry
(checked by the write script). Should another writer leave links that loop, the history
walk stops after as many steps as there are links and raises ``ReplyParseError``, rather
than keep the server busy.

Corrupt data (not written by this codec, or by a pydantic-ai whose schema this one
rejects): an entry's message is skipped in histories, logged (never its content) and
counted in :attr:`AgentMemoryConversationStore.skipped`, its neighbours keep their ids;
``read_entry`` of it raises :class:`~agent_memory.errors.ReplyParseError`. A record that
cannot be read raises ``ReplyParseError`` from ``load``/``save``/``delete`` of that
conversation (it may be a newer release's, so it is never overwritten) and is skipped,
logged and counted by ``list_conversations`` (whose ``limit`` counts the records it
skipped). A record that is gone while an index still names it (deleted or evicted
outside the store: the scripts change a record and its indexes together) is no
corruption: ``list_conversations`` drops its id from the index it read, in the same
script, and logs and counts it (``ghost_entries`` in ``agent_memory_events``, as the
memory store counts registry entries naming no memory); its ``limit`` counts those
too, and the entries that record held stay, unreferenced. A key of another type raises :class:`~agent_memory.errors.WrongTypeError`;
the scripts check every catalog key's type before they change anything, so the catalog is
left as it was (a save's new messages, stored just before, may remain unreferenced).

Names: a name must not contain ``:pai_conv`` followed by ``:`` or at its end, so no two
stores' keys can meet (``InvalidInputError``).

Limits: no TTL (an entry shared by a fork must outlive the conversation that wrote it;
``delete`` frees space). ``updated_at`` is ordered to the microsecond, and records saved
in the same microsecond list in reverse id order, not insertion order. Entry ids are non-empty
text without a newline, up to 1024 characters; conversation ids non-empty text up to
1024 characters; a scope any text up to 1024 characters.

In-process: the store also runs on the library's
:class:`~agent_memory.backends.inprocess.AsyncInProcessClient` /
:class:`~agent_memory.backends.inprocess.InProcessClient` (no server, for unit tests),
each script as its Python twin (:mod:`.twins`), checked against the server's Lua on the
same data, the refusals and damaged catalogs included.

Modules: the keys, :mod:`.layout`; the server-side scripts and the calls that run them,
:mod:`.scripts`; their in-process twins, :mod:`.twins`; the input checks, :mod:`.checks`;
the operations (generators, no I/O), :mod:`.ops`; the class, :mod:`.store`.
"""

from __future__ import annotations

from agent_memory.integrations.pydantic_ai.conversation_store.layout import SEGMENT, Layout
from agent_memory.integrations.pydantic_ai.conversation_store.ops import (
    CLEANUP_FAILURES as CLEANUP_FAILURES,  # importable here as before (not in __all__)
)
from agent_memory.integrations.pydantic_ai.conversation_store.store import (
    AgentMemoryConversationStore,
)

__all__ = ["SEGMENT", "AgentMemoryConversationStore", "Layout"]
