"""Server-side scripts for single-key atomic steps (single key: cluster-safe).

Each script touches only ``KEYS[1]``, so it stays inside one hash slot. The in-process
backend runs the Python twin registered in :data:`PYTHON_TWINS` under the same source.
"""

from __future__ import annotations

from agent_memory.schema.lexical import ADD_STAT_LUA

WRITE_WITH_TTL = """
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""
"""ARGV = [ttl_ms, field, value, ...]: the hash never exists without its TTL."""

RECALL_EFFECTS = """
local function counted(field)
  local n = redis.pcall('HINCRBY', KEYS[2], field, 1)
  if type(n) == 'table' then return -3 end
  return math.max(n - 1, 0)
end
redis.call('HINCRBY', KEYS[1], 'recalls', 1)
redis.call('HINCRBY', KEYS[1], ARGV[4], 1)
local n = #KEYS - 4
local now = tonumber(ARGV[1])
local nf = tonumber(ARGV[8])
local fields = {}
for j = 1, nf do fields[j] = ARGV[8 + j] end
local out = {}
for i = 1, n do
  local key, id = KEYS[4 + i], ARGV[8 + nf + i]
  local x, a, values = -1, -1, {}
  if redis.call('TYPE', key).ok ~= 'hash' then
    if redis.call('EXISTS', key) == 1 then x, a = -2, -2 end
  else
    values = redis.call('HMGET', key, unpack(fields))
    x = counted('x:' .. id)
    if ARGV[2] == '1' then
      a = counted('a:' .. id)
      local t = tonumber(redis.call('HGET', key, 'last_accessed_at')) or 0
      if t <= now - tonumber(ARGV[3]) then redis.call('HSET', key, 'last_accessed_at', ARGV[1]) end
    else
      local held = redis.pcall('HGET', KEYS[2], 'a:' .. id)
      if type(held) == 'table' then a = -3 else a = math.max(tonumber(held) or 0, 0) end
    end
  end
  out[i] = {x, a, values}
end
if n > 0 then
  redis.call('SET', KEYS[4], ARGV[5], 'PX', ARGV[6])
  redis.call('ZADD', KEYS[3], ARGV[1], ARGV[7])
  out[n + 1] = redis.call('ZCARD', KEYS[3])
end
return out
"""
"""Every side effect of a recall, and the hits' records (standalone servers: the keys
span hash slots). KEYS = [stats, usage, receipts, receipt, memory...]; ARGV = [now_ms,
reinforce "1"/"0", recency_step_ms, outcome counter, receipt JSON, receipt TTL ms,
selection id, field count, field..., id...]. Counts the recall; for each memory that
still exists, reads its fields, counts its exposure and (reinforcing) access in the
usage hash, and refreshes its ``last_accessed_at`` when that is at least one recency
step old (the only write to the indexed document, rare by design); then stores the
receipt. Returns ``[exposures, accesses, [field values]]`` per memory, as they were
before this recall (``-1, -1, []`` for a memory forgotten meanwhile, never re-created;
``-2, -2, []`` for a key that no longer holds a hash; ``-3`` for a counter another
writer damaged, or a usage key of another type: left as it is, while every other
effect and the receipt are still written), then the number of receipts."""

TOUCH = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local t = tonumber(redis.call('HGET', KEYS[1], 'last_accessed_at')) or 0
if t > tonumber(ARGV[1]) - tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'last_accessed_at', ARGV[1])
return 1
"""
"""ARGV = [now_ms, recency_step_ms]: refresh the recency of an existing memory when it
is at least one step old (the single-key form of :data:`RECALL_EFFECTS`, for
clusters)."""

DELETE_MEMORY = """
local found = redis.pcall('HMGET', KEYS[1], 'content', 'namespace', 'agentId', 'threadId', 'session')
if found.err then found = {false, false, false, false, false} end
if redis.call('DEL', KEYS[1]) == 0 then return false end
found[1] = found[1] or ''
return found
"""
"""Delete a memory and return what its bookkeeping needs: ``[content, namespace token,
agent token, thread token, session token]`` (nil when it did not exist; only the empty
content when the key held no hash). Only the caller that deleted it gets them, so
counters and term statistics stay exact under concurrency."""

DELETE_IF_UNCHANGED = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local n = tonumber(ARGV[1])
local stored = redis.pcall('HMGET', KEYS[1], unpack(ARGV, 2, 1 + n))
if stored.err then return 0 end
for i = 1, n do
  local value = stored[i]
  if value then value = '=' .. value else value = '' end
  if value ~= ARGV[1 + n + i] then return 0 end
end
local found = redis.call('HMGET', KEYS[1], 'content', 'namespace', 'agentId', 'threadId', 'session')
redis.call('DEL', KEYS[1])
found[1] = found[1] or ''
return found
"""
"""Delete a memory only if the given fields still hold what a caller read (a
consolidation deletes the sources it summarised, not what another writer changed since).
ARGV = [field count n, field..., expected...]: an expected value is ``=`` followed by
the value read, or empty for a field that was absent. Returns what
:data:`DELETE_MEMORY` returns when deleted, nil when the memory did not exist, 0 when a
field differs or the key holds no hash (nothing deleted)."""

UNREGISTER = """
local nsets = tonumber(ARGV[1])
local owner = {ARGV[4], ARGV[5], ARGV[6], ARGV[7]}
local fields = {}
local leaving = {}
for s = 1, nsets do leaving[s] = {} end
for i = 2 + nsets, #KEYS do
  local id = ARGV[i + 6]
  local held = false
  if redis.call('EXISTS', KEYS[i]) == 1 then
    held = redis.pcall('HMGET', KEYS[i], 'namespace', 'agentId', 'threadId', 'session')
    if held.err then held = {} end
  else
    fields[#fields + 1] = ARGV[2] .. id
    fields[#fields + 1] = ARGV[3] .. id
  end
  for s = 1, nsets do
    local kind = ARGV[7 + s]
    local stays = false
    if held then
      local same = {}
      for j = 1, 4 do same[j] = (held[j] or '') == owner[j] end
      stays = kind == '*' or (same[1] and (kind == 'n' or (kind == 'a' and same[2])
        or (kind == 't' and same[3]) or (kind == 'b' and same[2] and same[3] and same[4])))
    end
    if not stays then leaving[s][#leaving[s] + 1] = id end
  end
end
local removed, failed = 0, 0
if #fields > 0 then
  removed = 1
  if type(redis.pcall('HDEL', KEYS[1], unpack(fields))) == 'table' then failed = 1 end
end
for s = 1, nsets do
  if #leaving[s] > 0 then
    removed = 1
    if type(redis.pcall('ZREM', KEYS[1 + s], unpack(leaving[s]))) == 'table' then failed = 1 end
  end
end
if removed == 0 then return 0 end
return 1 + failed
"""
"""Unregister deleted memories that share their listings, except from the sets a memory
stored again since under the same id belongs to (standalone servers): a forget whose
bookkeeping lands after an import of the id, or the replaced memory of a write under a
caller-chosen id, leaves the new memory's registrations and removes only the old one's.
KEYS = [usage counters, sorted set that lists them, ..., memory, ...]; ARGV = [number
of sets, exposure field prefix, access field prefix, the deleted memories' namespace,
agent, thread and session tokens ('' for none), what keeps an id in each set (``n``
its namespace, ``a`` namespace and agent, ``t`` namespace and thread, ``b`` all four:
the scope bucket, ``*`` any record under the id), id, ...] (an id per memory key). The
usage counters of a memory go only when no record holds its id. Returns 0 when nothing
was removed, 1 when done, 2 when a set or the usage hash was another type (the rest
done; the caller reports it)."""

UNREGISTER_EXPIRED = """
local now = tonumber(ARGV[1])
local removed = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  if KEYS[i] == nil or redis.call('EXISTS', KEYS[i]) == 0 then
    local score = tonumber(redis.call('ZSCORE', KEYS[1], id))
    if score ~= nil and score <= now then
      redis.call('ZREM', KEYS[1], id)
      removed[#removed + 1] = id
    end
  end
end
return removed
"""
"""Remove expired memories from their namespace's registry, each only while its entry
still scores (expires) at or before ``now`` and, where its memory key is passed, only
once that key is gone: the server, not the caller's clock, says a memory has expired,
and a memory stored again since keeps its new entry. KEYS = [registry, memory, ...]
(standalone servers; a cluster passes the registry alone, its records live in other
slots); ARGV = [now (ms), id, ...] (an id per memory key, when passed). Returns the ids
removed."""

UPDATE_IF_EXISTS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local ttl = tonumber(ARGV[1])
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
"""
"""ARGV = [ttl_ms or 0 (keep), field, value, ...]: update only a memory that still exists."""

UPDATE_GUARDED = (
    ADD_STAT_LUA
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local nsets, nguard = tonumber(ARGV[2]), tonumber(ARGV[5])
local held = {}
if nguard > 0 then held = redis.pcall('HMGET', KEYS[1], unpack(ARGV, 6, 5 + nguard)) end
if held.err then return -1 end
for i = 1, nguard do
  local value = held[i]
  if value then value = '=' .. value else value = '' end
  if value ~= ARGV[5 + nguard + i] then return -1 end
end
local at = 6 + 2 * nguard
local nterms = tonumber(ARGV[at])
if #ARGV > at + 2 * nterms then redis.call('HSET', KEYS[1], unpack(ARGV, at + 1 + 2 * nterms)) end
local ttl = tonumber(ARGV[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
if #KEYS > 1 + nsets then
  for i = at + 1, at + 2 * nterms, 2 do
    if add_stat(KEYS[2], ARGV[i], ARGV[i + 1]) <= 0 then redis.call('HDEL', KEYS[2], ARGV[i]) end
  end
end
for i = #KEYS - nsets + 1, #KEYS do redis.call('ZADD', KEYS[i], 'XX', ARGV[3], ARGV[4]) end
return 1
"""
)
"""New fields for a memory, written only while it is still the memory a caller read
(``update``, ``expire_many``). KEYS = [memory, term statistics (optional), sorted set
scored by expiry...]; ARGV = [ttl_ms or 0 (keep), number of sorted sets (the last
KEYS), their new score, the memory's id, guard count n, field..., expected..., term
count, (term field, delta) ..., field, value, ...]. An expected value is ``=`` and the
value read, or empty for a field that was absent: the guard names the memory's location
and write ``seq`` (a write under its id since changes them) and, for a new text, the
text it was computed against. Returns 0 when the memory is gone, -1 when a guarded
field changed (nothing written: the caller reads again), 1 when written, with in the
same step the term statistics trading the old text's terms for the new one's and the
sorted sets re-scored (standalone servers; a cluster passes the memory alone, its
listings and statistics live in other slots)."""

HMGET_MANY = """
local out = {}
for i = 1, #KEYS do
  local values = redis.pcall('HMGET', KEYS[i], unpack(ARGV))
  if values.err then values = 'WRONGTYPE' end
  out[i] = values
end
return out
"""
"""KEYS = hashes, ARGV = fields: the fields of every hash in one command (standalone
servers), so a read of many memories packs each field name once. A key that holds no
hash gives the string ``WRONGTYPE`` instead of its values (the read goes on)."""

WRITE_MEMORY = (
    ADD_STAT_LUA
    + """
local nterms = tonumber(ARGV[7])
local replaced = false
if ARGV[5] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  replaced = redis.pcall('HMGET', KEYS[1], 'content', 'namespace', 'agentId', 'threadId', 'session')
  if replaced.err then replaced = {false, false, false, false, false} end
  replaced[1] = replaced[1] or ''
  redis.call('DEL', KEYS[1])
end
local fields = {unpack(ARGV, 9 + 2 * nterms)}
fields[#fields + 1] = 'seq'
fields[#fields + 1] = redis.call('INCR', KEYS[9])
redis.call('HSET', KEYS[1], unpack(fields))
if ARGV[1] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local result = 1
if ARGV[5] == '1' then
  local reset = redis.pcall('HDEL', KEYS[4], 'x:' .. ARGV[2], 'a:' .. ARGV[2])
  if type(reset) == 'table' and reset.err then result = 2 end
  redis.call('SET', KEYS[8], ARGV[6])
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
for i = 11, #KEYS do redis.call('ZADD', KEYS[i], ARGV[3], ARGV[2]) end
local listed = redis.pcall('SADD', KEYS[10], ARGV[8])
if type(listed) == 'table' and listed.err then result = 2 end
local counted = redis.pcall('HINCRBY', KEYS[5], 'remembers', 1)
if type(counted) == 'table' and counted.err then result = 2 end
for i = 9, 8 + 2 * nterms, 2 do add_stat(KEYS[6], ARGV[i], ARGV[i + 1]) end
redis.call('SET', KEYS[7], ARGV[6])
if replaced then return {result, unpack(replaced)} end
return result
"""
)
"""A memory, its registrations and its bookkeeping in one step (standalone servers: the
keys span hash slots). KEYS = [memory, registry, scope bucket, usage, stats, term
statistics, registry version, epoch, write counter, namespace set, agent/thread
index...]; the memory gets the next ``seq`` of the store in the same HSET. ARGV =
[ttl_ms or "0", id, expiry score, created_at, caller-chosen id "1"/"0" (it may replace
a memory: its usage is reset and the epoch changes), a fresh change token, term count,
namespace token, (term field, delta) ..., field, value, ...]. Returns 1, or 2 when a
usage reset, the namespace set or the ``remembers`` counter failed (another writer
replaced that key by another type): the memory and its registrations are written either
way, never half of them. Under a caller-chosen id a memory already stored is replaced in
the same step (readers see the old memory or the new one, never none) and the reply is
``[1 or 2, content, namespace, agent, thread, session]`` of the memory replaced (as
:data:`DELETE_MEMORY` returns them): its registrations elsewhere and its terms are the
caller's to take out (:data:`UNREGISTER` spares the new memory's)."""

_ADOPT_GUARD = """
local nguard = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local held = redis.pcall('HMGET', KEYS[1], unpack(ARGV, 2, 1 + nguard))
if held.err then return 0 end
for i = 1, nguard do
  local value = held[i]
  if value then value = '=' .. value else value = '' end
  if value ~= ARGV[1 + nguard + i] then return 0 end
end
redis.call('DEL', KEYS[1])
local A = {unpack(ARGV, 2 + 2 * nguard)}
"""

ADOPT_MEMORY = ADD_STAT_LUA + _ADOPT_GUARD + WRITE_MEMORY[len(ADD_STAT_LUA) :].replace("ARGV", "A")
"""The rewrite of a foreign record (one another library wrote) as a memory of ours,
only while it still holds what the adoption read: :data:`WRITE_MEMORY` (same keys)
after a guard. ARGV = [field count n, field..., expected..., then WRITE_MEMORY's ARGV];
an expected value is ``=`` followed by the value read, or empty for a field that was
absent (``session``: the record is still foreign). Returns 0 when the record is gone
or changed since it was read (nothing written: it stays as it is), else what
:data:`WRITE_MEMORY` returns (the foreign record replaced, never merged)."""

REFRESH_DUPLICATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local seq = redis.call('HGET', KEYS[1], 'seq')
if seq then seq = '=' .. seq else seq = '' end
if seq ~= ARGV[6] then return 0 end
local expires = redis.call('HGET', KEYS[1], 'expires_at')
if expires and tonumber(expires) and tonumber(expires) <= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'last_accessed_at', ARGV[1])
local current = tonumber(redis.call('HGET', KEYS[1], 'importance') or '0')
if tonumber(ARGV[2]) > current then redis.call('HSET', KEYS[1], 'importance', ARGV[2]) end
redis.call('HINCRBY', KEYS[1], 'access_count', ARGV[5])
if not expires then return 1 end
local function rescored(score)
  for i = 3, #KEYS do redis.call('ZADD', KEYS[i], 'XX', score, ARGV[7]) end
  if #KEYS > 1 then redis.call('SET', KEYS[2], ARGV[8]) end
  return 2
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], 'expires_at')
  redis.call('PERSIST', KEYS[1])
  return rescored('+inf')
end
if not tonumber(expires) or tonumber(ARGV[3]) > tonumber(expires) then
  redis.call('HSET', KEYS[1], 'expires_at', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return rescored(ARGV[3])
end
return 1
"""
"""KEYS = [memory, registry version, sorted set scored by expiry...] (standalone
servers; a cluster passes the memory alone, the others live in other slots); ARGV =
[now_ms, importance, expires_at ms of the new write or '' (persistent), its TTL in ms,
the number of writes collapsing into it (added to the access count), the ``seq`` the
duplicate search read (``=`` and the value, or empty when absent), the memory's id, a
fresh registry version token]: a re-remembered duplicate refreshes the existing memory
(recency, access count, importance = max) instead of creating a second copy, and keeps
the longer of the two lifetimes. Only the memory the search found: a write under its id
since changed its ``seq``. Returns 0 when the memory is gone, rewritten since the search
or expired by ``now_ms`` (nothing written: the caller writes a fresh one), 1 when
refreshed, 2 when refreshed and its lifetime extended, with in the same step its sorted
sets re-scored and the registry version bumped when passed (a cluster's caller does
that: :func:`~agent_memory.store.ops.dedupe.rescore_commands`)."""

_APPLY_EVAL = """
local function add_float(key, field, delta)
  if type(redis.pcall('HINCRBYFLOAT', key, field, delta)) == 'table' then
    redis.call('HSET', key, field, delta)
    return 1
  end
  return 0
end
local function finite(x)
  return type(x) == 'number' and x == x and x ~= math.huge and x ~= -math.huge
end
local function apply(key, written)
  if redis.call('EXISTS', key) == 0 then return 0 end
  if redis.call('TYPE', key)['ok'] ~= 'hash' then return 3 end
  if written and written ~= '' and redis.call('HGET', key, 'created_at') ~= written then return 0 end
  local repaired = add_float(key, 'eval_sum', ARGV[1]) + add_float(key, 'eval_weight', ARGV[2])
  if ARGV[6] == '1' then redis.call('HSET', key, 'last_reinforced_at', ARGV[4]) end
  if ARGV[3] ~= '' then
    local raw = redis.call('HGET', key, 'utility_ctx')
    local ctx = {}
    if raw then
      local ok, decoded = pcall(cjson.decode, raw)
      if ok and type(decoded) == 'table' then ctx = decoded else repaired = repaired + 1 end
    end
    for k, v in pairs(ctx) do
      if type(k) ~= 'string' or type(v) ~= 'table' or not finite(v[1]) or not finite(v[2])
          or not finite(v[3]) then
        ctx[k] = nil
        repaired = repaired + 1
      end
    end
    local entry = ctx[ARGV[3]] or {0, 0, 0}
    entry[1] = entry[1] + tonumber(ARGV[1])
    entry[2] = entry[2] + tonumber(ARGV[2])
    entry[3] = tonumber(ARGV[4])
    ctx[ARGV[3]] = {entry[1], entry[2], entry[3]}
    local count, oldest, oldest_t = 0, nil, nil
    for k, v in pairs(ctx) do
      count = count + 1
      if oldest_t == nil or v[3] < oldest_t then oldest, oldest_t = k, v[3] end
    end
    if count > tonumber(ARGV[5]) then ctx[oldest] = nil end
    redis.call('HSET', key, 'utility_ctx', cjson.encode(ctx))
  end
  if repaired > 0 then return 2 end
  return 1
end
"""
"""``apply(key, written)`` adds one evaluation to a memory's aggregates and says what it
found: 0 no memory (or, ``written`` given and not empty, none that still holds that
``created_at``: the memory the recall ranked was forgotten and its id stored again,
and the new memory takes no credit for the old one's selection), 1 applied, 2 applied after replacing learning data no writer makes (an
``eval_sum`` / ``eval_weight`` that is not a number, a ``utility_ctx`` that is not a
JSON object of ``[sum, weight, updated_ms]`` entries: derived data, rebuilt from this
evaluation on), 3 the key holds another type (left alone). One damaged memory must not
stop a completion, which runs for every memory of a selection in one script."""

COMPLETE = (
    _APPLY_EVAL
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
redis.call('DEL', KEYS[1])
local out = {1}
for i = 2, #KEYS do out[#out + 1] = apply(KEYS[i], ARGV[5 + i]) end
return out
"""
)
"""KEYS = [receipt, memory...]; ARGV = [share, weight, context, now_ms, max_contexts,
positive, each memory's ``created_at`` as recalled ('' unknown)...]: consume the receipt and update every memory's aggregates atomically; a
second completion finds no receipt and changes nothing (standalone servers). Returns
``[1, status per memory...]`` (see ``_APPLY_EVAL``), or ``[0]`` without a receipt."""

APPLY_EVAL = (
    _APPLY_EVAL
    + """
return apply(KEYS[1], ARGV[7])
"""
)
"""Single-key variant for clusters, after the receipt was consumed with GETDEL (ARGV as
:data:`COMPLETE`'s, with the one memory's ``created_at`` as recalled)."""

FEEDBACK = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local expires = redis.call('HGET', KEYS[1], 'expires_at')
if expires and string.match(expires, '^%d+$') and tonumber(expires) <= tonumber(ARGV[3]) then
  return 0
end
if ARGV[1] == 'clear' then
  redis.call('HDEL', KEYS[1], 'manual_utility')
else
  redis.call('HSET', KEYS[1], 'manual_utility', ARGV[2])
  if tonumber(ARGV[2]) > 0 then redis.call('HSET', KEYS[1], 'last_reinforced_at', ARGV[3]) end
end
return 1
"""
"""ARGV = ["set"|"clear", value, now_ms]: the manual usefulness of an existing memory
that has not expired by the store's clock (``now_ms``; the server reaps it by its own)."""

PUBLISH = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
local published = {}
if raw and string.sub(raw, 1, 1) == '{' then
  local ok, decoded = pcall(cjson.decode, raw)
  if ok and type(decoded) == 'table' then published = decoded end
end
local changed = false
for i = 2, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    published[ARGV[i]] = ARGV[i + 1]
    changed = true
  end
end
if changed then redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(published)) end
return changed and 1 or 0
"""
"""KEYS = [config hash]; ARGV = [published field, (field, value)...]: set the fields that
are not set and remember what was published (one key: cluster-safe). A published record
that is not a JSON object is replaced, as the in-process twin does."""

FORGET_EMPTY_NAMESPACE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local removed = redis.pcall('SREM', KEYS[2], ARGV[1])
if type(removed) == 'table' and removed.err then return -1 end
return removed
"""
"""KEYS = [registry, namespace set], ARGV = [namespace token]: the token leaves the set
only while its registry does not exist (a write creates both in one script). Returns 1
when removed, 0 when not (registry present, or token absent), -1 when the set is not a
set."""

DELETE_IF_HOLDS = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
"""KEYS = [key], ARGV = [value]: delete a string key only while it holds ``value``: a
scope's dedupe claim only while it holds the releasing writer's token (a claim whose
lease ran out may be another's now), a heartbeat only while it holds the stamp this
instance wrote last (another instance of the same name may have beaten since)."""
