"""The operations of a conversation store (generators, no I/O).

Each one sends its commands and scripts (:mod:`.scripts`) through the store's tier, in
the round trips the package docstring counts, and parses the replies into pydantic-ai
values; :mod:`.store` runs them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord

from agent_memory.cache._tier import TierCore
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core import replies
from agent_memory.core.effects import Command, Operation
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import (
    AgentMemoryError,
    InvalidInputError,
    NotFoundError,
    ReplyParseError,
)
from agent_memory.integrations._list_log import READS, WRITES
from agent_memory.integrations.pydantic_ai.codec import decode_message, decode_record
from agent_memory.integrations.pydantic_ai.conversation_store import scripts
from agent_memory.integrations.pydantic_ai.conversation_store.layout import Layout

# The logger of the module this package was, so logging configurations keep working.
logger = logging.getLogger("agent_memory.integrations.pydantic_ai.conversation_store")

# -- operations (generators, no I/O) --------------------------------------------------------


def _send(tier: TierCore, commands: Sequence[Command], counter: str | None) -> Operation[list[Any]]:
    counts = {counter: 1} if counter else None
    got = yield from batch_with_stats(tier.layout, tier.buffer, commands, counts)
    raise_first_error(got)
    return got


def _array(raw: object, what: str) -> list[Any]:
    if not isinstance(raw, (list, tuple)):
        raise ReplyParseError(f"{what} replied with a {type(raw).__name__}, not an array")
    return list(raw)


def _status(raw: object, what: str) -> tuple[bool, list[str]]:
    """A script's ``[status, id...]`` reply."""
    reply = _array(raw, what)
    if not reply:
        raise ReplyParseError(f"{what} replied with an empty array")
    return replies.integer(reply[0]) == 1, [replies.text(item) for item in reply[1:]]


#: The ``{name}:__stats`` counter of released messages whose deletion failed.
CLEANUP_FAILURES = "session:cleanup_failures"


def _unlink(tier: TierCore, layout: Layout, entry_ids: Sequence[str]) -> Operation[None]:
    """Delete released entries' message keys (one command each: they live in different
    slots). Best effort: the script that released them has committed, so a failure here
    must not report that write as failed (a retry would then conflict); the messages
    stay, unreferenced, a warning says so and :data:`CLEANUP_FAILURES` counts it."""
    if not entry_ids:
        return
    try:
        yield from _send(tier, [Command(("UNLINK", layout.entry(i))) for i in entry_ids], None)
    except AgentMemoryError as exc:
        logger.warning(
            "could not delete %d released message(s) of conversation store %s: %s",
            len(entry_ids),
            layout.catalog,
            exc,
        )
        tier.buffer.add({CLEANUP_FAILURES: 1})  # rides on the store's next round trip


def load_record(
    tier: TierCore, layout: Layout, conversation_id: str
) -> Operation[ConversationRecord | None]:
    """The record of ``conversation_id`` (``None``: not stored).

    Raises:
        ReplyParseError: a stored record this pydantic-ai cannot read.
    """
    command = Command(("HGET", layout.record(conversation_id), "record"), binary=True)
    (raw,) = yield from _send(tier, [command], READS)
    if raw is None:
        return None
    record = decode_record(raw)
    if record is None or record.conversation_id != conversation_id:
        raise ReplyParseError(
            f"the stored record of conversation {conversation_id!r} cannot be read (written "
            "by hand, or by a pydantic-ai whose format this one rejects); it is left as it is"
        )
    return record


def list_records(
    tier: TierCore, layout: Layout, scope: str | None, limit: int | None
) -> Operation[tuple[list[ConversationRecord], int, int]]:
    """The records of ``scope`` (all when ``None``), newest first, how many were
    unreadable (skipped) and how many the index named but were gone (the listing script
    dropped them from the index)."""
    (raw,) = yield from _send(tier, [scripts.records_call(layout, scope, limit)], READS)
    flat = _array(raw, "the record listing")
    records: list[ConversationRecord] = []
    skipped = dropped = 0
    for member, value in zip(flat[::2], flat[1::2], strict=True):
        record = decode_record(value) if value else None
        if value is None:
            dropped += 1
        elif record is None or record.conversation_id != replies.lenient_text(member):
            skipped += 1
        elif scope is None or record.scope == scope:  # the index's digest is only a hint
            records.append(record)
    return records, skipped, dropped


def store_record(
    tier: TierCore,
    layout: Layout,
    record: ConversationRecord,
    encoded_record: bytes,
    entries: Sequence[tuple[ConversationEntry, bytes]],
    expected_revision: str | None,
) -> Operation[bool]:
    """Store new entries' messages, then compare-and-set the record (``False``: a
    conflict, nothing kept).

    Raises:
        InvalidInputError: a new entry's id holds another message already (shared by
            the histories reaching it: never replaced), or its parent is neither stored
            nor an earlier new entry; the record is not written, and the messages this
            call stored are deleted again.
    """
    if entries:
        calls = [scripts.entry_call(layout, e, m) for e, m in entries]
        written = yield from _send(tier, calls, None)
        outcomes = [replies.integer(reply) for reply in written]
        taken = [entry.id for (entry, _), got in zip(entries, outcomes, strict=True) if got == 0]
        if taken:
            created = [e.id for (e, _), got in zip(entries, outcomes, strict=True) if got == 1]
            yield from _unlink(tier, layout, created)
            raise InvalidInputError(
                f"entry {taken[0]!r} is stored with another message (entry ids must be "
                "unique: a stored message is shared by every history reaching it)",
                field="new_entries.id",
            )
    write = scripts.write_call(layout, record, encoded_record, entries, expected_revision)
    (raw,) = yield from _send(tier, [write], WRITES)
    reply = _array(raw, "the record write")
    if reply and replies.integer(reply[0]) == 2:
        entry_id, parent_id, *unreferenced = [replies.text(item) for item in reply[1:]]
        yield from _unlink(tier, layout, unreferenced)
        raise InvalidInputError(
            f"entry {entry_id!r} points at {parent_id!r}, which is neither stored nor an "
            "earlier new entry",
            field="new_entries.parent_id",
        )
    stored, unreferenced = _status(raw, "the record write")
    yield from _unlink(tier, layout, unreferenced)
    if stored:
        tier.note_stored(len(encoded_record) + sum(len(message) for _, message in entries))
    return stored


def drop_record(
    tier: TierCore, layout: Layout, conversation_id: str, expected_revision: str
) -> Operation[bool]:
    """Delete a record and release what only it reached (``False``: no record with
    that revision)."""
    delete = scripts.delete_call(layout, conversation_id, expected_revision)
    (raw,) = yield from _send(tier, [delete], WRITES)
    deleted, released = _status(raw, "the record delete")
    yield from _unlink(tier, layout, released)
    return deleted


def load_history(
    tier: TierCore, layout: Layout, head_id: str, limit: int | None
) -> Operation[tuple[list[ConversationEntry], int]]:
    """The entries up to ``head_id`` (the last ``limit``), oldest first, and how many
    corrupt ones were skipped.

    Raises:
        NotFoundError: an entry of the history is not stored (released meanwhile).
    """
    (raw,) = yield from _send(tier, [scripts.chain_call(layout, head_id, limit)], READS)
    reply = _array(raw, "the history walk")
    if reply and replies.integer(reply[0]) == 2:
        raise ReplyParseError(
            f"the history up to entry {head_id!r} loops: the store's links were changed "
            "by another writer; nothing was read (the walk stopped after as many steps "
            "as there are links)"
        )
    found, flat = _status(raw, "the history walk")
    if not found:
        raise NotFoundError(f"entry {flat[0]!r} is not in the store")
    chain = list(zip(flat[::2], flat[1::2], strict=True))[::-1]  # oldest first
    fetch = [Command(("HMGET", layout.entry(i), "message", "kind"), binary=True) for i, _ in chain]
    payloads = yield from _send(tier, fetch, None)
    entries: list[ConversationEntry] = []
    for (entry_id, parent_id), payload in zip(chain, payloads, strict=True):
        message, kind = _array(payload, "HMGET")
        if message is None and kind is None:
            raise NotFoundError(f"entry {entry_id!r} is not in the store")
        decoded = decode_message(message) if replies.lenient_text(kind) == "message" else None
        if decoded is not None:
            entries.append(
                ConversationEntry(id=entry_id, parent_id=parent_id or None, message=decoded)
            )
    return entries, len(chain) - len(entries)


def load_entry(tier: TierCore, layout: Layout, entry_id: str) -> Operation[ConversationEntry]:
    """One entry.

    Raises:
        NotFoundError: not stored.
        ReplyParseError: stored, but its message cannot be read.
    """
    command = Command(("HMGET", layout.entry(entry_id), "message", "kind", "parent"), binary=True)
    (raw,) = yield from _send(tier, [command], READS)
    message, kind, parent = _array(raw, "HMGET")
    if message is None and kind is None:
        raise NotFoundError(f"entry {entry_id!r} is not in the store")
    decoded = decode_message(message) if replies.lenient_text(kind) == "message" else None
    parent_id = replies.lenient_text(parent)
    if decoded is None or (parent is not None and not parent_id):
        raise ReplyParseError(f"the stored entry {entry_id!r} cannot be read")
    return ConversationEntry(id=entry_id, parent_id=parent_id, message=decoded)


__all__ = [
    "CLEANUP_FAILURES",
    "drop_record",
    "list_records",
    "load_entry",
    "load_history",
    "load_record",
    "store_record",
]
