"""The operations of the chat store on Valkey lists (generators, no I/O).

A key's messages are the list ``{name}:li_chat:{key}``, one JSON message per element,
oldest first (:mod:`.codec`). Reads, appends and the last-message pop are run by
:mod:`agent_memory.integrations._list_log`; whole-list rewrites are one script each
(:mod:`.scripts`). Each operation is one round trip of single-key commands (plus the
cache's stats counters), so it is atomic and cluster-safe; with a TTL the command or
script restarts the key's lifetime in the same script (a sliding lifetime), only when it
succeeded: a key of another type is refused and keeps its own lifetime.
:func:`list_keys` walks the keyspace with ``SCAN`` on every primary. :func:`on_key`, :func:`script_on_key` and :func:`keys_under` serve the DB
chat store (:mod:`.db_chat_store`) too.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from llama_index.core.llms import ChatMessage

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import glob_escape
from agent_memory.core.effects import Command, Operation, scan_keys
from agent_memory.integrations import _list_log
from agent_memory.integrations._keys import keys_after
from agent_memory.integrations.llama_index import scripts
from agent_memory.integrations.llama_index.codec import decode_message

#: The key segment of the chat stores: ``{name}:li_chat:{key}``.
SEGMENT = "li_chat"

#: Messages read back and how many stored elements were corrupt (skipped).
Read = tuple[list[ChatMessage], int]


def chat_key(name: str, key: str) -> str:
    """The list holding chat ``key`` of cache name ``name`` (pure)."""
    return _list_log.log_key(name, SEGMENT, key)


def on_key(
    tier: TierCore, key: str, command: Command, ttl_ms: int | None, counter: str
) -> Operation[Any]:
    """Run ``command`` (whose only key is its first argument, ``key``) and return its
    reply, in one round trip with the ``counter`` increment; with ``ttl_ms``, the
    command and the restart of ``key``'s lifetime are one script, so a command the
    server refuses (a key of another type) leaves the key's lifetime as it was.

    Raises:
        AgentMemoryError: the command failed (mapped by the client layer).
    """
    return _list_log.access(tier, key, command, ttl_ms, counter)


def script_on_key(
    tier: TierCore, key: str, source: str, args: Sequence[Any], ttl_ms: int | None, counter: str
) -> Operation[Any]:
    """Run the single-key script ``source`` (of :mod:`.scripts`) on ``key`` as
    :func:`on_key` runs a command: with ``ttl_ms``, as :func:`.scripts.with_lifetime`
    wraps it, so the lifetime restarts only when the script succeeded."""
    if ttl_ms is None:
        command = Command(("EVAL", source, "1", key, *args))
    else:
        command = Command(("EVAL", scripts.with_lifetime(source), "1", key, ttl_ms, *args))
    return on_key(tier, key, command, None, counter)


def get(tier: TierCore, key: str, ttl_ms: int | None) -> Operation[Read]:
    """Every valid message, oldest first, and the number of corrupt elements skipped."""
    return _list_log.read_latest(tier, key, None, ttl_ms, decode_message)


def append(
    tier: TierCore, key: str, encoded: Sequence[bytes], ttl_ms: int | None
) -> Operation[None]:
    """Append encoded messages atomically (one ``RPUSH``)."""
    return _list_log.append(tier, key, encoded, ttl_ms)


def replace(
    tier: TierCore, key: str, encoded: Sequence[bytes], ttl_ms: int | None
) -> Operation[None]:
    """Replace the whole list with ``encoded`` (deleting it when empty), atomically."""
    yield from script_on_key(
        tier, key, scripts.SET, encoded, ttl_ms if encoded else None, _list_log.WRITES
    )
    tier.note_stored(sum(map(len, encoded)))


def insert(
    tier: TierCore, key: str, index: int, encoded: bytes, ttl_ms: int | None
) -> Operation[None]:
    """Insert one encoded message before position ``index`` (``list.insert`` rules)."""
    yield from script_on_key(tier, key, scripts.INSERT, (index, encoded), ttl_ms, _list_log.WRITES)
    tier.note_stored(len(encoded))


def take_all(tier: TierCore, key: str) -> Operation[tuple[list[ChatMessage] | None, int]]:
    """Delete the list; its valid messages (``None`` when there was none) and the number
    of corrupt elements among them.

    Raises:
        ReplyParseError: the script's reply is neither nil nor a list.
    """
    raw = yield from script_on_key(tier, key, scripts.TAKE_ALL, (), None, _list_log.WRITES)
    if raw is None:
        return None, 0
    return _list_log.decode_entries(raw, decode_message)


def take_at(
    tier: TierCore, key: str, index: int, ttl_ms: int | None
) -> Operation[tuple[ChatMessage | None, int]]:
    """Remove the element at ``index`` (negative: from the end); the message it held
    (``None`` when out of range or corrupt) and ``1`` when it was corrupt."""
    tombstone = f"\x00li_chat:deleted:{uuid.uuid4().hex}"
    args = (index, tombstone)
    raw = yield from script_on_key(tier, key, scripts.TAKE_AT, args, ttl_ms, _list_log.WRITES)
    if raw is None:
        return None, 0
    message = decode_message(raw)
    return message, int(message is None)


def pop_last(
    tier: TierCore, key: str, ttl_ms: int | None
) -> Operation[tuple[ChatMessage | None, int]]:
    """Remove the newest valid message (one ``RPOP`` when the newest element is valid,
    see :func:`~agent_memory.integrations._list_log.pop_latest`); it (``None`` when
    there is none) and how many corrupt elements were dropped on the way."""
    return _list_log.pop_latest(tier, key, ttl_ms, decode_message)


def list_keys(name: str) -> Operation[tuple[list[str], int]]:
    """The chat keys of ``name`` that hold messages, sorted (``SCAN`` on every primary;
    the prefix is glob-escaped, so only this name's chats match), and how many keys
    were not UTF-8 text (skipped: see :func:`keys_under`)."""
    return keys_under(chat_key(name, ""))


def keys_under(prefix: str) -> Operation[tuple[list[str], int]]:
    """The rest of every key that starts with ``prefix``, sorted (``SCAN`` on every
    primary; the prefix is glob-escaped), and how many keys another writer made that
    are not UTF-8 text (skipped, for the caller to log and count), whatever the
    client's ``decode_responses``."""
    found = yield from scan_keys(glob_escape(prefix) + "*", binary=True)
    keys, unreadable = keys_after(found, prefix)
    return sorted(set(keys)), unreadable


__all__ = [
    "SEGMENT",
    "append",
    "chat_key",
    "get",
    "insert",
    "keys_under",
    "list_keys",
    "on_key",
    "pop_last",
    "replace",
    "script_on_key",
    "take_all",
    "take_at",
]
