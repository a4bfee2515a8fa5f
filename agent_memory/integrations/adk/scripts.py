"""The Lua scripts of the ADK session service (each touches one user's hash slot).

Common conventions: ``ttl`` (milliseconds, ``0``: none) is applied to every key the
script writes or reads (a sliding lifetime); a state delta is sent as a count of
session pairs followed by the session pairs and then the ``user:`` pairs (keys without
prefix, values as JSON text).
"""

from __future__ import annotations

_PAIRS = """
local function hset_pairs(key, first, last)
  for j = first, last, 2 do redis.call('HSET', key, ARGV[j], ARGV[j + 1]) end
end
local function touch(ttl, keys)
  if ttl > 0 then
    for _, key in ipairs(keys) do redis.call('PEXPIRE', key, ttl) end
  end
end
"""

# KEYS = [meta, state, events, timestamps, digests, sessions, user state]
# ARGV = [session id, now, ttl, n session pairs, session pairs..., user pairs...]
# -> {0} when the session exists (nothing written), else {1, user state pairs}.
CREATE = (
    _PAIRS
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return {0} end
redis.call('HSET', KEYS[1], 't', ARGV[2], 'c', ARGV[2], 'last', '')
local n = tonumber(ARGV[4])
hset_pairs(KEYS[2], 5, 4 + 2 * n)
hset_pairs(KEYS[7], 5 + 2 * n, #ARGV)
redis.call('ZADD', KEYS[6], ARGV[2], ARGV[1])
touch(tonumber(ARGV[3]), KEYS)
return {1, redis.call('HGETALL', KEYS[7])}
"""
)

# KEYS = [meta, state, events, timestamps, digests, sessions, user state]
# ARGV = [num_recent_events or '', after_timestamp or '', ttl]
# -> {0} when there is no session, else {1, last update time, session state pairs,
#    user state pairs, events (JSON, oldest first)}. The filters are InMemorySessionService's:
#    the last num_recent_events events, then the trailing ones at or after after_timestamp.
GET = (
    _PAIRS
    + """
local t = redis.call('HGET', KEYS[1], 't')
if not t then return {0} end
local n = redis.call('LLEN', KEYS[3])
local start = 0
if ARGV[1] ~= '' then
  start = n - tonumber(ARGV[1])
  if start < 0 then start = 0 end
end
if ARGV[2] ~= '' and start < n then
  local after = tonumber(ARGV[2])
  local stamps = redis.call('LRANGE', KEYS[4], start, -1)
  local i = #stamps
  while i >= 1 do
    if tonumber(stamps[i]) < after then break end
    i = i - 1
  end
  start = start + i
end
local events = {}
if start < n then events = redis.call('LRANGE', KEYS[3], start, -1) end
touch(tonumber(ARGV[3]), KEYS)
return {1, t, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[7]), events}
"""
)

# KEYS = [meta, state, events, timestamps, digests, sessions, user state]
# ARGV = [session id, event id, event JSON, event timestamp, caller's last update time,
#         caller's last event id, ttl, n session pairs, session pairs..., user pairs...]
# -> {0}: no session; {2}: this very event was already appended (nothing written);
#    {3, stored time}: the caller's session is stale (nothing written); {1}: appended.
APPEND = (
    _PAIRS
    + """
local meta = redis.call('HMGET', KEYS[1], 't', 'last')
if not meta[1] then return {0} end
local digest = redis.sha1hex(ARGV[3])
if redis.call('HGET', KEYS[5], ARGV[2]) == digest then return {2} end
if tonumber(meta[1]) > tonumber(ARGV[5]) and meta[2] ~= ARGV[6] then
  return {3, meta[1]}
end
local n = tonumber(ARGV[8])
hset_pairs(KEYS[2], 9, 8 + 2 * n)
hset_pairs(KEYS[7], 9 + 2 * n, #ARGV)
redis.call('RPUSH', KEYS[3], ARGV[3])
redis.call('RPUSH', KEYS[4], ARGV[4])
redis.call('HSET', KEYS[5], ARGV[2], digest)
redis.call('HSET', KEYS[1], 't', ARGV[4], 'last', ARGV[2])
redis.call('ZADD', KEYS[6], ARGV[4], ARGV[1])
touch(tonumber(ARGV[7]), KEYS)
return {1}
"""
)

# KEYS = [meta, state, events, timestamps, digests, sessions]
# ARGV = [session id]
# A script rather than MULTI/EXEC: valkey-py's cluster client has no transactions.
DELETE = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call('ZREM', KEYS[6], ARGV[1])
return 1
"""

__all__ = ["APPEND", "CREATE", "DELETE", "GET"]
