"""How a session's input items are stored: one JSON text per list element (pure).

Items are the Agents SDK's ``TResponseInputItem`` dicts. Each is written as compact
JSON (non-ASCII kept as UTF-8; an item holding a lone surrogate is written with ASCII
escapes instead, so every item the SDK can hold can be stored). An element that is not
valid UTF-8, not JSON, or not a JSON object (written by someone else) is *corrupt*: reads
skip it and ``pop_item`` drops it, as the SDK's own SQLite and Redis sessions do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.errors import InvalidInputError


def encode_items(items: object) -> list[str]:
    """The stored form of ``items``, in order (pure).

    Raises:
        InvalidInputError: ``items`` is not a list of dicts, or an item is not
            JSON-serialisable (NaN and infinities included); nothing is written then.
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise InvalidInputError(
            f"items must be a list of input items (dicts), got {type(items).__name__}",
            field="items",
        )
    encoded: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInputError(
                f"items[{index}] is a {type(item).__name__}, not an input item (a dict)",
                field="items",
            )
        encoded.append(_encode(dict(item), index))
    return encoded


def _encode(item: dict[str, Any], index: int) -> str:
    try:
        text = json.dumps(item, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"items[{index}] is not JSON-serialisable: {exc}", field="items"
        ) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it as a JSON escape
        text = json.dumps(item, separators=(",", ":"), allow_nan=False)
    return text


def decode_item(raw: object) -> dict[str, Any] | None:
    """The item a stored element holds, or ``None`` when the element is corrupt (pure)."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(raw, str):
        return None
    try:
        item = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return item if isinstance(item, dict) else None


__all__ = ["decode_item", "encode_items"]
