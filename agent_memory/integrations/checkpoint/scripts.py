"""Server-side scripts of the checkpointer: one lane (see :mod:`.layout`) per call.

Every script takes ``KEYS = [ids, records, values, namespaces]`` of one lane: four
keys of one thread, so one hash slot. Values go through as binary strings; nothing is
decoded server-side.
"""

from __future__ import annotations

_HELPERS = """
local function split(s)
  local out = {}
  if not s or s == '' then return out end
  for part in string.gmatch(s, '[^\\n]+') do out[#out + 1] = part end
  return out
end
local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, 500 do
    local chunk = {}
    for j = i, math.min(i + 499, #fields) do chunk[#chunk + 1] = fields[j] end
    local got = redis.call('HMGET', key, unpack(chunk))
    for j = 1, #got do out[#out + 1] = got[j] end
  end
  return out
end
local function refresh(ttl)
  if ttl > 0 then
    for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end
"""

_RECORD = """
local function record(cid)
  local rec = redis.call('HMGET', KEYS[2], 'c:' .. cid, 'm:' .. cid, 'p:' .. cid,
                         'b:' .. cid, 'w:' .. cid)
  if not rec[1] then return nil end
  local blobs, writes = {}, {}
  local fields = split(rec[4])
  local got = hmget(KEYS[3], fields)
  for i = 1, #fields do
    if got[i] then blobs[#blobs + 1] = fields[i]; blobs[#blobs + 1] = got[i] end
  end
  fields = split(rec[5])
  got = hmget(KEYS[3], fields)
  for i = 1, #fields do
    if got[i] then writes[#writes + 1] = got[i] end
  end
  return {cid, rec[1], rec[2] or '', rec[3] or '', blobs, writes}
end
"""

LOAD = (
    _HELPERS
    + _RECORD
    + """
local ttl, mode = tonumber(ARGV[1]), ARGV[2]
local out, found = {}, false
if mode == 'pick' then
  for i = 3, #ARGV do
    local rec = record(ARGV[i])
    if rec then out[#out + 1] = rec; found = true end
  end
else
  local ids = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[3], '-', 'LIMIT', 0, tonumber(ARGV[4]))
  if mode == 'meta' then
    local fields = {}
    for i = 1, #ids do fields[i] = 'm:' .. ids[i] end
    local metas = hmget(KEYS[2], fields)
    for i = 1, #ids do
      local meta = metas[i]
      if not meta and redis.call('HEXISTS', KEYS[2], 'c:' .. ids[i]) == 1 then meta = '' end
      out[#out + 1] = ids[i]; out[#out + 1] = meta or false
      if meta then found = true else redis.call('ZREM', KEYS[1], ids[i]) end
    end
  else
    for i = 1, #ids do
      local rec = record(ids[i])
      if rec then
        out[#out + 1] = rec; found = true
      else
        out[#out + 1] = {ids[i]}; redis.call('ZREM', KEYS[1], ids[i])
      end
    end
  end
end
if found then refresh(ttl) end
return out
"""
)
"""ARGV = [ttl_ms (0: no refresh), mode, ...]. ``range``: ``max`` (``+`` or ``(id``)
and ``count`` (-1: all), newest first -> full records; ``meta``: the same range ->
flat ``[id, metadata, ...]``; ``pick``: checkpoint ids -> full records of those that
exist. A full record is ``[id, checkpoint, metadata, parent, [field, value, ...],
[write, ...]]`` (a record is its ``c:`` field: missing metadata reads as ``''``). An id
of the range naming no record (another client's, or a record evicted) is ``[id]``, or
``id, nil`` in ``meta``, so the caller pages past it, and is removed from the ids: this
library's scripts add an id and its record together, so none is a write in flight. A
read that finds a checkpoint restarts the lane's TTL."""

PUT = (
    _HELPERS
    + """
local ttl, cid = tonumber(ARGV[1]), ARGV[2]
redis.call('ZADD', KEYS[1], 0, cid)
redis.call('HSET', KEYS[2], 'c:' .. cid, ARGV[3], 'm:' .. cid, ARGV[4], 'p:' .. cid, ARGV[5],
           'r:' .. cid, ARGV[6], 'b:' .. cid, ARGV[7])
redis.call('HSET', KEYS[4], ARGV[8], ARGV[9])
for i = 11, 10 + 2 * tonumber(ARGV[10]), 2 do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
end
refresh(ttl)
return 1
"""
)
"""ARGV = [ttl_ms, id, checkpoint, metadata, parent id, run id, blob fields, namespace,
thread id, n, (field, value) * n]: store one checkpoint and its new channel values."""

PUT_WRITES = (
    _HELPERS
    + """
local ttl, cid = tonumber(ARGV[1]), ARGV[2]
local listed = split(redis.call('HGET', KEYS[2], 'w:' .. cid))
local seen = {}
for i = 1, #listed do seen[listed[i]] = true end
for i = 6, 5 + 3 * tonumber(ARGV[5]), 3 do
  local field = ARGV[i]
  if ARGV[i + 2] == '1' then
    redis.call('HSET', KEYS[3], field, ARGV[i + 1])
  else
    redis.call('HSETNX', KEYS[3], field, ARGV[i + 1])
  end
  if not seen[field] then seen[field] = true; listed[#listed + 1] = field end
end
redis.call('HSET', KEYS[2], 'w:' .. cid, table.concat(listed, '\\n'))
redis.call('HSET', KEYS[4], ARGV[3], ARGV[4])
refresh(ttl)
return #listed
"""
)
"""ARGV = [ttl_ms, id, namespace, thread id, n, (field, record, overwrite) * n]: store
pending writes of one checkpoint; a write whose ``overwrite`` is not ``1`` keeps an
earlier one of the same field (a retried task), a special channel's replaces it."""

DROP = (
    _HELPERS
    + """
local mode, ns = ARGV[1], ARGV[2]
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
local drop = {}
if mode == 'all' then
  drop = ids
elseif mode == 'keep_latest' then
  for i = 1, #ids - 1 do drop[i] = ids[i] end
else
  for i = 3, #ARGV do drop[#drop + 1] = ARGV[i] end
end
local out = {}
if mode == 'all' then
  local runs = {}
  for i = 1, #ids do runs[i] = 'r:' .. ids[i] end
  runs = hmget(KEYS[2], runs)
  for i = 1, #ids do out[#out + 1] = runs[i] or ''; out[#out + 1] = ids[i] end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  redis.call('HDEL', KEYS[4], ns)
  return out
end
for i = 1, #drop do
  local cid = drop[i]
  if redis.call('ZREM', KEYS[1], cid) == 1 then
    local rec = redis.call('HMGET', KEYS[2], 'r:' .. cid, 'w:' .. cid)
    out[#out + 1] = rec[1] or ''; out[#out + 1] = cid
    local writes = split(rec[2])
    for j = 1, #writes do redis.call('HDEL', KEYS[3], writes[j]) end
    redis.call('HDEL', KEYS[2], 'c:' .. cid, 'm:' .. cid, 'p:' .. cid, 'r:' .. cid,
               'b:' .. cid, 'w:' .. cid)
  end
end
if #out == 0 then return out end
if redis.call('ZCARD', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  redis.call('HDEL', KEYS[4], ns)
  return out
end
local kept = redis.call('ZRANGE', KEYS[1], 0, -1)
local lists = {}
for i = 1, #kept do lists[i] = 'b:' .. kept[i] end
lists = hmget(KEYS[2], lists)
local used = {}
for i = 1, #lists do
  local fields = split(lists[i])
  for j = 1, #fields do used[fields[j]] = true end
end
local fields = redis.call('HKEYS', KEYS[3])
for i = 1, #fields do
  local f = fields[i]
  if string.sub(f, 1, 2) == 'b:' and not used[f] then redis.call('HDEL', KEYS[3], f) end
end
return out
"""
)
"""ARGV = [mode, namespace, ...]. ``all``: delete the lane; ``keep_latest``: every
checkpoint but the newest; ``ids``: the checkpoint ids that follow. Their pending
writes go too, and channel values no remaining checkpoint refers to. Returns flat
``[run id, checkpoint id, ...]`` of what was deleted (for the run index)."""

IMPORT = (
    _HELPERS
    + """
local ttl, nids, nrec = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5])
local at = 6
for i = at, at + nids - 1 do redis.call('ZADD', KEYS[1], 0, ARGV[i]) end
at = at + nids
for i = at, at + 2 * nrec - 1, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
at = at + 2 * nrec
for i = at, #ARGV - 1, 2 do redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]) end
if nids > 0 then redis.call('HSET', KEYS[4], ARGV[2], ARGV[3]) end
refresh(ttl)
return nids
"""
)
"""ARGV = [ttl_ms, namespace, thread id, n ids, n records, ids..., (field, value) of
records..., (field, value) of values...]: merge an exported lane into this one."""
