"""Server-side scripts of the cache tiers and of the adapters' list logs."""

MAX_COST_MICROS = 10**15
"""The largest cost of one entry (micro-dollars) a hit counts: a ``costMicros`` above it,
negative or not a whole number is damage, never added to ``cost_saved_micros``."""

COUNTED_GET = f"""
local value = redis.pcall('GET', KEYS[1])
local hits = tonumber(ARGV[1])
local hit, cost = 0, 0
if type(value) == 'table' and value.err then
  value, hit = false, -1
elseif value then
  local ok, entry = pcall(cjson.decode, value)
  if ok and type(entry) == 'table' and entry['response'] ~= nil then
    hit = 1
    local c = entry['costMicros']
    if ARGV[2] == '1' and type(c) == 'number' and c == math.floor(c)
        and c > 0 and c <= {MAX_COST_MICROS} then
      cost = c
    end
  end
end
local first, last = 3, 2 + hits
if hit ~= 1 then first, last = 3 + hits, #ARGV end
local reply = {{value, hit, cost}}
local function add(field, amount)
  local done = redis.pcall('HINCRBY', KEYS[2], field, amount)
  if type(done) == 'table' and done.err then reply[#reply + 1] = field end
end
for i = first, last do add(ARGV[i], 1) end
if cost > 0 then add('cost_saved_micros', string.format('%.0f', cost)) end
return reply
"""
"""KEYS = [entry, stats]; ARGV = [n, priced (1/0), hit fields (n)..., miss fields...]:
read an entry and count its outcome in the same atomic step.

An entry is a hit when it is a JSON object with a ``response``; a hit of a priced tier
also adds the entry's ``costMicros`` (a whole number in (0, :data:`MAX_COST_MICROS`]).
An entry's key holding another type than a string (another writer's) is counted as a
miss and marked, never an error, so the lookup goes on and a later store replaces it.
A counter the server refuses (the stats key of another type, a field that is not a
count) fails alone, never the read. Reply: ``[value (nil when absent or not a string),
1 (counted as a hit), 0 (a miss) or -1 (a miss: the key holds another type), the cost
counted, the fields whose update failed...]``."""

REFRESH_THREAD = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return 0 end
if kind ~= 'hash' then return -1 end
if ARGV[1] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1
"""
"""KEYS = [a session thread's hash]; ARGV = [its TTL in milliseconds, or "" for none].
Refreshes the thread's TTL only when its key holds a hash (the session's own type), so a
key another writer gave another type is never changed by a read or a touch. Reply: 1
(a thread: refreshed), 0 (no such key), -1 (the key holds another type: left as it
is). One key: atomic, in one slot."""

DESTROY_THREAD = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return 0 end
if kind ~= 'hash' then
  redis.call('UNLINK', KEYS[1])
  return -1
end
local fields = redis.call('HLEN', KEYS[1])
redis.call('UNLINK', KEYS[1])
return fields
"""
"""KEYS = [a session thread's hash]; ARGV = []. Deletes the thread and returns how many
fields it had, in one atomic step (an ``HLEN`` and ``UNLINK`` pipelined side by side
could count a field a concurrent write added after the count, or one it removed). A key
of another type (damage, or another writer's) is deleted too, so that destroying the
thread clears it for new writes: -1. No key: 0."""

POP_IF_TAIL = """
local n = #ARGV
if n == 0 then return 0 end
local tail = redis.call('LRANGE', KEYS[1], -n, -1)
if #tail ~= n then return 0 end
for i = 1, n do
  if tail[i] ~= ARGV[i] then return 0 end
end
redis.call('LTRIM', KEYS[1], 0, -n - 1)
return 1
"""
"""KEYS = [list]; ARGV = the elements expected at its tail, oldest first. Removes them
and returns 1 if the list ends with exactly those, else changes nothing and returns 0.
One key: atomic, in one slot (used by :mod:`agent_memory.integrations._list_log`)."""

LIST_WITH_LIFETIME = """
local key, command, reply = KEYS[1], string.upper(ARGV[2]), nil
if command == 'RPUSH' then
  for i = 3, #ARGV, 1000 do
    reply = redis.call('RPUSH', key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
else
  reply = redis.call(command, key, unpack(ARGV, 3))
end
redis.call('PEXPIRE', key, ARGV[1])
return reply
"""
"""KEYS = [list]; ARGV = [ttl ms, command (``LRANGE``, ``RPUSH``, ``RPOP``, or any other
command whose only key is its first argument, e.g. the DB chat store's ``ZRANGE`` /
``ZCOUNT``), its arguments after the key...]: run the command, then restart the key's
lifetime, in one atomic step. A key of another type fails the command, so the script
stops before the ``PEXPIRE``: another client's key is refused and keeps its own lifetime
(a ``PEXPIRE`` pipelined beside the command would apply anyway). ``RPUSH`` pushes in chunks of 1000
(Lua's ``unpack`` has a stack limit); the reply is the command's (for ``RPUSH``, the
last chunk's: the list's new length). Used by :mod:`agent_memory.integrations._list_log`
and the LlamaIndex chat stores.
"""
