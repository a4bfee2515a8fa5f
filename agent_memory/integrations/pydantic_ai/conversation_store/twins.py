"""Python twins of the conversation store's scripts, for the in-process keyspace.

:class:`~agent_memory.backends.inprocess.InProcessClient` runs no Lua: each script of
:mod:`.scripts` is registered with its twin below (by :mod:`.scripts`, when it is
imported), so a conversation store runs on the in-process client as on a server. Each
twin follows its script step by step, sending the same commands to the keyspace in the
same order: the same replies, the same data left behind, the same refusals (a key of
another type, a damaged reference count), and, as on a server, the writes made before a
command that fails are kept. ``tests/reliability/test_script_twins.py`` runs each script
and its twin on the same data and compares both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory.backends.inprocess_keyspace import Keyspace
from agent_memory.core.numbers import lua_number
from agent_memory.errors import WrongTypeError

# -- what the scripts' Lua does with strings -----------------------------------------------


def _b(value: Any) -> bytes:
    """A Lua string: the bytes of a reply or an argument (``None``, Lua's ``false``,
    is never passed here)."""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", "surrogateescape")


def _reply(value: bytes) -> str | bytes:
    """A string the script returns, as the in-process client replies (decoded when it
    is UTF-8)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value


def _call(ks: Keyspace, *args: Any) -> Any:
    """``redis.call``: a command on the keyspace (an error reply raises)."""
    return ks.execute(args)


def _get(ks: Keyspace, key: Any, field: Any) -> bytes | None:
    """``redis.call('HGET', key, field)`` as bytes (``None``: Lua's ``false``)."""
    got = _call(ks, "HGET", key, field)
    return None if got is None else _b(got)


def _exists(ks: Keyspace, key: Any, field: Any) -> bool:
    return bool(_call(ks, "HEXISTS", key, field))


def _wrong_type(ks: Keyspace, expected: Sequence[tuple[Any, str]]) -> None:
    """The scripts' ``wrong_type``: the error reply of the first key holding another
    type than expected (an absent key is fine)."""
    for key, kind in expected:
        found = _call(ks, "TYPE", key)
        if found not in ("none", kind):
            raise WrongTypeError(
                f"WRONGTYPE {_b(key).decode('utf-8', 'replace')} holds a {found}, not a {kind}"
            )


def _lines(text: bytes | None) -> list[bytes]:
    """The scripts' ``lines``: the non-empty lines of ``text``."""
    return [part for part in (text or b"").split(b"\n") if part]


def _release(ks: Keyspace, links: Any, refs: Any, entry: bytes, out: list[Any]) -> None:
    """The scripts' ``release``: drop one reference to ``entry``; one left with none is
    released and drops the reference it held on its parent."""
    while entry and _exists(ks, links, entry):
        if _call(ks, "HINCRBY", refs, entry, -1) > 0:
            return
        parent = _get(ks, links, entry) or b""
        _call(ks, "HDEL", links, entry)
        _call(ks, "HDEL", refs, entry)
        out.append(_reply(entry))
        entry = parent


# -- the twins -----------------------------------------------------------------------------


def _pairs(argv: Sequence[Any]) -> list[tuple[bytes, bytes]]:
    """The WRITE script's new entries: ``(id, parent id)`` pairs from ARGV[11] on."""
    n = int(_b(argv[9]))
    return [(_b(argv[i]), _b(argv[i + 1])) for i in range(10, 10 + 2 * n, 2)]


def write(ks: Keyspace, keys: list[str], argv: list[Any]) -> list[Any]:
    """Twin of :data:`.scripts.WRITE`."""
    rec, updated, scoped, links, refs = keys[:5]
    _wrong_type(ks, [(rec, "hash"), (updated, "zset"), (scoped, "zset"), (links, "hash"),
                     (refs, "hash")])  # fmt: skip
    cid, head, pairs = _b(argv[0]), _b(argv[7]), _pairs(argv)
    new = [entry for entry, _ in pairs]

    def conflict() -> list[Any]:
        return [0, *(_reply(e) for e in new if not _exists(ks, links, e))]

    current = _get(ks, rec, "revision")
    if _b(argv[1]) == b"0":
        if current is not None:
            return conflict()
    elif current != _b(argv[2]):
        return conflict()
    if head and not _exists(ks, links, head) and head not in new:
        return conflict()
    earlier: set[bytes] = set()
    for entry, parent in pairs:
        if parent and parent not in earlier and not _exists(ks, links, parent):
            return [2, _reply(entry), _reply(parent), *conflict()[1:]]
        earlier.add(entry)
    old_index = _get(ks, rec, "scope_index")
    if old_index is not None:
        _wrong_type(ks, [(old_index, "zset")])
    linked: list[bytes] = []
    for entry, parent in pairs:
        if not _exists(ks, links, entry):
            if parent and _exists(ks, links, parent):
                _call(ks, "HINCRBY", refs, parent, 1)
            _call(ks, "HSET", links, entry, parent)
            linked.append(entry)
    tips: list[bytes] = []
    for tip in _lines(_b(argv[8])):
        if _exists(ks, links, tip):
            _call(ks, "HINCRBY", refs, tip, 1)
            tips.append(tip)
    out: list[Any] = [1]
    for entry in linked:
        if lua_number((_get(ks, refs, entry) or b"0").decode("utf-8", "surrogateescape")) == 0:
            _call(ks, "HINCRBY", refs, entry, 1)
            _release(ks, links, refs, entry, out)
    for tip in _lines(_get(ks, rec, "tips")):
        _release(ks, links, refs, tip, out)
    _call(ks, "HSET", rec, "record", argv[4], "revision", argv[3], "tips", b"\n".join(tips),
          "updated", argv[5])  # fmt: skip
    _call(ks, "ZADD", updated, argv[5], cid)
    index = _b(scoped) if _b(argv[6]) == b"1" else None
    if old_index is not None and old_index != index:
        _call(ks, "ZREM", old_index, cid)
    if index is not None:
        _call(ks, "ZADD", index, argv[5], cid)
        _call(ks, "HSET", rec, "scope_index", index)
    else:
        _call(ks, "HDEL", rec, "scope_index")
    return out


def delete(ks: Keyspace, keys: list[str], argv: list[Any]) -> list[Any]:
    """Twin of :data:`.scripts.DELETE`."""
    rec, updated, links, refs = keys[:4]
    _wrong_type(ks, [(rec, "hash"), (updated, "zset"), (links, "hash"), (refs, "hash")])
    current = _get(ks, rec, "revision")
    if current is None or current != _b(argv[1]):
        return [0]
    index = _get(ks, rec, "scope_index")
    if index is not None:
        _wrong_type(ks, [(index, "zset")])
    tips = _lines(_get(ks, rec, "tips"))
    _call(ks, "DEL", rec)
    _call(ks, "ZREM", updated, argv[0])
    if index is not None:
        _call(ks, "ZREM", index, argv[0])
    out: list[Any] = [1]
    for tip in tips:
        _release(ks, links, refs, tip, out)
    return out


def chain(ks: Keyspace, keys: list[str], argv: list[Any]) -> list[Any]:
    """Twin of :data:`.scripts.CHAIN`."""
    _wrong_type(ks, [(keys[0], "hash")])
    out: list[Any] = [1]
    entry, left = _b(argv[0]), int(_b(argv[1]))
    steps = _call(ks, "HLEN", keys[0])
    while entry and left != 0:
        parent = _get(ks, keys[0], entry)
        if parent is None:
            return [0, _reply(entry)]
        if steps == 0:
            return [2, _reply(_b(argv[0]))]
        steps -= 1
        out += [_reply(entry), _reply(parent)]
        entry, left = parent, left - 1
    return out


def entry(ks: Keyspace, keys: list[str], argv: list[Any]) -> int:
    """Twin of :data:`.scripts.ENTRY`."""
    message, kind, parent = (_b(arg) for arg in argv[:3])
    current = [None if got is None else _b(got) for got in
               _call(ks, "HMGET", keys[0], "message", "kind", "parent")]  # fmt: skip
    if current[0] is not None or current[1] is not None:
        same = current[0] == message and current[1] == kind
        return 2 if same and (current[2] or b"") == parent else 0
    _call(ks, "HSET", keys[0], "message", message, "kind", kind)
    if parent:
        _call(ks, "HSET", keys[0], "parent", parent)
    return 1


def records(ks: Keyspace, keys: list[str], argv: list[Any]) -> list[Any]:
    """Twin of :data:`.scripts.RECORDS`."""
    _wrong_type(ks, [(keys[0], "zset")])
    out: list[Any] = []
    for member in _call(ks, "ZREVRANGE", keys[0], 0, int(_b(argv[1]))):
        key = _b(argv[0]) + _b(member)
        try:
            got: Any = _get(ks, key, "record")
        except WrongTypeError:  # redis.pcall: a key of another type reads as ""
            got = b""
        if got is None and _call(ks, "EXISTS", key) == 1:
            got = b""
        elif got is None:
            _call(ks, "ZREM", keys[0], member)
        out += [member, None if got is None else _reply(got)]
    return out


__all__ = ["chain", "delete", "entry", "records", "write"]
