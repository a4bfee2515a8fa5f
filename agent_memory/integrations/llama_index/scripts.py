"""The Lua scripts of the chat store: each rewrites one list (one key, one hash slot).

Every script takes ``KEYS[1]`` = the list; arguments are listed above each script.
``RPUSH`` / ``LPUSH`` are sent in slices of at most 1,000 elements (Lua's ``unpack``
has a stack limit).
"""

from __future__ import annotations

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

# ARGV = [encoded messages...] -> the new length. Replaces the whole list.
SET = (
    _PUSH
    + """
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

__all__ = ["INSERT", "SET", "TAKE_ALL", "TAKE_AT"]
