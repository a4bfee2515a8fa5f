"""LlamaIndex's ``AsyncDBChatStore`` on Valkey / Redis: the short-term queue of ``Memory``.

>>> chat_store = AgentMemoryDBChatStore(client=client, async_client=aclient, name="my_agent")
>>> memory = Memory.from_defaults(session_id="user-42", chat_store=chat_store)

The messages of chat ``key`` (``Memory``'s ``session_id``) are one sorted set,
``{name}:li_db:{key}``. Each message is the member ``<id>:<ChatMessage JSON>`` (JSON by
:mod:`.codec`), scored ``+id`` while it is ACTIVE and ``-id`` once ARCHIVED. ``id`` is
the message's id in its chat: one more than the largest id the chat holds when the
message is added (SQLite's rowid rule), so ids follow the order of addition. Hence:

* the ACTIVE queue, oldest first, is the scores above 0 ascending, the archive the
  scores below 0 descending: reading one status is one ``ZRANGE ... BYSCORE LIMIT``,
  counting it one ``ZCOUNT``, whatever the size of the archive;
* every status at once (``status=None``) is the two ranges merged by id, in a script;
* archiving negates scores and keeps members: ``archive_oldest_messages`` is one script.

Every method is one round trip on one key (plus the cache's stats counters; when ``ttl``
is set, the command or script restarts the chat's lifetime in one script, only when it
succeeded: a sliding lifetime refreshed by each read and write, never given to another
client's key of another type, which is refused), so each is atomic and cluster-safe:
multi-step changes are single-key scripts (:mod:`.scripts`). ``get_keys`` walks the keyspace with ``SCAN`` on every primary: a
maintenance call.

Semantics are ``SQLAlchemyChatStore``'s: a status filter, then ``offset`` and ``limit``,
oldest first; ``status=None`` is every status; ``delete_oldest_messages`` and
``archive_oldest_messages`` take the oldest ACTIVE messages and return them; ``idx`` of
``delete_message`` is a message id (``None`` when the chat has none such). Differences:
bad input raises :class:`~agent_memory.errors.InvalidInputError` where SQLite accepts it
(an empty key; a negative ``limit``, ``offset`` or ``n``, which SQLite reads as "no
limit"; a status that is not a ``MessageStatus``); ``add_messages(key, [])`` does nothing
(SQL fails); ids count per chat, not per table; ``count_messages`` counts stored entries,
corrupt ones included, while reads skip them (logged and counted in :attr:`skipped`).

Modules: the keys, the member format and the name rule, :mod:`.layout`; the argument
checks, :mod:`.checks`; the operations (generators, no I/O), :mod:`.ops`, whose scripts
are in :mod:`agent_memory.integrations.llama_index.scripts` (with the chat store's); the
class, :mod:`.store`.
"""

from __future__ import annotations

from agent_memory.integrations.llama_index.db_chat_store.layout import (
    SEGMENT,
    chat_key,
    decode_entry,
)
from agent_memory.integrations.llama_index.db_chat_store.store import AgentMemoryDBChatStore

__all__ = ["SEGMENT", "AgentMemoryDBChatStore", "chat_key", "decode_entry"]
