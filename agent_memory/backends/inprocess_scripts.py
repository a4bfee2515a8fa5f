"""Python twins of the Lua scripts the library sends, for the in-process keyspace."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from agent_memory.backends.inprocess_keyspace import (
    COMMANDS,
    Hash,
    Keyspace,
    SortedSet,
    _decode,
    _expire,
    _get,
    _hash_set,
    _hdel,
    _hincrby,
    _hmget,
    _hsetnx,
    _incrby,
    _s,
    _sadd,
    _set,
    _srem,
    _type,
    _zadd,
    _zrem,
)
from agent_memory.cache import scripts as cache_scripts
from agent_memory.core.clients import script_sha
from agent_memory.core.numbers import (
    INT64_MAX,
    INT64_MIN,
    lua_number,
    lua_text,
    string2ld_rejects,
)
from agent_memory.errors import ServerResponseError, WrongTypeError
from agent_memory.schema import lexical, scripts
from agent_memory.schema.utility import is_context_entry

_DIGITS = re.compile("[0-9]+")


def run_script(ks: Keyspace, a: list[Any]) -> Any:
    """EVAL (by source) or EVALSHA (by digest: every twin's script is "loaded")."""
    source, nkeys = _s(a[0]), int(_s(a[1]))
    twin = _SCRIPT_TWINS.get(source) or _SCRIPT_TWINS.get(_BY_SHA.get(source, ""))
    if twin is None:
        raise ServerResponseError("NOSCRIPT script has no in-process twin", command="EVAL")
    return twin(ks, [_s(k) for k in a[2 : 2 + nkeys]], a[2 + nkeys :])


def _write_with_ttl(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    _hash_set(ks, [keys[0], *argv[1:]])
    _expire(0.001)(ks, [keys[0], argv[0]])  # the server reads the TTL as an integer
    return 1


def _number(raw: Any) -> float:
    """``tonumber(raw)`` where the script computes with it: nil fails the script."""
    value = lua_number(_s(raw))
    if value is None:
        raise ServerResponseError("ERR attempt to compute with nil (tonumber)", command="EVAL")
    return value


def _write_memory(ks: Keyspace, keys: list[str], argv: list[Any]) -> Any:
    memory, registry, bucket, usage, stats, terms, version, epoch = keys[:8]
    memory_id, expiry, token = _s(argv[1]), argv[2], argv[5]
    nterms = int(_s(argv[6]))
    pairs, fields = argv[8 : 8 + 2 * nterms], argv[8 + 2 * nterms :]
    replaced = _delete_memory(ks, [memory], []) if _s(argv[4]) == "1" else None
    _hash_set(ks, [memory, *fields, "seq", str(_incrby(ks, [keys[8]]))])
    if _s(argv[0]) != "0":
        _expire(0.001)(ks, [memory, argv[0]])
    result = 1
    if _s(argv[4]) == "1":
        try:
            _hdel(ks, [usage, "x:" + memory_id, "a:" + memory_id])
        except ServerResponseError:
            result = 2
        _set(ks, [epoch, token])
    _zadd(ks, [registry, expiry, memory_id])
    _zadd(ks, [bucket, argv[3], memory_id])
    for index in keys[10:]:
        _zadd(ks, [index, expiry, memory_id])
    try:
        _sadd(ks, [keys[9], argv[7]])
    except ServerResponseError:
        result = 2
    try:
        _hincrby(ks, [stats, "remembers", "1"])
    except (ServerResponseError, ValueError, OverflowError):
        result = 2
    for i in range(0, len(pairs), 2):
        _add_stat(ks, terms, pairs[i], pairs[i + 1])
    _set(ks, [version, token])
    return [result, *replaced] if replaced is not None else result


def _publish(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    h = ks.create(keys[0], Hash)
    marker = _s(argv[0])
    try:
        published = json.loads(_s(h.get(marker, "{}")))
    except ValueError:
        published = {}
    if not isinstance(published, dict):
        published = {}
    changed = False
    for i in range(1, len(argv) - 1, 2):
        if _hsetnx(ks, [keys[0], argv[i], argv[i + 1]]):
            published[_s(argv[i])] = _s(argv[i + 1])
            changed = True
    if changed:
        h[marker] = json.dumps(published, separators=(",", ":"))
    return int(changed)


def _stored_number(ks: Keyspace, key: str, field: str) -> float:
    """``tonumber(redis.call('HGET', key, field)) or 0``."""
    raw = (ks.get(key, Hash) or {}).get(field)
    value = lua_number(_s(raw)) if raw is not None else None
    return 0.0 if value is None else value


def _reply_int(value: float) -> int:
    """A Lua number returned to the server: an integer reply, truncated (C's cast: NaN
    and values out of the 64-bit range come back as its minimum on x86-64 servers)."""
    if math.isfinite(value) and INT64_MIN <= math.trunc(value) <= INT64_MAX:
        return math.trunc(value)
    return INT64_MIN


def _recall_effects(ks: Keyspace, keys: list[str], argv: list[Any]) -> list[Any]:
    stats, usage, receipts, receipt, memories = keys[0], keys[1], keys[2], keys[3], keys[4:]
    now, reinforce = _number(argv[0]), _s(argv[1]) == "1"
    _hincrby(ks, [stats, "recalls", "1"])
    _hincrby(ks, [stats, _s(argv[3]), "1"])
    count = int(_s(argv[7]))
    fields, ids = argv[8 : 8 + count], argv[8 + count :]
    out: list[Any] = []
    for key, memory_id in zip(memories, ids, strict=True):
        exposures = accesses = -1
        values: list[Any] = []
        if ks._alive(key) and not isinstance(ks.data[key], Hash):
            exposures = accesses = -2
        elif ks._alive(key):
            values = _hmget(ks, [key, *fields])
            # a counter another writer left negative is no "gone" mark (-1, -2)
            exposures = _counted(ks, usage, "x:" + _s(memory_id))
            if reinforce:
                accesses = _counted(ks, usage, "a:" + _s(memory_id))
                # ``t <= now - step`` (a NaN stamp is left alone, unlike TOUCH's test)
                if _stored_number(ks, key, "last_accessed_at") <= now - _number(argv[2]):
                    _hash_set(ks, [key, "last_accessed_at", argv[0]])
            else:
                try:
                    stored = _stored_number(ks, usage, "a:" + _s(memory_id))
                    accesses = _reply_int(max(stored, 0))
                except WrongTypeError:
                    accesses = _DAMAGED_COUNTER
        out.append([exposures, accesses, values])
    if memories:
        _set(ks, [receipt, argv[4], "PX", argv[5]])
        _zadd(ks, [receipts, argv[0], argv[6]])
        out.append(len(ks.get(receipts, SortedSet) or {}))
    return out


_DAMAGED_COUNTER = -3


def _counted(ks: Keyspace, usage: str, field: str) -> int:
    """The script's ``counted``: HINCRBY by one, the count before it, or -3 when the
    server refuses (a counter that is not an integer, a usage key of another type)."""
    try:
        return max(_hincrby(ks, [usage, field, "1"]) - 1, 0)
    except (ValueError, WrongTypeError):
        return _DAMAGED_COUNTER


def _touch(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    if not ks._alive(keys[0]):
        return 0
    if _stored_number(ks, keys[0], "last_accessed_at") > _number(argv[0]) - _number(argv[1]):
        return 0
    _hash_set(ks, [keys[0], "last_accessed_at", argv[0]])
    return 1


def _hincrbyfloat(h: Hash, field: str, delta: Any) -> int:
    """Twin of the script's ``add_float``: HINCRBYFLOAT, or the delta alone (1) when the
    stored value is not a float the server would add to, or the sum is not finite."""
    raw = h.get(field)
    try:
        stored = _s(raw) if raw is not None else "0"
        if string2ld_rejects(stored) or string2ld_rejects(_s(delta)):
            raise ValueError(stored)  # what the server's parser refuses
        total = _number(stored) + _number(delta)
        if not math.isfinite(total):
            raise ValueError(stored)
    except (ValueError, UnicodeDecodeError):
        h[field] = _s(delta)
        return 1
    h[field] = repr(total)
    return 0


def _contexts(raw: Any) -> tuple[dict[str, list[float]], int]:
    """The script's reading of ``utility_ctx``: the well-formed entries, and how many
    things it dropped (a JSON array decodes to a Lua table whose entries are dropped one
    by one; anything else that is not an object counts once)."""
    if raw is None:
        return {}, 0
    try:
        data = json.loads(_s(raw))
    except (ValueError, UnicodeDecodeError):
        return {}, 1
    if isinstance(data, list):
        return {}, len(data)
    if not isinstance(data, dict):
        return {}, 1
    kept = {k: v for k, v in data.items() if is_context_entry(v)}
    return kept, len(data) - len(kept)


def _apply_eval(ks: Keyspace, key: str, argv: list[Any], written: Any = None) -> int:
    if not ks._alive(key):
        return 0
    if _type(ks, key) != "hash":
        return 3
    h = ks.get(key, Hash)
    stored = h.get("created_at")
    if (
        written is not None
        and _s(written) != ""
        and (stored is None or _bytes(stored) != _bytes(written))
    ):
        return 0  # the memory the recall ranked was replaced under its id
    repaired = _hincrbyfloat(h, "eval_sum", argv[0]) + _hincrbyfloat(h, "eval_weight", argv[1])
    if _s(argv[5]) == "1":
        h["last_reinforced_at"] = argv[3]
    context = _s(argv[2])
    if context:
        contexts, dropped = _contexts(h.get("utility_ctx"))
        repaired += dropped
        entry = contexts.get(context, [0, 0, 0])
        now = _number(argv[3])
        contexts[context] = [entry[0] + _number(argv[0]), entry[1] + _number(argv[1]), now]
        if len(contexts) > _number(argv[4]):
            oldest = min(contexts, key=lambda k: contexts[k][2])
            del contexts[oldest]
        h["utility_ctx"] = _cjson(contexts)
    return 2 if repaired else 1


def _cjson(contexts: dict[str, list[float]]) -> str:
    """``cjson.encode`` of the contexts: numbers as ``%.14g``; NaN or an infinity
    fails the script, as cjson refuses to encode them."""
    parts = []
    for key, entry in contexts.items():
        if not all(math.isfinite(x) for x in entry):
            raise ServerResponseError("ERR Cannot serialise number: must not be NaN or Inf")
        parts.append(json.dumps(key) + ":[" + ",".join(lua_text(float(x)) for x in entry) + "]")
    return "{" + ",".join(parts) + "}"


def _complete(ks: Keyspace, keys: list[str], argv: list[Any]) -> list[int]:
    if not ks._alive(keys[0]):
        return [0]
    ks.delete(keys[0])
    written = [argv[5 + i] if 5 + i < len(argv) else None for i in range(1, len(keys))]
    return [
        1,
        *(_apply_eval(ks, key, argv, at) for key, at in zip(keys[1:], written, strict=True)),
    ]


def _feedback(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    if not ks._alive(keys[0]):
        return 0
    h = ks.get(keys[0], Hash)
    expires = _decode(h.get("expires_at"))
    digits = isinstance(expires, str) and _DIGITS.fullmatch(expires) is not None
    if digits and float(expires) <= _number(argv[2]):  # expired by the store's clock
        return 0
    if _s(argv[0]) == "clear":
        h.pop("manual_utility", None)
    else:
        h["manual_utility"] = _s(argv[1])
        if _number(argv[1]) > 0:
            h["last_reinforced_at"] = _s(argv[2])
    return 1


def _update_if_exists(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    if not ks._alive(keys[0]):
        return 0
    if len(argv) > 1:
        _hash_set(ks, [keys[0], *argv[1:]])
    ttl = _number(argv[0])
    if ttl > 0:
        _expire(0.001)(ks, [keys[0], lua_text(ttl)])
    return 1


def _unregister(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    nsets = int(_s(argv[0]))
    owner = [_bytes(v) for v in argv[3:7]]
    sets, memories = keys[1 : 1 + nsets], keys[1 + nsets :]
    kinds, ids = [_s(k) for k in argv[7 : 7 + nsets]], argv[7 + nsets :]
    fields: list[str] = []
    leaving: list[list[Any]] = [[] for _ in sets]
    for key, memory_id in zip(memories, ids, strict=True):
        held: list[bytes] | None = None
        if ks._alive(key):
            h = ks.data[key]
            fields_held = ("namespace", "agentId", "threadId", "session")
            held = [_bytes(h.get(f) or b"") if isinstance(h, Hash) else b"" for f in fields_held]
        else:
            fields += [prefix + _s(memory_id) for prefix in (_s(argv[1]), _s(argv[2]))]
        for s, kind in enumerate(kinds):
            if held is None or not _stays(kind, held, owner):
                leaving[s].append(memory_id)
    steps: list[tuple[Callable[[Keyspace, list[Any]], Any], list[Any]]] = []
    if fields:
        steps.append((_hdel, [keys[0], *fields]))
    steps += [(_zrem, [key, *gone]) for key, gone in zip(sets, leaving, strict=True) if gone]
    if not steps:
        return 0
    failed = 0
    for step, args in steps:
        try:
            step(ks, args)
        except ServerResponseError:
            failed = 1
    return 1 + failed


def _stays(kind: str, held: list[bytes], owner: list[bytes]) -> bool:
    """Whether a record holding ``held`` (namespace, agent, thread, session tokens)
    belongs to a set of ``kind`` that lists memories of ``owner``'s tokens."""
    if kind == "*":
        return True
    same = [a == b for a, b in zip(held, owner, strict=True)]
    return same[0] and (
        kind == "n"
        or (kind == "a" and same[1])
        or (kind == "t" and same[2])
        or (kind == "b" and all(same[1:]))
    )


def _unregister_expired(ks: Keyspace, keys: list[str], argv: list[Any]) -> list[bytes]:
    now = lua_number(_s(argv[0]))
    removed: list[bytes] = []
    for i, member in enumerate(argv[1:], start=1):
        if i < len(keys) and ks._alive(keys[i]):
            continue
        score = (ks.get(keys[0], SortedSet) or {}).get(_s(member))
        if score is None:
            continue
        if now is None:
            raise ServerResponseError("attempt to compare number with nil")
        if score <= now:
            _zrem(ks, [keys[0], member])
            removed.append(_s(member).encode("utf-8", "surrogateescape"))
    return removed


def _update_guarded(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    if not ks._alive(keys[0]):
        return 0
    nsets, nguard = int(_s(argv[1])), int(_s(argv[4]))
    h = ks.data[keys[0]]
    if nguard > 0 and not isinstance(h, Hash):
        return -1  # the server's HMGET fails on another type: read as a change
    for i in range(nguard):
        value = h.get(_s(argv[5 + i])) if isinstance(h, Hash) else None
        if (b"=" + _bytes(value) if value is not None else b"") != _bytes(argv[5 + nguard + i]):
            return -1
    at = 5 + 2 * nguard
    nterms = int(_s(argv[at]))
    if len(argv) > at + 1 + 2 * nterms:
        _hash_set(ks, [keys[0], *argv[at + 1 + 2 * nterms :]])
    ttl = _number(argv[0])
    if ttl > 0:
        _expire(0.001)(ks, [keys[0], lua_text(ttl)])
    if len(keys) > 1 + nsets:
        _adjust_stats(ks, keys[1:2], argv[at + 1 : at + 1 + 2 * nterms])
    for key in keys[len(keys) - nsets :] if nsets else ():
        _zadd(ks, [key, "XX", argv[2], argv[3]])
    return 1


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def _pop_if_tail(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    n = len(argv)
    if n == 0:  # before the key is read, as the script does
        return 0
    items = ks.get(keys[0], list) or []
    if len(items) < n:
        return 0
    if [_bytes(item) for item in items[-n:]] != [_bytes(arg) for arg in argv]:
        return 0
    del items[-n:]
    if not items:  # a server deletes an emptied list
        ks.delete(keys[0])
    return 1


def _list_with_lifetime(ks: Keyspace, keys: list[str], argv: list[Any]) -> Any:
    # the command fails on a key of another type before the lifetime changes, as in Lua
    reply = COMMANDS[_s(argv[1]).upper()](ks, [keys[0], *argv[2:]])
    _expire(0.001)(ks, [keys[0], argv[0]])
    return reply


def _counted_get(ks: Keyspace, keys: list[str], argv: list[Any]) -> Any:
    hits = int(_s(argv[0]))
    hit, cost = 0, 0
    try:
        value = _get(ks, [keys[0]])
    except ServerResponseError:  # another type at the entry's key: a marked miss
        value, hit = None, -1
    if value is not None:
        try:
            entry = json.loads(_s(value))
        except (ValueError, UnicodeDecodeError):
            entry = None
        if isinstance(entry, dict) and "response" in entry:
            hit = 1
            cost = _counted_cost(entry.get("costMicros")) if _s(argv[1]) == "1" else 0
    fields = argv[2 : 2 + hits] if hit == 1 else argv[2 + hits :]
    reply: list[Any] = [value, hit, cost]
    for field, amount in [*((f, 1) for f in fields), *([("cost_saved_micros", cost)] * (cost > 0))]:
        try:
            _hincrby(ks, [keys[1], field, str(amount)])
        except (ValueError, ServerResponseError):
            reply.append(field)
    return reply


def _refresh_thread(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    kind = _type(ks, keys[0])
    if kind == "none":
        return 0
    if kind != "hash":  # another writer's key: left as it is
        return -1
    if _s(argv[0]) != "":
        _expire(0.001)(ks, [keys[0], argv[0]])
    return 1


def _destroy_thread(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    kind = _type(ks, keys[0])
    if kind == "none":
        return 0
    if kind != "hash":  # not a thread: cleared for new writes all the same
        ks.delete(keys[0])
        return -1
    fields = len(ks.get(keys[0], Hash) or {})
    ks.delete(keys[0])
    return fields


def _counted_cost(value: Any) -> int:
    """The script's reading of an entry's ``costMicros``: a whole number of micro-dollars
    in (0, ``MAX_COST_MICROS``], else nothing."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or value != math.floor(value):
        return 0
    return int(value) if 0 < value <= cache_scripts.MAX_COST_MICROS else 0


def _refresh_duplicate(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    key = keys[0]
    if not ks._alive(key):
        return 0
    seq = (ks.get(key, Hash) or {}).get("seq")
    if ("=" + _s(seq) if seq is not None else "") != _s(argv[5]):
        return 0
    raw = (ks.get(key, Hash) or {}).get("expires_at")
    expires = lua_number(_s(raw)) if raw is not None else None
    if expires is not None and expires <= _number(argv[0]):
        return 0
    _hash_set(ks, [key, "last_accessed_at", argv[0]])
    current = _number((ks.get(key, Hash) or {}).get("importance", "0"))
    if _number(argv[1]) > current:
        _hash_set(ks, [key, "importance", argv[1]])
    _hincrby(ks, [key, "access_count", argv[4]])
    if raw is None:
        return 1

    def rescored(score: Any) -> int:
        for listing in keys[2:]:
            _zadd(ks, [listing, "XX", score, argv[6]])
        if len(keys) > 1:
            _set(ks, [keys[1], argv[7]])
        return 2

    if _s(argv[2]) == "":
        _hdel(ks, [key, "expires_at"])
        ks.expires.pop(key, None)
        return rescored("+inf")
    if expires is None or _number(argv[2]) > expires:
        _hash_set(ks, [key, "expires_at", argv[2]])
        _expire(0.001)(ks, [key, argv[3]])
        return rescored(argv[2])
    return 1


def _add_stat(ks: Keyspace, key: str, field: Any, delta: Any) -> int:
    """Twin of ``ADD_STAT_LUA``: an unreadable statistic is replaced by the delta (a
    statistics key of another type first deleted)."""
    try:
        return _hincrby(ks, [key, field, delta])
    except (ValueError, OverflowError, ServerResponseError):
        if _type(ks, key) != "hash":
            ks.delete(key)
        _hash_set(ks, [key, field, delta])
        return int(_s(delta))


def _adjust_stats(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    for i in range(0, len(argv) - 1, 2):
        field = _s(argv[i])
        if _add_stat(ks, keys[0], field, argv[i + 1]) <= 0:
            _hdel(ks, [keys[0], field])
    return 1


def _replace_stats(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    ks.delete(keys[0])
    return _adjust_stats(ks, keys, argv)


def _hmget_or_mark(ks: Keyspace, key: str, fields: list[Any]) -> Any:
    try:
        return _hmget(ks, [key, *fields])
    except ServerResponseError:
        return "WRONGTYPE"


def _delete_memory(ks: Keyspace, keys: list[str], argv: list[Any]) -> Any:
    if ks._alive(keys[0]) and not isinstance(ks.data[keys[0]], Hash):
        ks.delete(keys[0])
        return ["", None, None, None, None]
    h = ks.get(keys[0], Hash)
    if h is None:
        return None
    found = [_decode(h.get(f)) for f in ("content", "namespace", "agentId", "threadId", "session")]
    ks.delete(keys[0])
    found[0] = found[0] if found[0] is not None else ""
    return found


def _delete_if_unchanged(ks: Keyspace, keys: list[str], argv: list[Any]) -> Any:
    if not ks._alive(keys[0]):
        return None
    h = ks.data[keys[0]]
    count = int(_s(argv[0]))
    if not isinstance(h, Hash) or count == 0:  # the server refuses an HMGET of no field
        return 0
    for i in range(1, count + 1):
        value = h.get(_s(argv[i])) if i < len(argv) else None
        want = argv[count + i] if count + i < len(argv) else None
        if want is None or (b"=" + _bytes(value) if value is not None else b"") != _bytes(want):
            return 0
    return _delete_memory(ks, keys, argv)


def _adopt_memory(ks: Keyspace, keys: list[str], argv: list[Any]) -> Any:
    if not ks._alive(keys[0]):
        return 0
    h = ks.data[keys[0]]
    count = int(_s(argv[0]))
    if not isinstance(h, Hash):
        return 0
    for i in range(1, count + 1):
        value = h.get(_s(argv[i]))
        if (b"=" + _bytes(value) if value is not None else b"") != _bytes(argv[count + i]):
            return 0
    ks.delete(keys[0])
    return _write_memory(ks, keys, argv[1 + 2 * count :])


def _forget_empty_namespace(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    if ks._alive(keys[0]):
        return 0
    try:
        return _srem(ks, [keys[1], argv[0]])
    except ServerResponseError:
        return -1


def _delete_if_holds(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    held = ks.get(keys[0], (str, bytes))
    if held is None or _s(held) != _s(argv[0]):
        return 0
    return ks.delete(keys[0])


_SCRIPT_TWINS: dict[str, Callable[[Keyspace, list[str], list[Any]], Any]] = {
    lexical.ADJUST_STATS: _adjust_stats,
    lexical.REPLACE_STATS: _replace_stats,
    scripts.DELETE_MEMORY: _delete_memory,
    scripts.DELETE_IF_UNCHANGED: _delete_if_unchanged,
    scripts.WRITE_WITH_TTL: _write_with_ttl,
    scripts.WRITE_MEMORY: _write_memory,
    scripts.ADOPT_MEMORY: _adopt_memory,
    scripts.PUBLISH: _publish,
    scripts.HMGET_MANY: lambda ks, keys, argv: [_hmget_or_mark(ks, key, argv) for key in keys],
    scripts.RECALL_EFFECTS: _recall_effects,
    scripts.TOUCH: _touch,
    scripts.UPDATE_IF_EXISTS: _update_if_exists,
    scripts.UPDATE_GUARDED: _update_guarded,
    scripts.UNREGISTER: _unregister,
    scripts.UNREGISTER_EXPIRED: _unregister_expired,
    scripts.REFRESH_DUPLICATE: _refresh_duplicate,
    cache_scripts.COUNTED_GET: _counted_get,
    cache_scripts.POP_IF_TAIL: _pop_if_tail,
    cache_scripts.REFRESH_THREAD: _refresh_thread,
    cache_scripts.DESTROY_THREAD: _destroy_thread,
    cache_scripts.LIST_WITH_LIFETIME: _list_with_lifetime,
    scripts.COMPLETE: _complete,
    scripts.APPLY_EVAL: lambda ks, keys, argv: _apply_eval(
        ks, keys[0], argv, argv[6] if len(argv) > 6 else None
    ),
    scripts.FEEDBACK: _feedback,
    scripts.FORGET_EMPTY_NAMESPACE: _forget_empty_namespace,
    scripts.DELETE_IF_HOLDS: _delete_if_holds,
}


def register_script_twin(
    source: str, twin: Callable[[Keyspace, list[str], list[Any]], Any]
) -> None:
    """Register the Python twin of a Lua script (for library modules adding scripts)."""
    _SCRIPT_TWINS[source] = twin
    _BY_SHA[script_sha(source)] = source


_BY_SHA: dict[str, str] = {script_sha(source): source for source in _SCRIPT_TWINS}
