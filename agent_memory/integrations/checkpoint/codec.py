"""Binary-safe encoding of serialised values, pending writes and field names (pure).

A value serialised by the saver's ``serde`` is a ``(type, bytes)`` pair
(``dumps_typed``); it is stored as ``type NUL bytes``, whatever the bytes hold. A
pending write is a length-prefixed list (``<len>:<bytes>`` per part) of its task id,
channel, task path, index, type and data. Field names are UTF-8 text: a channel value
is named by the JSON of ``[channel, version]`` (JSON escapes newlines, so a list of
them joins with ``\\n``), a write by hex digests and its index.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent_memory.errors import ReplyParseError
from agent_memory.integrations._keys import digest

EMPTY = ("empty", b"")
"""The typed value recorded for a channel that has a new version but no value."""


def pack_typed(value: tuple[str, bytes]) -> bytes:
    """``(type, bytes)`` as one binary string."""
    kind, data = value
    return kind.encode("utf-8") + b"\x00" + bytes(data)


def unpack_typed(raw: bytes) -> tuple[str, bytes]:
    """The inverse of :func:`pack_typed`.

    Raises:
        ReplyParseError: the value was not written by :func:`pack_typed`.
    """
    kind, sep, data = raw.partition(b"\x00")
    if not sep:
        raise ReplyParseError("a stored checkpoint value has no type")
    return kind.decode("utf-8", "replace"), data


def pack_parts(parts: Sequence[bytes]) -> bytes:
    """Several binary strings as one (each ``<len>:<bytes>``)."""
    return b"".join(b"%d:%s" % (len(p), p) for p in parts)


def unpack_parts(raw: bytes) -> list[bytes]:
    """The inverse of :func:`pack_parts`.

    Raises:
        ReplyParseError: a malformed record.
    """
    parts: list[bytes] = []
    at = 0
    while at < len(raw):
        colon = raw.find(b":", at)
        if colon < 0 or not raw[at:colon].isdigit():
            raise ReplyParseError("a stored pending write is malformed")
        end = colon + 1 + int(raw[at:colon])
        if end > len(raw):
            raise ReplyParseError("a stored pending write is truncated")
        parts.append(raw[colon + 1 : end])
        at = end
    return parts


def blob_field(channel: str, version: Any) -> str:
    """The field of a channel's value at one version (``int`` 1 and ``"1"`` differ)."""
    return "b:" + json.dumps([channel, version], ensure_ascii=False)


def write_field(checkpoint_id: str, task_id: str, idx: int) -> str:
    """The field of one pending write."""
    return f"w:{digest(checkpoint_id, 16)}:{digest(task_id, 16)}:{idx}"


def join_fields(fields: Sequence[str]) -> str:
    """A list of field names as one string (none contains a newline)."""
    return "\n".join(fields)


def pack_write(task_id: str, channel: str, task_path: str, idx: int, value: bytes) -> bytes:
    """One pending write record (``value`` from :func:`pack_typed`)."""
    return pack_parts(
        [
            task_id.encode("utf-8", "surrogatepass"),
            channel.encode("utf-8", "surrogatepass"),
            task_path.encode("utf-8", "surrogatepass"),
            str(idx).encode("ascii"),
            value,
        ]
    )


def unpack_write(raw: bytes) -> tuple[str, str, str, int, tuple[str, bytes]]:
    """``(task_id, channel, task_path, idx, typed value)`` of a write record.

    Raises:
        ReplyParseError: a malformed record.
    """
    parts = unpack_parts(raw)
    if len(parts) != 5:
        raise ReplyParseError("a stored pending write has the wrong number of parts")
    task_id, channel, task_path, idx, value = parts
    try:
        index = int(idx)
    except ValueError as exc:
        raise ReplyParseError("a stored pending write has a bad index") from exc
    return (
        task_id.decode("utf-8", "surrogatepass"),
        channel.decode("utf-8", "surrogatepass"),
        task_path.decode("utf-8", "surrogatepass"),
        index,
        unpack_typed(value),
    )


def channel_of(field: str) -> str:
    """The channel a :func:`blob_field` names.

    Raises:
        ReplyParseError: not a blob field.
    """
    try:
        channel = json.loads(field[2:])[0]
    except (ValueError, IndexError, TypeError) as exc:
        raise ReplyParseError(f"bad channel value field {field!r}") from exc
    if not isinstance(channel, str):
        raise ReplyParseError(f"bad channel value field {field!r}")
    return channel
