"""Server-side scripts for single-key atomic steps (single key: cluster-safe).

Each script touches only ``KEYS[1]``, so it stays inside one hash slot. The in-process
backend runs the Python twin registered in :data:`PYTHON_TWINS` under the same source.
"""

from __future__ import annotations

WRITE_WITH_TTL = """
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""
"""ARGV = [ttl_ms, field, value, ...]: the hash never exists without its TTL."""

REINFORCE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'last_accessed_at', ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'access_count', 1)
"""
"""ARGV = [now_ms]: bump an existing memory; never re-creates a forgotten one."""

UPDATE_IF_EXISTS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local ttl = tonumber(ARGV[1])
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
"""
"""ARGV = [ttl_ms or 0 (keep), field, value, ...]: update only a memory that still exists."""

REFRESH_DUPLICATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'last_accessed_at', ARGV[1])
local current = tonumber(redis.call('HGET', KEYS[1], 'importance') or '0')
if tonumber(ARGV[2]) > current then redis.call('HSET', KEYS[1], 'importance', ARGV[2]) end
redis.call('HINCRBY', KEYS[1], 'access_count', 1)
return 1
"""
"""ARGV = [now_ms, importance]: a re-remembered duplicate refreshes the existing memory
(recency, access count, importance = max) instead of creating a second copy."""
