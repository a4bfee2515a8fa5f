"""The Lua scripts of the chat stores: each changes one key (one hash slot).

The chat store's scripts take ``KEYS[1]`` = the list, the DB chat store's ``KEYS[1]`` =
the sorted set; arguments are listed above each script. ``RPUSH`` / ``LPUSH`` / ``ZADD``
/ ``ZREM`` are sent in slices of at most 1,000 arguments (Lua's ``unpack`` has a stack
limit). A key of another type (another client's) fails every script before it changes
anything: the scripts that would first delete the key check its type. With a TTL a
script runs as :func:`with_lifetime` wraps it, so the lifetime restarts only after the
script succeeded.
"""

from __future__ import annotations

import functools

# A key of another type than ``kind`` (absent is fine) is refused as a command on it is.
_REFUSE_OTHER_TYPE = """
local function refuse_other_type(key, kind)
  local held = redis.call('TYPE', key)['ok']
  if held ~= 'none' and held ~= kind then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
  end
end
"""

_LIFETIME_HEAD = """
local args = {}
for i = 2, #ARGV do args[i - 1] = ARGV[i] end
local reply = (function(ARGV)
"""

_LIFETIME_TAIL = """
end)(args)
if type(reply) == 'table' and reply.err then return reply end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return reply
"""


@functools.cache
def with_lifetime(source: str) -> str:
    """``source`` (a script of this module) taking one more first argument, a TTL in
    milliseconds, that restarts ``KEYS[1]``'s lifetime once the script succeeded (pure).

    The script runs as a function of the remaining arguments; a key of another type
    fails it (or it returns an error), so the ``PEXPIRE`` never gives another client's
    key a lifetime, which a ``PEXPIRE`` pipelined beside the script did.
    """
    return _LIFETIME_HEAD + source + _LIFETIME_TAIL


_PUSH = """
local function push(cmd, key, items, first, last)
  local i = first
  while i <= last do
    local j = math.min(i + 999, last)
    redis.call(cmd, key, unpack(items, i, j))
    i = j + 1
  end
end
"""

# ARGV = [encoded messages...] -> the new length. Replaces the whole list (a key of
# another type is refused, never deleted).
SET = (
    _PUSH
    + _REFUSE_OTHER_TYPE
    + """
local refused = refuse_other_type(KEYS[1], 'list')
if refused then return refused end
redis.call('DEL', KEYS[1])
push('RPUSH', KEYS[1], ARGV, 1, #ARGV)
return #ARGV
"""
)

# ARGV = [index, encoded message] -> the new length. Python's ``list.insert``: a negative
# index counts from the end, indexes past either end clamp to it.
INSERT = (
    _PUSH
    + """
local n = redis.call('LLEN', KEYS[1])
local i = tonumber(ARGV[1])
if i < 0 then i = math.max(i + n, 0) end
if i >= n then return redis.call('RPUSH', KEYS[1], ARGV[2]) end
if i == 0 then return redis.call('LPUSH', KEYS[1], ARGV[2]) end
local tail = redis.call('LRANGE', KEYS[1], i, -1)
redis.call('LTRIM', KEYS[1], 0, i - 1)
redis.call('RPUSH', KEYS[1], ARGV[2])
push('RPUSH', KEYS[1], tail, 1, #tail)
return n + 1
"""
)

# ARGV = [] -> every element (oldest first), or nil when there was no list; deletes it.
TAKE_ALL = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
if #items == 0 then return false end
redis.call('DEL', KEYS[1])
return items
"""

# ARGV = [index, tombstone] -> the removed element, or nil when the index is out of range
# (a negative index counts from the end). The element is overwritten with the caller's
# unique tombstone, which is then removed.
TAKE_AT = """
local n = redis.call('LLEN', KEYS[1])
local i = tonumber(ARGV[1])
if i < 0 then i = i + n end
if i < 0 or i >= n then return false end
local item = redis.call('LINDEX', KEYS[1], i)
redis.call('LSET', KEYS[1], i, ARGV[2])
redis.call('LREM', KEYS[1], 1, ARGV[2])
return item
"""

# -- the DB chat store's scripts (:mod:`.db_chat_store`) ------------------------------------
#
# KEYS[1] = the chat's sorted set: member ``<id>:<message JSON>``, score ``+id`` while the
# message is ACTIVE and ``-id`` once ARCHIVED. Ids are whole numbers below 2^53, written
# with ``%d`` so a score and the id in its member read the same.

_SLICED = """
local function sliced(cmd, key, items)
  local i = 1
  while i <= #items do
    local j = math.min(i + 999, #items)
    redis.call(cmd, key, unpack(items, i, j))
    i = j + 1
  end
end
"""

_APPEND = (
    _SLICED
    + """
local function last_id(key)
  local last = 0
  local top = redis.call('ZRANGE', key, '+inf', '(0', 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if #top > 0 then last = tonumber(top[2]) end
  local bottom = redis.call('ZRANGE', key, '-inf', '(0', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
  if #bottom > 0 then last = math.max(last, -tonumber(bottom[2])) end
  return math.floor(last)
end

local function append(key, sign, after, items, first)
  local args = {}
  for i = first, #items do
    local id = after + i - first + 1
    args[#args + 1] = string.format('%d', sign * id)
    args[#args + 1] = string.format('%d', id) .. ':' .. items[i]
  end
  sliced('ZADD', key, args)
end
"""
)

# ARGV = [sign (1: ACTIVE, -1: ARCHIVED), encoded messages...] -> how many were added.
# Each message takes the next id: one more than the largest id the chat holds (SQLite's
# rowid rule), so ids follow the order of addition.
DB_ADD = (
    _APPEND
    + """
local after = last_id(KEYS[1])
if after ~= after or after + #ARGV >= 9007199254740992 then
  return redis.error_reply('ERR chat ' .. KEYS[1] .. ' holds an id out of range')
end
append(KEYS[1], tonumber(ARGV[1]), after, ARGV, 2)
return #ARGV - 1
"""
)

# ARGV = [sign, encoded messages...] -> how many were written. Replaces every message of
# the chat, whatever its status (no message: the chat is deleted); ids restart at 1. A
# key of another type is refused, never deleted.
DB_SET = (
    _APPEND
    + _REFUSE_OTHER_TYPE
    + """
local refused = refuse_other_type(KEYS[1], 'zset')
if refused then return refused end
redis.call('DEL', KEYS[1])
append(KEYS[1], tonumber(ARGV[1]), 0, ARGV, 2)
return #ARGV - 1
"""
)

# ARGV = [offset, count (-1: all)] -> members of every status, oldest (smallest id) first,
# from the offset-th on. The two statuses are merged by id: the first offset + count of
# each suffice.
DB_GET_ALL = """
local offset, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local want = -1
if count >= 0 then want = offset + count end
local active = redis.call('ZRANGE', KEYS[1], '(0', '+inf', 'BYSCORE', 'LIMIT', 0, want, 'WITHSCORES')
local archived = redis.call('ZRANGE', KEYS[1], '(0', '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, want,
  'WITHSCORES')
local out, seen, i, j = {}, 0, 1, 1
while (i <= #active or j <= #archived) and (count < 0 or #out < count) do
  local member
  if j > #archived or (i <= #active and tonumber(active[i + 1]) < -tonumber(archived[j + 1])) then
    member, i = active[i], i + 2
  else
    member, j = archived[j], j + 2
  end
  seen = seen + 1
  if seen > offset then out[#out + 1] = member end
end
return out
"""

# ARGV = [n, archive (1: archive, 0: delete)] -> the n oldest ACTIVE members, oldest
# first, now archived (score negated, member unchanged) or deleted.
DB_TAKE_OLDEST = (
    _SLICED
    + """
local got = redis.call('ZRANGE', KEYS[1], '(0', '+inf', 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[1]),
  'WITHSCORES')
local members, archived = {}, {}
for i = 1, #got, 2 do
  members[#members + 1] = got[i]
  archived[#archived + 1] = '-' .. got[i + 1]
  archived[#archived + 1] = got[i]
end
if ARGV[2] == '1' then sliced('ZADD', KEYS[1], archived) else sliced('ZREM', KEYS[1], members) end
return members
"""
)

# ARGV = [id] -> the member of message ``id`` (either status), now deleted; nil when the
# chat has no such message.
DB_TAKE_ID = """
for _, score in ipairs({ARGV[1], '-' .. ARGV[1]}) do
  local got = redis.call('ZRANGE', KEYS[1], score, score, 'BYSCORE', 'LIMIT', 0, 1)
  if #got > 0 then
    redis.call('ZREM', KEYS[1], got[1])
    return got[1]
  end
end
return false
"""

__all__ = [
    "DB_ADD",
    "DB_GET_ALL",
    "DB_SET",
    "DB_TAKE_ID",
    "DB_TAKE_OLDEST",
    "INSERT",
    "SET",
    "TAKE_ALL",
    "TAKE_AT",
    "with_lifetime",
]
