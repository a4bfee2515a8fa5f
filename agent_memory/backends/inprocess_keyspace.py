"""The data and command handlers of the in-process keyspace (see :mod:`agent_memory.backends.inprocess`)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from agent_memory.backends.glob import glob_match
from agent_memory.core.numbers import INT64_MAX, INT64_MIN, server_int
from agent_memory.errors import ServerResponseError, WrongTypeError

Value = Any


class Hash(dict[str, Any]):
    """A hash's fields and values."""


class SortedSet(dict[str, float]):
    """A sorted set's members and scores (a separate type so WRONGTYPE holds between the two)."""


def _s(arg: Any) -> str:
    return arg.decode("utf-8", "surrogateescape") if isinstance(arg, bytes) else str(arg)


def _score(arg: Any) -> float:
    text = _s(arg).lower()
    if text in {"+inf", "inf"}:
        return math.inf
    if text == "-inf":
        return -math.inf
    value = float(text)
    if math.isnan(value):
        raise ValueError("not a valid float")  # the server refuses a NaN score or bound
    return value


def _bound(arg: Any) -> tuple[float, bool]:
    text = _s(arg)
    return (_score(text[1:]), True) if text.startswith("(") else (_score(text), False)


def _in_range(score: float, low: tuple[float, bool], high: tuple[float, bool]) -> bool:
    above = score > low[0] if low[1] else score >= low[0]
    below = score < high[0] if high[1] else score <= high[0]
    return above and below


class Keyspace:
    """The data of one in-process "server": keys, values and expiry times."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.data: dict[str, Value] = {}
        self.expires: dict[str, float] = {}
        self.lock = threading.RLock()

    def _alive(self, key: str) -> bool:
        deadline = self.expires.get(key)
        if deadline is not None and deadline <= self.clock():
            self.data.pop(key, None)
            self.expires.pop(key, None)
        return key in self.data

    def get(self, key: str, kind: type | tuple[type, ...]) -> Any:
        if not self._alive(key):
            return None
        value = self.data[key]
        if not isinstance(value, kind):
            raise WrongTypeError(
                "WRONGTYPE Operation against a key holding the wrong kind of value"
            )
        return value

    def create(self, key: str, kind: type) -> Any:
        value = self.get(key, kind)
        if value is None:
            value = kind()
            self.data[key] = value
        return value

    def delete(self, key: str) -> int:
        alive = self._alive(key)
        self.data.pop(key, None)
        self.expires.pop(key, None)
        return int(alive)

    def keys(self, pattern: str) -> list[str]:
        return [k for k in list(self.data) if self._alive(k) and glob_match(pattern, k)]

    def execute(self, args: tuple[Any, ...]) -> Any:
        name = _s(args[0]).upper()
        if name in ("EVAL", "EVALSHA"):
            from agent_memory.backends.inprocess_scripts import run_script

            handler: Callable[[Keyspace, list[Any]], Any] | None = run_script
        else:
            handler = COMMANDS.get(name)
        if handler is None:
            raise ServerResponseError(f"ERR unknown command '{name}'", command=name)
        with self.lock:
            try:
                return handler(self, [a if isinstance(a, bytes) else _s(a) for a in args[1:]])
            except (ValueError, OverflowError) as exc:
                # A stored value that is not a number where one is needed (a counter
                # another writer damaged): a server answers with an error reply.
                raise ServerResponseError(
                    f"ERR value is not an integer or out of range ({exc})", command=name
                ) from exc


def _hash_set(ks: Keyspace, a: list[Any]) -> int:
    if len(a) < 3 or len(a) % 2 == 0:  # refused before anything is written
        raise ServerResponseError(
            "ERR wrong number of arguments for 'hset' command", command="HSET"
        )
    h = ks.create(_s(a[0]), Hash)
    added = 0
    for i in range(1, len(a), 2):
        field = _s(a[i])
        added += field not in h
        h[field] = a[i + 1]
    return added


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    return value


def _hmget(ks: Keyspace, a: list[Any]) -> list[Any]:
    h = ks.get(_s(a[0]), Hash) or {}
    return [_decode(h.get(_s(f))) for f in a[1:]]


def _hgetall(ks: Keyspace, a: list[Any]) -> dict[str, Any]:
    return {k: _decode(v) for k, v in (ks.get(_s(a[0]), Hash) or {}).items()}


_INT64 = (INT64_MIN, INT64_MAX)


def _int64(raw: Any) -> int:
    """An integer as the server reads it (:func:`server_int`; ValueError: not one)."""
    value = server_int(_s(raw))
    if value is None:
        raise ValueError(f"{_s(raw)!r} is not a 64-bit integer as the server reads one")
    return value


def _hincrby(ks: Keyspace, a: list[Any]) -> int:
    h = ks.create(_s(a[0]), Hash)
    value = _int64(h.get(_s(a[1]), "0")) + _int64(a[2])
    if not _INT64[0] <= value <= _INT64[1]:
        raise ValueError("increment or decrement would overflow")
    h[_s(a[1])] = str(value)
    return value


def _hsetnx(ks: Keyspace, a: list[Any]) -> int:
    h = ks.create(_s(a[0]), Hash)
    if _s(a[1]) in h:
        return 0
    h[_s(a[1])] = a[2]
    return 1


def _hdel(ks: Keyspace, a: list[Any]) -> int:
    h = ks.get(_s(a[0]), Hash) or {}
    removed = sum(1 for f in a[1:] if h.pop(_s(f), None) is not None)
    if not h:
        ks.delete(_s(a[0]))
    return removed


def _set(ks: Keyspace, a: list[Any]) -> Any:
    key, value, options = _s(a[0]), a[1], [_s(x).upper() for x in a[2:]]
    deadline = None
    for unit, scale in (("EX", 1.0), ("PX", 0.001)):
        if unit in options:
            amount = _int64(a[2 + options.index(unit) + 1])
            if amount <= 0:  # refused before anything is written, as by the server
                raise ServerResponseError("ERR invalid expire time in 'set' command", command="SET")
            deadline = ks.clock() + amount * scale
    exists = ks._alive(key)
    if ("NX" in options and exists) or ("XX" in options and not exists):
        return None
    ks.data[key] = value
    ks.expires.pop(key, None)
    if deadline is not None:
        ks.expires[key] = deadline
    return True


def _get(ks: Keyspace, a: list[Any]) -> Any:
    value = ks.get(_s(a[0]), (str, bytes))
    return _decode(value)


def _getdel(ks: Keyspace, a: list[Any]) -> Any:
    value = _get(ks, a)
    ks.delete(_s(a[0]))
    return value


def _incrby(ks: Keyspace, a: list[Any]) -> int:
    key = _s(a[0])
    stored = ks.get(key, (str, bytes))
    value = _int64("0" if stored is None else stored) + (_int64(a[1]) if len(a) > 1 else 1)
    if not _INT64[0] <= value <= _INT64[1]:
        raise ValueError("increment or decrement would overflow")
    ks.data[key] = str(value)
    return value


def _expire(scale: float) -> Callable[[Keyspace, list[Any]], int]:
    def handler(ks: Keyspace, a: list[Any]) -> int:
        key = _s(a[0])
        if not ks._alive(key):
            return 0
        ms = _int64(a[1]) * round(scale * 1000)
        now_ms = int(ks.clock() * 1000)
        if not _INT64[0] <= ms <= _INT64[1] or ms > _INT64[1] - now_ms:
            raise ValueError("invalid expire time")  # as the server refuses it
        deadline = ks.clock() + ms / 1000
        if not _expiry_allowed(_expire_options(a[2:]), ks.expires.get(key), deadline):
            return 0
        ks.expires[key] = deadline
        return 1

    return handler


def _expire_options(args: list[Any]) -> set[str]:
    """EXPIRE's NX / XX / GT / LT, refused as the server refuses them together."""
    options = {_s(arg).upper() for arg in args}
    if options - {"NX", "XX", "GT", "LT"}:
        raise ServerResponseError(f"ERR Unsupported option {_s(args[0])}")
    if "NX" in options and options & {"XX", "GT", "LT"}:
        raise ServerResponseError(
            "ERR NX and XX, GT or LT options at the same time are not compatible"
        )
    if {"GT", "LT"} <= options:
        raise ServerResponseError("ERR GT and LT options at the same time are not compatible")
    return options


def _expiry_allowed(options: set[str], current: float | None, new: float) -> bool:
    """Whether EXPIRE's options let ``new`` replace ``current`` (``None``: no expiry,
    which GT and LT take as infinite)."""
    if "NX" in options:
        return current is None
    if "XX" in options and current is None:
        return False
    if "GT" in options:
        return current is not None and new > current
    if "LT" in options:
        return current is None or new < current
    return True


def _ttl(scale: float) -> Callable[[Keyspace, list[Any]], int]:
    def handler(ks: Keyspace, a: list[Any]) -> int:
        key = _s(a[0])
        if not ks._alive(key):
            return -2
        deadline = ks.expires.get(key)
        return -1 if deadline is None else max(0, round((deadline - ks.clock()) * scale))

    return handler


def _zadd(ks: Keyspace, a: list[Any]) -> int:
    key, rest = _s(a[0]), list(a[1:])
    flags = set()
    while rest and _s(rest[0]).upper() in {"NX", "XX", "CH", "GT", "LT", "INCR"}:
        flags.add(_s(rest.pop(0)).upper())
    if "INCR" in flags:
        raise ServerResponseError("ERR ZADD INCR is not supported by the in-process client")
    if {"NX", "XX"} <= flags:
        raise ServerResponseError("ERR XX and NX options at the same time are not compatible")
    if ("NX" in flags and flags & {"GT", "LT"}) or {"GT", "LT"} <= flags:
        raise ServerResponseError(
            "ERR GT, LT, and/or NX options at the same time are not compatible"
        )
    pairs = [(_s(rest[i + 1]), _score(rest[i])) for i in range(0, len(rest), 2)]  # before any write
    z = ks.get(key, SortedSet) if "XX" in flags else ks.create(key, SortedSet)
    if z is None:
        return 0
    added = changed = 0
    for member, score in pairs:
        old = z.get(member)
        if ("NX" in flags and old is not None) or ("XX" in flags and old is None):
            continue
        if old is not None and (
            ("GT" in flags and score <= old) or ("LT" in flags and score >= old)
        ):
            continue
        added += old is None
        changed += old is not None and old != score
        z[member] = score
    if not z:
        ks.delete(key)
    return added + changed if "CH" in flags else added


def _zrem(ks: Keyspace, a: list[Any]) -> int:
    z = ks.get(_s(a[0]), SortedSet) or {}
    removed = sum(1 for m in a[1:] if z.pop(_s(m), None) is not None)
    if not z:
        ks.delete(_s(a[0]))
    return removed


def _sorted(z: dict[str, float]) -> list[str]:
    return [m for m, _ in sorted(z.items(), key=lambda kv: (kv[1], kv[0]))]


def _range_options(a: list[Any]) -> tuple[set[str], tuple[int, int] | None]:
    """The flags (``WITHSCORES``, ``BYSCORE``, ``REV``, ...) and ``LIMIT offset count``
    of a range command's trailing arguments."""
    flags: set[str] = set()
    limit: tuple[int, int] | None = None
    i = 0
    while i < len(a):
        word = _s(a[i]).upper()
        if word == "LIMIT":
            if i + 2 >= len(a):
                raise ServerResponseError("ERR syntax error", command="ZRANGE")
            limit = (_int64(a[i + 1]), _int64(a[i + 2]))
            i += 3
            continue
        if word not in {"WITHSCORES", "BYSCORE", "REV"}:
            raise ServerResponseError(
                f"ERR syntax error (the in-process keyspace has no {word!r})", command="ZRANGE"
            )
        flags.add(word)
        i += 1
    return flags, limit


def _by_score(
    z: dict[str, float], low: Any, high: Any, *, rev: bool, limit: tuple[int, int] | None
) -> list[str]:
    """The members scored from ``low`` to ``high`` (both ends as the server reads them),
    ascending (``rev``: descending, ties by member in reverse), then ``LIMIT``: a
    negative offset selects nothing, a negative count everything from the offset."""
    lo, hi = _bound(low), _bound(high)
    members = [m for m in _sorted(z) if _in_range(z[m], lo, hi)]
    if rev:
        members.reverse()
    if limit is not None:
        offset, count = limit
        if offset < 0:
            return []
        members = members[offset:] if count < 0 else members[offset : offset + count]
    return members


def _scored(z: dict[str, float], members: list[str], flags: set[str]) -> list[str]:
    if "WITHSCORES" in flags:
        return [x for m in members for x in (m, _format_score(z[m]))]
    return members


def _zrangebyscore(ks: Keyspace, a: list[Any]) -> list[str]:
    z = ks.get(_s(a[0]), SortedSet) or {}
    flags, limit = _range_options(a[3:])
    if flags - {"WITHSCORES"}:
        raise ServerResponseError("ERR syntax error", command="ZRANGEBYSCORE")
    return _scored(z, _by_score(z, a[1], a[2], rev=False, limit=limit), flags)


def _format_score(score: float) -> str:
    if math.isinf(score):
        return "inf" if score > 0 else "-inf"
    return repr(score)


def _zremrangebyscore(ks: Keyspace, a: list[Any]) -> int:
    doomed = _zrangebyscore(ks, a[:3])
    return _zrem(ks, [a[0], *doomed]) if doomed else 0


def _zcount(ks: Keyspace, a: list[Any]) -> int:
    return len(_zrangebyscore(ks, a[:3]))


def _zrange(ks: Keyspace, a: list[Any]) -> list[str]:
    z = ks.get(_s(a[0]), SortedSet) or {}
    flags, limit = _range_options(a[3:])
    if "BYSCORE" in flags:  # REV: the range is given from its high end
        low, high = (a[2], a[1]) if "REV" in flags else (a[1], a[2])
        return _scored(z, _by_score(z, low, high, rev="REV" in flags, limit=limit), flags)
    if limit is not None:
        raise ServerResponseError(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
            command="ZRANGE",
        )
    members = _sorted(z)
    if "REV" in flags:
        members.reverse()
    start, stop = _int64(a[1]), _int64(a[2])
    stop = len(members) + stop if stop < 0 else stop
    start = max(0, len(members) + start if start < 0 else start)
    return _scored(z, members[start : stop + 1], flags)


def _zrevrange(ks: Keyspace, a: list[Any]) -> list[str]:
    members = _zrange(ks, [a[0], 0, -1])[::-1]  # ties: members in reverse order too
    start, stop = int(_s(a[1])), int(_s(a[2]))
    stop = len(members) + stop if stop < 0 else stop
    start = max(0, len(members) + start if start < 0 else start)
    return members[start : stop + 1]


def _zscore(ks: Keyspace, a: list[Any]) -> Any:
    score = (ks.get(_s(a[0]), SortedSet) or {}).get(_s(a[1]))
    return None if score is None else float(score)


def _sadd(ks: Keyspace, a: list[Any]) -> int:
    members = ks.create(_s(a[0]), set)
    before = len(members)
    members.update(_s(m) for m in a[1:])
    return len(members) - before


def _srem(ks: Keyspace, a: list[Any]) -> int:
    members = ks.get(_s(a[0]), set) or set()
    removed = sum(1 for m in a[1:] if _s(m) in members)
    members.difference_update(_s(m) for m in a[1:])
    if not members:
        ks.delete(_s(a[0]))
    return removed


def _rpush(ks: Keyspace, a: list[Any]) -> int:
    items = ks.create(_s(a[0]), list)
    items.extend(_decode(v) for v in a[1:])
    return len(items)


def _rpop(ks: Keyspace, a: list[Any]) -> Any:
    items = ks.get(_s(a[0]), list)
    if not items:
        return None
    value = items.pop()
    if not items:  # a server deletes an emptied list
        ks.delete(_s(a[0]))
    return value


def _lrem(ks: Keyspace, a: list[Any]) -> int:
    """``LREM key count value``: up to ``|count|`` elements equal to ``value``, from the
    head (``count`` > 0), the tail (< 0) or all of them (0)."""
    items = ks.get(_s(a[0]), list)
    if not items:
        return 0
    count, value = int(_s(a[1])), _decode(a[2])
    order = range(len(items) - 1, -1, -1) if count < 0 else range(len(items))
    hits = [i for i in order if items[i] == value][: abs(count) or None]
    for i in sorted(hits, reverse=True):
        del items[i]
    if not items:  # a server deletes an emptied list
        ks.delete(_s(a[0]))
    return len(hits)


def _lrange(ks: Keyspace, a: list[Any]) -> list[Any]:
    items = ks.get(_s(a[0]), list) or []
    start, stop = int(_s(a[1])), int(_s(a[2]))
    stop = len(items) + stop if stop < 0 else stop
    start = max(0, len(items) + start if start < 0 else start)
    return list(items[start : stop + 1])


def _type(ks: Keyspace, key: str) -> str:
    if not ks._alive(key):
        return "none"
    names: dict[type, str] = {Hash: "hash", SortedSet: "zset", set: "set", list: "list"}
    return names.get(type(ks.data[key]), "string")


def _flush(ks: Keyspace) -> bool:
    ks.data.clear()
    ks.expires.clear()
    return True


COMMANDS: dict[str, Callable[[Keyspace, list[Any]], Any]] = {
    "PING": lambda ks, a: True,
    "MODULE": lambda ks, a: [],
    "HSET": _hash_set,
    "HMGET": _hmget,
    "HGET": lambda ks, a: _hmget(ks, a)[0],
    "HGETALL": _hgetall,
    "HINCRBY": _hincrby,
    "HSETNX": _hsetnx,
    "HDEL": _hdel,
    "HLEN": lambda ks, a: len(ks.get(_s(a[0]), Hash) or {}),
    "HEXISTS": lambda ks, a: int(_s(a[1]) in (ks.get(_s(a[0]), Hash) or {})),
    "SET": _set,
    "GET": _get,
    "GETDEL": _getdel,
    "INCR": _incrby,
    "INCRBY": _incrby,
    "DEL": lambda ks, a: sum(ks.delete(_s(k)) for k in a),
    "UNLINK": lambda ks, a: sum(ks.delete(_s(k)) for k in a),
    "EXISTS": lambda ks, a: sum(int(ks._alive(_s(k))) for k in a),
    "TYPE": lambda ks, a: _type(ks, _s(a[0])),
    "EXPIRE": _expire(1.0),
    "PEXPIRE": _expire(0.001),
    "TTL": _ttl(1.0),
    "PTTL": _ttl(1000.0),
    "PERSIST": lambda ks, a: int(
        ks._alive(_s(a[0])) and ks.expires.pop(_s(a[0]), None) is not None
    ),
    "ZADD": _zadd,
    "ZREM": _zrem,
    "ZRANGE": _zrange,
    "ZREVRANGE": _zrevrange,
    "ZRANGEBYSCORE": _zrangebyscore,
    "ZCOUNT": _zcount,
    "ZREMRANGEBYSCORE": _zremrangebyscore,
    "ZCARD": lambda ks, a: len(ks.get(_s(a[0]), SortedSet) or {}),
    "ZSCORE": _zscore,
    "SADD": _sadd,
    "SREM": _srem,
    "SISMEMBER": lambda ks, a: int(_s(a[1]) in (ks.get(_s(a[0]), set) or set())),
    "SMEMBERS": lambda ks, a: sorted(ks.get(_s(a[0]), set) or set()),
    "SCARD": lambda ks, a: len(ks.get(_s(a[0]), set) or set()),
    "RPUSH": _rpush,
    "RPOP": _rpop,
    "LRANGE": _lrange,
    "LREM": _lrem,
    "LLEN": lambda ks, a: len(ks.get(_s(a[0]), list) or []),
    "HKEYS": lambda ks, a: list(ks.get(_s(a[0]), Hash) or {}),
    "KEYS": lambda ks, a: ks.keys(_s(a[0])),
    "FLUSHDB": lambda ks, a: _flush(ks),
}
