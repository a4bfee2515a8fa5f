"""The operations of a DB chat store on one sorted set per chat (generators, no I/O).

Each one is one round trip on one key (:mod:`.layout`): a ``ZRANGE`` / ``ZCOUNT`` /
``ZREMRANGEBYSCORE`` command or a single-key script of
:mod:`agent_memory.integrations.llama_index.scripts`, sent by the chat store's
:func:`~agent_memory.integrations.llama_index.ops.on_key` /
:func:`~agent_memory.integrations.llama_index.ops.script_on_key`; replies are parsed
into ``ChatMessage`` values here. :mod:`.store` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.llms import ChatMessage
from llama_index.core.storage.chat_store.base_db import MessageStatus

from agent_memory.cache._tier import TierCore
from agent_memory.core.effects import Command, Operation
from agent_memory.errors import ReplyParseError
from agent_memory.integrations._list_log import READS, WRITES, decode_entries
from agent_memory.integrations.llama_index import scripts
from agent_memory.integrations.llama_index.db_chat_store.layout import SIGN, decode_entry
from agent_memory.integrations.llama_index.ops import on_key, script_on_key

#: Messages read back and how many stored entries were corrupt (skipped).
Read = tuple[list[ChatMessage], int]


def _range(key: str, status: MessageStatus, offset: int, count: int) -> Command:
    """One status's members, oldest first, from ``offset`` on (``count`` -1: all)."""
    if status is MessageStatus.ACTIVE:
        return Command(("ZRANGE", key, "(0", "+inf", "BYSCORE", "LIMIT", offset, count))
    # archived scores are -id: the oldest is the one nearest to 0
    return Command(("ZRANGE", key, "(0", "-inf", "BYSCORE", "REV", "LIMIT", offset, count))


def _count(key: str, status: MessageStatus | None) -> Command:
    if status is None:
        return Command(("ZCARD", key))
    if status is MessageStatus.ACTIVE:
        return Command(("ZCOUNT", key, "(0", "+inf"))
    return Command(("ZCOUNT", key, "-inf", "(0"))


# -- operations (generators, no I/O) -------------------------------------------------------


def read(
    tier: TierCore,
    key: str,
    status: MessageStatus | None,
    offset: int,
    count: int,
    ttl_ms: int | None,
) -> Operation[Read]:
    """The valid messages of ``status`` (``None``: all), oldest first, from ``offset``
    on, at most ``count`` (-1: all), and how many corrupt entries were skipped.

    Raises:
        ReplyParseError: the reply is not a list.
    """
    if status is None:
        args = (offset, count)
        raw = yield from script_on_key(tier, key, scripts.DB_GET_ALL, args, ttl_ms, READS)
    else:
        raw = yield from on_key(tier, key, _range(key, status, offset, count), ttl_ms, READS)
    return decode_entries(raw, decode_entry)


def count(
    tier: TierCore, key: str, status: MessageStatus | None, ttl_ms: int | None
) -> Operation[int]:
    """How many entries of ``status`` (``None``: all) the chat stores.

    Raises:
        ReplyParseError: the reply is not an integer.
    """
    raw = yield from on_key(tier, key, _count(key, status), ttl_ms, READS)
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise ReplyParseError(f"a count of chat {key} replied with {raw!r}")
    return raw


def add(
    tier: TierCore,
    key: str,
    encoded: Sequence[bytes],
    status: MessageStatus,
    ttl_ms: int | None,
    *,
    replace: bool,
) -> Operation[None]:
    """Append encoded messages with ``status`` (after deleting every message of the
    chat when ``replace``), atomically, each with the next id."""
    source = scripts.DB_SET if replace else scripts.DB_ADD
    args = (SIGN[status], *encoded)
    yield from script_on_key(tier, key, source, args, ttl_ms, WRITES)
    tier.note_stored(sum(map(len, encoded)))


def take_oldest(
    tier: TierCore, key: str, n: int, ttl_ms: int | None, *, archive: bool
) -> Operation[Read]:
    """Archive (or delete) the ``n`` oldest ACTIVE entries; their valid messages, oldest
    first, and how many of them were corrupt.

    Raises:
        ReplyParseError: the reply is not a list.
    """
    args = (n, int(archive))
    raw = yield from script_on_key(tier, key, scripts.DB_TAKE_OLDEST, args, ttl_ms, WRITES)
    return decode_entries(raw, decode_entry)


def take_id(
    tier: TierCore, key: str, idx: int, ttl_ms: int | None
) -> Operation[tuple[ChatMessage | None, int]]:
    """Delete message ``idx`` (either status); it (``None`` when there was none or it was
    corrupt) and ``1`` when it was corrupt."""
    raw = yield from script_on_key(tier, key, scripts.DB_TAKE_ID, (idx,), ttl_ms, WRITES)
    if raw is None:
        return None, 0
    message = decode_entry(raw)
    return message, int(message is None)


def delete(
    tier: TierCore, key: str, status: MessageStatus | None, ttl_ms: int | None
) -> Operation[None]:
    """Delete the chat's messages of ``status`` (``None``: the whole chat)."""
    if status is None:
        yield from on_key(tier, key, Command(("UNLINK", key)), None, WRITES)
        return
    low, high = ("(0", "+inf") if status is MessageStatus.ACTIVE else ("-inf", "(0")
    yield from on_key(tier, key, Command(("ZREMRANGEBYSCORE", key, low, high)), ttl_ms, WRITES)


__all__ = ["Read", "add", "count", "delete", "read", "take_id", "take_oldest"]
