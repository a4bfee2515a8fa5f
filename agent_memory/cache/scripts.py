"""Server-side script of the cache tiers (standalone servers only: two keys)."""

COUNTED_GET = """
local value = redis.call('GET', KEYS[1])
local hits = tonumber(ARGV[1])
local first, last = 2, 1 + hits
if not value then first, last = 2 + hits, #ARGV end
for i = first, last do redis.call('HINCRBY', KEYS[2], ARGV[i], 1) end
if value then
  local ok, entry = pcall(cjson.decode, value)
  if ok and type(entry) == 'table' and type(entry['costMicros']) == 'number' then
    redis.call('HINCRBY', KEYS[2], 'cost_saved_micros', math.floor(entry['costMicros']))
  end
end
return value
"""
"""KEYS = [entry, stats]; ARGV = [n, hit fields (n)..., miss fields...]: read an entry and
count the hit or miss (and an LLM entry's ``costMicros``) in the same atomic step."""
