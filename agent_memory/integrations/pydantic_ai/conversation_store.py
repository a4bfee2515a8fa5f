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
  their messages (``HSET`` per entry key; the record must never name an entry the server
  has not acknowledged, and on a cluster a pipeline's nodes fail independently); after
  it, 1 ``UNLINK`` pipeline only when entries were released or a conflict orphaned the
  messages just written.
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

Corrupt data (not written by this codec, or by a pydantic-ai whose schema this one
rejects): an entry's message is skipped in histories, logged (never its content) and
counted in :attr:`AgentMemoryConversationStore.skipped`, its neighbours keep their ids;
``read_entry`` of it raises :class:`~agent_memory.errors.ReplyParseError`. A record that
cannot be read raises ``ReplyParseError`` from ``load``/``save``/``delete`` of that
conversation (it may be a newer release's, so it is never overwritten) and is skipped,
logged and counted by ``list_conversations`` (whose ``limit`` counts the records it
skipped). A key of another type raises :class:`~agent_memory.errors.WrongTypeError`;
the scripts check every catalog key's type before they change anything, so the catalog is
left as it was (a save's new messages, stored just before, may remain unreferenced).

Limits: no TTL (an entry shared by a fork must outlive the conversation that wrote it;
``delete`` frees space). ``updated_at`` is ordered to the microsecond, and records saved
in the same microsecond list in reverse id order, not insertion order. Entry ids are non-empty
text without a newline, up to 1024 characters; conversation ids non-empty text up to
1024 characters; a scope any text up to 1024 characters.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from prometheus_client import CollectorRegistry
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import check_name, check_text
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core import replies
from agent_memory.core.checks import check_str
from agent_memory.core.clients import client_from_url, is_async_client
from agent_memory.core.effects import Arg, Command, Operation, T
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import (
    AgentMemoryError,
    InvalidInputError,
    NotFoundError,
    ReplyParseError,
    StoreClosedError,
)
from agent_memory.integrations._keys import digest
from agent_memory.integrations._list_log import READS, WRITES
from agent_memory.integrations._runners import Runners
from agent_memory.integrations.pydantic_ai.codec import (
    decode_message,
    decode_record,
    encode_messages,
    encode_record,
)

logger = logging.getLogger(__name__)

#: The key segment of every key of a conversation store.
SEGMENT = "pai_conv"
_OWNER = "AgentMemoryConversationStore"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


# -- layout ------------------------------------------------------------------------------


class Layout:
    """Every key of the conversation store named ``name`` (pure)."""

    __slots__ = ("catalog", "entry_prefix", "links", "record_prefix", "refs", "updated")

    def __init__(self, name: str) -> None:
        self.catalog = f"{name}:{SEGMENT}:{{{digest(name, 16)}}}"
        self.record_prefix = f"{self.catalog}:rec:"
        self.updated = f"{self.catalog}:updated"
        self.links = f"{self.catalog}:links"
        self.refs = f"{self.catalog}:refs"
        self.entry_prefix = f"{name}:{SEGMENT}:entry:"

    def record(self, conversation_id: str) -> str:
        """The hash holding one conversation's record."""
        return self.record_prefix + conversation_id

    def scope(self, scope: str) -> str:
        """The sorted set of the conversations saved with ``scope``."""
        return f"{self.catalog}:scope:{digest(scope, 32)}"

    def entry(self, entry_id: str) -> str:
        """The hash holding one entry's message (no hash tag: entries spread out)."""
        return self.entry_prefix + entry_id


# -- server-side scripts (KEYS all in the catalog's slot) -----------------------------------

_HELPERS = """
local function wrong_type(expected)
  for _, pair in ipairs(expected) do
    local found = redis.call('TYPE', pair[1])['ok']
    if found ~= 'none' and found ~= pair[2] then
      return redis.error_reply('WRONGTYPE ' .. pair[1] .. ' holds a ' .. found ..
                               ', not a ' .. pair[2])
    end
  end
  return nil
end
local function lines(text)
  local out = {}
  for part in string.gmatch(text or '', '[^\\n]+') do out[#out + 1] = part end
  return out
end
-- Drop one reference to entry `id`; an entry left with none is released (its link and
-- count go, its id is added to `out`) and so drops the reference it held on its parent.
local function release(links, refs, id, out)
  while id ~= '' and redis.call('HEXISTS', links, id) == 1 do
    if redis.call('HINCRBY', refs, id, -1) > 0 then return end
    local parent = redis.call('HGET', links, id)
    redis.call('HDEL', links, id)
    redis.call('HDEL', refs, id)
    out[#out + 1] = id
    id = parent
  end
end
"""

WRITE = (
    _HELPERS
    + """
local rec, updated, scoped, links, refs = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local bad = wrong_type({{rec, 'hash'}, {updated, 'zset'}, {scoped, 'zset'},
                        {links, 'hash'}, {refs, 'hash'}})
if bad then return bad end
local cid, head, n = ARGV[1], ARGV[8], tonumber(ARGV[10])
local new = {}
for i = 11, 10 + 2 * n, 2 do new[#new + 1] = ARGV[i] end
local function conflict()
  local out = {0}
  for _, id in ipairs(new) do
    if redis.call('HEXISTS', links, id) == 0 then out[#out + 1] = id end
  end
  return out
end
local current = redis.call('HGET', rec, 'revision')
if ARGV[2] == '0' then
  if current then return conflict() end
elseif current ~= ARGV[3] then
  return conflict()
end
if head ~= '' and redis.call('HEXISTS', links, head) == 0 then
  local known = false
  for _, id in ipairs(new) do if id == head then known = true end end
  if not known then return conflict() end
end
local old_index = redis.call('HGET', rec, 'scope_index')
if old_index then
  bad = wrong_type({{old_index, 'zset'}})
  if bad then return bad end
end
local linked = {}
for i = 11, 10 + 2 * n, 2 do
  local id, parent = ARGV[i], ARGV[i + 1]
  if redis.call('HEXISTS', links, id) == 0 then
    if parent ~= '' and redis.call('HEXISTS', links, parent) == 1 then
      redis.call('HINCRBY', refs, parent, 1)
    end
    redis.call('HSET', links, id, parent)
    linked[#linked + 1] = id
  end
end
local tips = {}
for _, tip in ipairs(lines(ARGV[9])) do
  if redis.call('HEXISTS', links, tip) == 1 then
    redis.call('HINCRBY', refs, tip, 1)
    tips[#tips + 1] = tip
  end
end
local out = {1}
for _, id in ipairs(linked) do
  if tonumber(redis.call('HGET', refs, id) or '0') == 0 then
    redis.call('HINCRBY', refs, id, 1)
    release(links, refs, id, out)
  end
end
for _, tip in ipairs(lines(redis.call('HGET', rec, 'tips'))) do
  release(links, refs, tip, out)
end
redis.call('HSET', rec, 'record', ARGV[5], 'revision', ARGV[4],
           'tips', table.concat(tips, '\\n'), 'updated', ARGV[6])
redis.call('ZADD', updated, ARGV[6], cid)
local index = nil
if ARGV[7] == '1' then index = scoped end
if old_index and old_index ~= index then redis.call('ZREM', old_index, cid) end
if index then
  redis.call('ZADD', index, ARGV[6], cid)
  redis.call('HSET', rec, 'scope_index', index)
else
  redis.call('HDEL', rec, 'scope_index')
end
return out
"""
)
"""KEYS = [record, updated, scope index (``updated`` again when unscoped), links, refs];
ARGV = [conversation id, expects a record (0/1), expected revision, new revision,
record JSON, updated_at us, scoped (0/1), head id ("": none), tips (newline-joined), n,
(entry id, parent id or "") * n]. Returns ``[1, released ids...]``, or ``[0, ids of the
new entries nothing links...]`` on a conflict (nothing written). New entries no tip
reaches are released at once."""

DELETE = (
    _HELPERS
    + """
local rec, updated, links, refs = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local bad = wrong_type({{rec, 'hash'}, {updated, 'zset'}, {links, 'hash'}, {refs, 'hash'}})
if bad then return bad end
local current = redis.call('HGET', rec, 'revision')
if not current or current ~= ARGV[2] then return {0} end
local index = redis.call('HGET', rec, 'scope_index')
if index then
  bad = wrong_type({{index, 'zset'}})
  if bad then return bad end
end
local tips = lines(redis.call('HGET', rec, 'tips'))
redis.call('DEL', rec)
redis.call('ZREM', updated, ARGV[1])
if index then redis.call('ZREM', index, ARGV[1]) end
local out = {1}
for _, tip in ipairs(tips) do release(links, refs, tip, out) end
return out
"""
)
"""KEYS = [record, updated, links, refs]; ARGV = [conversation id, expected revision].
Returns ``[1, released ids...]``, or ``[0]`` when no record with that revision exists."""

CHAIN = (
    _HELPERS
    + """
local bad = wrong_type({{KEYS[1], 'hash'}})
if bad then return bad end
local out, id, left = {1}, ARGV[1], tonumber(ARGV[2])
while id ~= '' and left ~= 0 do
  local parent = redis.call('HGET', KEYS[1], id)
  if not parent then return {0, id} end
  out[#out + 1] = id
  out[#out + 1] = parent
  id, left = parent, left - 1
end
return out
"""
)
"""KEYS = [links]; ARGV = [head id, how many entries (-1: all)]. Returns ``[1, (id,
parent id) * n]`` newest first, or ``[0, id]`` when the walk meets an unknown entry."""

RECORDS = (
    _HELPERS
    + """
local bad = wrong_type({{KEYS[1], 'zset'}})
if bad then return bad end
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[2]))) do
  local got = redis.pcall('HGET', ARGV[1] .. id, 'record')
  if type(got) == 'table' then got = '' end
  out[#out + 1] = id
  out[#out + 1] = got
end
return out
"""
)
"""KEYS = [index]; ARGV = [record key prefix, last rank (-1: all)]. Returns ``[(id,
record JSON) * n]`` newest first; a record that is gone is nil, one of another type
``""``. The record keys share the index's slot (one catalog)."""


# -- operations (generators, no I/O) --------------------------------------------------------


def _send(tier: TierCore, commands: Sequence[Command], counter: str | None) -> Operation[list[Any]]:
    counts = {counter: 1} if counter else None
    got = yield from batch_with_stats(tier.layout, tier.buffer, commands, counts)
    raise_first_error(got)
    return got


def _eval(script: str, keys: Sequence[str], args: Sequence[Arg]) -> Command:
    return Command(("EVAL", script, len(keys), *keys, *args), binary=True)


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
) -> Operation[tuple[list[ConversationRecord], int]]:
    """The records of ``scope`` (all when ``None``), newest first, and how many were
    unreadable (skipped)."""
    index = layout.updated if scope is None else layout.scope(scope)
    last = -1 if limit is None else limit - 1
    (raw,) = yield from _send(tier, [_eval(RECORDS, [index], [layout.record_prefix, last])], READS)
    flat = _array(raw, "the record listing")
    records: list[ConversationRecord] = []
    skipped = 0
    for member, value in zip(flat[::2], flat[1::2], strict=True):
        record = decode_record(value) if value else None
        if record is None or record.conversation_id != replies.lenient_text(member):
            skipped += 1
        elif scope is None or record.scope == scope:  # the index's digest is only a hint
            records.append(record)
    return records, skipped


def store_record(
    tier: TierCore,
    layout: Layout,
    record: ConversationRecord,
    encoded_record: bytes,
    entries: Sequence[tuple[ConversationEntry, bytes]],
    expected_revision: str | None,
) -> Operation[bool]:
    """Store new entries' messages, then compare-and-set the record (``False``: a
    conflict, nothing kept)."""
    if entries:
        yield from _send(tier, [_entry_command(layout, e, m) for e, m in entries], None)
    cid = record.conversation_id
    scoped = layout.scope(record.scope) if record.scope is not None else layout.updated
    keys = [layout.record(cid), layout.updated, scoped, layout.links, layout.refs]
    args: list[Arg] = [
        cid,
        "0" if expected_revision is None else "1",
        expected_revision or "",
        record.revision,
        encoded_record,
        _micros(record.updated_at),
        "0" if record.scope is None else "1",
        record.head_id or "",
        "\n".join(_tips(record)),
        len(entries),
    ]
    for entry, _ in entries:
        args += [entry.id, entry.parent_id or ""]
    (raw,) = yield from _send(tier, [_eval(WRITE, keys, args)], WRITES)
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
    keys = [layout.record(conversation_id), layout.updated, layout.links, layout.refs]
    (raw,) = yield from _send(
        tier, [_eval(DELETE, keys, [conversation_id, expected_revision])], WRITES
    )
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
    count = -1 if limit is None else limit
    (raw,) = yield from _send(tier, [_eval(CHAIN, [layout.links], [head_id, count])], READS)
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


def _entry_command(layout: Layout, entry: ConversationEntry, message: bytes) -> Command:
    fields: list[Arg] = ["message", message, "kind", entry.kind]
    if entry.parent_id is not None:
        fields += ["parent", entry.parent_id]
    return Command(("HSET", layout.entry(entry.id), *fields))


def _tips(record: ConversationRecord) -> list[str]:
    """The entries a record holds on to: its head and branches, once each."""
    tips = [record.head_id] if record.head_id is not None else []
    return list(dict.fromkeys([*tips, *record.branches]))


def _micros(moment: datetime) -> int:
    """``moment`` in whole microseconds since the epoch (a naive one taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // _MICROSECOND


# -- input checks ------------------------------------------------------------------------


def _entry_id(value: object, field: str) -> str:
    """An entry id: non-empty text without a newline (tips are stored newline-joined)."""
    checked = check_text(value, field=field)
    if "\n" in checked:
        raise InvalidInputError(f"{field} must not contain a newline", field=field)
    return checked


def _scope(value: object) -> str | None:
    return None if value is None else check_str(value, field="scope", max_chars=1024)


def _limit(value: object) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise InvalidInputError(
        f"limit must be a non-negative int or None, got {value!r}", field="limit"
    )


def _revision(value: object, field: str) -> str:
    return check_text(value, field=field)


def _checked_record(record: object) -> ConversationRecord:
    if not isinstance(record, ConversationRecord):
        raise InvalidInputError(
            f"record must be a ConversationRecord, got {type(record).__name__}", field="record"
        )
    check_text(record.conversation_id, field="record.conversation_id")
    if record.head_id is not None:
        _entry_id(record.head_id, "record.head_id")
    if not isinstance(record.branches, list):
        raise InvalidInputError("record.branches must be a list", field="record.branches")
    for tip in record.branches:
        _entry_id(tip, "record.branches")
    _revision(record.revision, "record.revision")
    _scope(record.scope)
    if not isinstance(record.updated_at, datetime):
        raise InvalidInputError("record.updated_at must be a datetime", field="record.updated_at")
    return record


def _encoded_entries(entries: object) -> list[tuple[ConversationEntry, bytes]]:
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise InvalidInputError("new_entries must be a sequence of ConversationEntry")
    for entry in entries:
        if not isinstance(entry, ConversationEntry) or entry.kind != "message":
            raise InvalidInputError(
                f"new_entries holds a {type(entry).__name__}, not a message ConversationEntry",
                field="new_entries",
            )
        _entry_id(entry.id, "new_entries.id")
        if entry.parent_id is not None:
            _entry_id(entry.parent_id, "new_entries.parent_id")
    checked: Sequence[ConversationEntry] = entries
    messages = encode_messages([entry.message for entry in checked])
    return list(zip(checked, messages, strict=True))


# -- the store -----------------------------------------------------------------------------


class _Core:
    __slots__ = ("tier",)

    def __init__(self, name: str) -> None:
        self.tier = TierCore(name)


class AgentMemoryConversationStore(ConversationStore):
    """pydantic-ai's ``ConversationStore`` on Valkey / Redis (see the module doc).

    Use it as any ``ConversationStore``: ``load``, ``save``, ``branch``, ``fork``,
    ``list_conversations`` and ``delete`` behave as ``InMemoryConversationStore``'s do,
    across processes and with optimistic concurrency on the server.

    Args:
        client: a ``valkey.asyncio`` / ``redis.asyncio`` client, or a blocking ``valkey``
            / ``redis`` one (then run in a worker thread); standalone or cluster. It is
            left open.
        name: the cache name (key prefix): the same conversation id under another name
            is another conversation.
        registry: a ``prometheus_client.CollectorRegistry`` for the store's metrics.

    Every method raises :class:`~agent_memory.errors.InvalidInputError` for a bad id,
    scope, limit or record (nothing is written), pydantic-ai's ``ConversationConflict``
    / ``UserError`` where ``InMemoryConversationStore`` does, a ``KeyError``
    (:class:`~agent_memory.errors.NotFoundError`) for a missing entry, and an
    :class:`~agent_memory.errors.AgentMemoryError` for a failure of the server
    (unavailable, timeout, :class:`~agent_memory.errors.WrongTypeError` for a key of
    another type, :class:`~agent_memory.errors.ReplyParseError` for an unreadable record).

    Raises:
        InvalidInputError: something that is not a client, or a bad name.
    """

    def __init__(
        self, *, client: Any, name: str, registry: CollectorRegistry | None = None
    ) -> None:
        self._name = check_name(name)
        if client is None or not hasattr(client, "execute_command"):
            raise InvalidInputError(
                "client must be a valkey / redis client (asyncio or blocking)", field="client"
            )
        asynchronous = is_async_client(client)
        self._runners = Runners(
            None if asynchronous else client,
            client if asynchronous else None,
            name=self._name,
            tier="session",
            core=_Core(self._name),
            owner=_OWNER,
            registry=registry,
        )
        self._layout = Layout(self._name)
        self._closed = False
        self._skipped = 0
        self._lock = threading.Lock()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        name: str,
        registry: CollectorRegistry | None = None,
        **client_options: Any,
    ) -> AgentMemoryConversationStore:
        """A store with its own asyncio client for ``url`` (no I/O yet), closed by
        :meth:`close`. To serve many stores, share one client instead.

        Raises:
            InvalidInputError: a bad URL, client option or name.
        """
        check_name(name)  # before a client exists
        client = client_from_url(url, asyncio=True, **client_options)
        store = cls(client=client, name=name, registry=registry)
        store._runners.owned = True
        return store

    @property
    def name(self) -> str:
        """The cache name (key prefix)."""
        return self._name

    @property
    def client(self) -> Any:
        """The client the store runs on."""
        return self._runners.async_client or self._runners.client

    @property
    def layout(self) -> Layout:
        """The store's keys."""
        return self._layout

    @property
    def skipped(self) -> int:
        """How many corrupt entries and records this store's reads have skipped so far."""
        return self._skipped

    async def _run(self, make: Callable[[], Operation[T]]) -> T:
        if self._closed:
            raise StoreClosedError("this AgentMemoryConversationStore was closed")
        return await self._runners.arun(make)

    def _note_skipped(self, skipped: int, what: str) -> None:
        if skipped:
            with self._lock:
                self._skipped += skipped
            logger.warning(
                "skipped %d corrupt %s of conversation store %s", skipped, what, self._name
            )

    # -- the storage primitives -------------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The record of a conversation, or ``None`` if the store doesn't have it.

        Raises:
            InvalidInputError: not a non-empty conversation id.
            ReplyParseError: the stored record cannot be read.
            AgentMemoryError: a failure of the server.
        """
        cid = check_text(conversation_id, field="conversation_id")
        tier, layout = self._runners.tier, self._layout
        return await self._run(lambda: load_record(tier, layout, cid))

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        """The records of ``scope`` (all when ``None``), newest ``updated_at`` first, at
        most ``limit``; unreadable ones are skipped, logged and counted.

        Raises:
            InvalidInputError: a scope that is not text, a limit that is not a
                non-negative int.
            AgentMemoryError: a failure of the server.
        """
        wanted, most = _scope(scope), _limit(limit)
        if most == 0:
            return []
        tier, layout = self._runners.tier, self._layout
        records, skipped = await self._run(lambda: list_records(tier, layout, wanted, most))
        self._note_skipped(skipped, "record(s)")
        return records

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Store ``record`` and the entries its history adds, if the stored record's
        revision is ``expected_revision`` (``None``: no record stored).

        Raises:
            ConversationConflict: another revision is stored, a record exists when
                ``expected_revision`` is ``None``, or ``record.head_id`` names an entry
                neither the store nor ``new_entries`` has; nothing is kept.
            InvalidInputError: a bad record, entry or revision; nothing is written.
            AgentMemoryError: a failure of the server.
        """
        checked = _checked_record(record)
        expected = (
            None if expected_revision is None else _revision(expected_revision, "expected_revision")
        )
        entries = _encoded_entries(new_entries)
        encoded = encode_record(checked)
        tier, layout = self._runners.tier, self._layout
        stored = await self._run(
            lambda: store_record(tier, layout, checked, encoded, entries, expected)
        )
        if not stored:
            raise ConversationConflict(checked.conversation_id)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete a conversation's record, and the entries no remaining record reaches.

        Raises:
            ConversationConflict: no record with ``expected_revision`` is stored.
            InvalidInputError: a bad conversation id or revision.
            AgentMemoryError: a failure of the server.
        """
        cid = check_text(conversation_id, field="conversation_id")
        expected = _revision(expected_revision, "expected_revision")
        tier, layout = self._runners.tier, self._layout
        deleted = await self._run(lambda: drop_record(tier, layout, cid, expected))
        if not deleted:
            raise ConversationConflict(cid)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """The entry with this id.

        Raises:
            NotFoundError: (a ``KeyError``) not stored.
            ReplyParseError: stored, but its message cannot be read.
            InvalidInputError: not an entry id.
            AgentMemoryError: a failure of the server.
        """
        checked = _entry_id(entry_id, "entry_id")
        tier, layout = self._runners.tier, self._layout
        return await self._run(lambda: load_entry(tier, layout, checked))

    async def read_history(
        self, head_id: str | None, *, limit: int | None = None
    ) -> list[ConversationEntry]:
        """The entries from the first one up to ``head_id``, in order, or the last
        ``limit`` of them, in two round trips; corrupt ones are skipped, logged and
        counted.

        Raises:
            NotFoundError: (a ``KeyError``) an entry of the history is not stored.
            InvalidInputError: a bad entry id or limit.
            AgentMemoryError: a failure of the server.
        """
        most = _limit(limit)
        if head_id is None or most == 0:
            return []
        head = _entry_id(head_id, "head_id")
        tier, layout = self._runners.tier, self._layout
        entries, skipped = await self._run(lambda: load_history(tier, layout, head, most))
        self._note_skipped(skipped, "entr(y/ies)")
        return entries

    # -- lifecycle ----------------------------------------------------------------------

    async def close(self) -> None:
        """Close the client if :meth:`from_url` created it (idempotent); the store is
        unusable afterwards. An injected client is left open, and the store usable."""
        if self._runners.owned and not self._closed:
            self._closed = True
            await self._runners.aclose()

    async def __aenter__(self) -> AgentMemoryConversationStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AgentMemoryConversationStore(name={self._name!r})"


__all__ = ["SEGMENT", "AgentMemoryConversationStore", "Layout"]
