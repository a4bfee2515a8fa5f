"""The server-side scripts of a conversation store and the calls that run them (pure).

Each script's KEYS are all in the catalog's slot (:mod:`.layout`), so a script runs on
one node and changes the catalog atomically. Each has a Python twin (:mod:`.twins`),
registered here, which the in-process client runs instead. The builders below turn a store's values
into a script's KEYS and ARGV (one ``EVAL`` :class:`~agent_memory.core.effects.Command`
each); :mod:`.ops` sends them and parses the replies.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord

from agent_memory.backends.inprocess import register_script_twin
from agent_memory.core.effects import Arg, Command
from agent_memory.integrations._list_log import WHOLE_LIST
from agent_memory.integrations.pydantic_ai.conversation_store import twins
from agent_memory.integrations.pydantic_ai.conversation_store.layout import Layout

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


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
-- A parent must be linked already or an earlier new entry: one that is neither would
-- leave a history no walk can finish (its first entry missing), or one that loops.
local earlier = {}
for i = 11, 10 + 2 * n, 2 do
  local id, parent = ARGV[i], ARGV[i + 1]
  if parent ~= '' and not earlier[parent] and redis.call('HEXISTS', links, parent) == 0 then
    local out = conflict()
    out[1] = 2
    table.insert(out, 2, parent)
    table.insert(out, 2, id)
    return out
  end
  earlier[id] = true
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
(entry id, parent id or "") * n]. Returns ``[1, released ids...]``, ``[0, ids of the
new entries nothing links...]`` on a conflict, or ``[2, entry id, its parent id, ids of
the new entries nothing links...]`` when a new entry's parent is neither linked nor an
earlier new entry (nothing written either way). New entries no tip reaches are released
at once."""

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
-- A chain without a loop visits each link once: one step more than there are links
-- means the links loop (written by hand or by a foreign writer), and the walk stops
-- rather than keep the server busy for every client.
local steps = redis.call('HLEN', KEYS[1])
while id ~= '' and left ~= 0 do
  local parent = redis.call('HGET', KEYS[1], id)
  if not parent then return {0, id} end
  if steps == 0 then return {2, ARGV[1]} end
  steps = steps - 1
  out[#out + 1] = id
  out[#out + 1] = parent
  id, left = parent, left - 1
end
return out
"""
)
"""KEYS = [links]; ARGV = [head id, how many entries (-1: all)]. Returns ``[1, (id,
parent id) * n]`` newest first, ``[0, id]`` when the walk meets an unknown entry, or
``[2, head id]`` when the links from the head loop."""

ENTRY = """
local cur = redis.call('HMGET', KEYS[1], 'message', 'kind', 'parent')
if cur[1] or cur[2] then
  if cur[1] == ARGV[1] and cur[2] == ARGV[2] and (cur[3] or '') == ARGV[3] then
    return 2
  end
  return 0
end
redis.call('HSET', KEYS[1], 'message', ARGV[1], 'kind', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'parent', ARGV[3]) end
return 1
"""
"""KEYS = [entry]; ARGV = [message JSON, kind, parent id ("": none)]. Stores an entry's
message unless its key holds another one: an entry's message is shared by every history
reaching it, so a reused id must never replace it. Returns 1 (stored), 2 (the same entry
was stored already: a retried write) or 0 (another message is stored: nothing written).
One key, so it runs in the entry's own slot."""

RECORDS = (
    _HELPERS
    + """
local bad = wrong_type({{KEYS[1], 'zset'}})
if bad then return bad end
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[2]))) do
  local key = ARGV[1] .. id
  local got = redis.pcall('HGET', key, 'record')
  if type(got) == 'table' then
    got = ''
  elseif not got and redis.call('EXISTS', key) == 1 then
    got = ''
  elseif not got then
    redis.call('ZREM', KEYS[1], id)
  end
  out[#out + 1] = id
  out[#out + 1] = got
end
return out
"""
)
"""KEYS = [index]; ARGV = [record key prefix, last rank (-1: all)]. Returns ``[(id,
record JSON) * n]`` newest first. A record that is gone (deleted or evicted behind the
store's back: the scripts change a record and its indexes together) is nil, and its id
leaves the index; one that cannot be read (another type, no ``record`` field) is ``""``
and stays listed. The record keys share the index's slot (one catalog)."""

# The in-process client runs each script as its Python twin (:mod:`.twins`).
for _script, _twin in ((WRITE, twins.write), (DELETE, twins.delete), (CHAIN, twins.chain),
                       (ENTRY, twins.entry), (RECORDS, twins.records)):  # fmt: skip
    register_script_twin(_script, _twin)

# -- calls (pure) --------------------------------------------------------------------------


def _eval(script: str, keys: Sequence[str], args: Sequence[Arg]) -> Command:
    return Command(("EVAL", script, len(keys), *keys, *args), binary=True)


def write_call(
    layout: Layout,
    record: ConversationRecord,
    encoded_record: bytes,
    entries: Sequence[tuple[ConversationEntry, bytes]],
    expected_revision: str | None,
) -> Command:
    """The :data:`WRITE` of ``record`` and its new ``entries`` (compare-and-set on
    ``expected_revision``; ``None``: no record stored)."""
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
    return _eval(WRITE, keys, args)


def entry_call(layout: Layout, entry: ConversationEntry, message: bytes) -> Command:
    """The :data:`ENTRY` write of one new entry's message."""
    return _eval(ENTRY, [layout.entry(entry.id)], [message, entry.kind, entry.parent_id or ""])


def delete_call(layout: Layout, conversation_id: str, expected_revision: str) -> Command:
    """The :data:`DELETE` of a record if its revision is ``expected_revision``."""
    keys = [layout.record(conversation_id), layout.updated, layout.links, layout.refs]
    return _eval(DELETE, keys, [conversation_id, expected_revision])


def chain_call(layout: Layout, head_id: str, limit: int | None) -> Command:
    """The :data:`CHAIN` walk from ``head_id``, the last ``limit`` entries (all when
    ``None``)."""
    count = -1 if limit is None else limit
    return _eval(CHAIN, [layout.links], [head_id, count])


def records_call(layout: Layout, scope: str | None, limit: int | None) -> Command:
    """The :data:`RECORDS` listing of ``scope`` (all when ``None``), newest first, at
    most ``limit`` (all when ``None``)."""
    index = layout.updated if scope is None else layout.scope(scope)
    # a limit no sorted set can reach means all: ZREVRANGE refuses a rank Lua turned
    # into a double past 2**53 (sys.maxsize, say)
    last = -1 if limit is None or limit >= WHOLE_LIST else limit - 1
    return _eval(RECORDS, [index], [layout.record_prefix, last])


def _tips(record: ConversationRecord) -> list[str]:
    """The entries a record holds on to: its head and branches, once each."""
    tips = [record.head_id] if record.head_id is not None else []
    return list(dict.fromkeys([*tips, *record.branches]))


def _micros(moment: datetime) -> int:
    """``moment`` in whole microseconds since the epoch (a naive one taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // _MICROSECOND


__all__ = [
    "CHAIN",
    "DELETE",
    "ENTRY",
    "RECORDS",
    "WRITE",
    "chain_call",
    "delete_call",
    "entry_call",
    "records_call",
    "write_call",
]
