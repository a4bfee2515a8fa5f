"""Canonical JSON, digests and the key layout of the short-term cache tiers.

Key layout (``{name}`` is the cache name, used verbatim):

* ``{name}:llm:{sha256}``             LLM response entry (JSON string)
* ``{name}:tool:{tool}:{sha256}``     tool result entry (JSON string); ``{tool}`` is the
  tool name itself when it only uses ``[A-Za-z0-9_.-]``, otherwise ``~`` followed by
  the first 32 hex digits of its SHA-256, so no character of a tool name can split a
  key or widen a SCAN glob
* ``{name}:__tool_policies``          hash: tool name -> ``{"ttl": seconds}``
* ``{name}:session:{thread_id}``      hash: one thread's state, one field per key
* ``{name}:emb:{sha256}``             float32 embedding blob
* ``{name}:__stats``                  hash of counters (BetterDB field names)

Digests are lower-case hex SHA-256 of UTF-8 canonical JSON: objects with sorted keys,
compact separators, no ASCII escaping, integral floats written as integers (so ``1`` and
``1.0`` hash alike), tuples as lists. NaN, infinities, non-string object keys and values
that are not JSON types raise :class:`~agent_memory.errors.InvalidInputError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from agent_memory.core.checks import check_str
from agent_memory.errors import InvalidInputError

DIGEST_CHARS = 64
_PLAIN_TOOL = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")
MAX_NAME_CHARS = 256


def plain(value: Any, field: str) -> Any:
    """A JSON-ready copy of ``value`` (integral floats as ints, tuples as lists)."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{field} contains a non-finite number", field=field)
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(
                    f"{field} has a non-string key {key!r}; JSON objects need string keys",
                    field=field,
                )
            out[key] = plain(item, field)
        return out
    if isinstance(value, (list, tuple)):
        return [plain(item, field) for item in value]
    raise InvalidInputError(
        f"{field} contains a {type(value).__name__}, which is not a JSON value", field=field
    )


def canonical_json(value: Any, *, field: str = "value") -> str:
    """Deterministic compact JSON of ``value`` (sorted keys).

    Raises:
        InvalidInputError: ``value`` is not made of JSON types, or has NaN/infinity.
    """
    return json.dumps(
        plain(value, field),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def sha256_hex(data: str | bytes) -> str:
    """Lower-case hex SHA-256 of ``data`` (UTF-8 when it is text)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def digest(value: Any, *, field: str = "value") -> str:
    """SHA-256 of the canonical JSON of ``value``."""
    return sha256_hex(canonical_json(value, field=field))


def glob_escape(text: str) -> str:
    """Escape ``* ? [ ] \\`` so ``text`` matches only itself in a SCAN MATCH glob."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def check_name(name: object, *, field: str = "name") -> str:
    """Validate a cache name (non-empty text up to 256 characters).

    Raises:
        InvalidInputError: not a non-empty string, too long, or has control characters.
    """
    return check_text(name, field=field, max_chars=MAX_NAME_CHARS)


def check_text(value: object, *, field: str, max_chars: int = 1024) -> str:
    """Validate an identifier given by the user (tool name, thread id, embedder id).

    Raises:
        InvalidInputError: not a non-empty string, too long, or not encodable as UTF-8.
    """
    return check_str(value, field=field, non_empty=True, max_chars=max_chars)


def tool_segment(tool: str) -> str:
    """The key segment of a tool name: itself when plain, else ``~`` + 32 hex digits."""
    if _PLAIN_TOOL.fullmatch(tool):
        return tool
    return "~" + sha256_hex(tool)[:32]


def ttl_ms(ttl: object, *, field: str = "ttl") -> int | None:
    """A TTL in seconds (int or float, > 0) as whole milliseconds; ``None`` stays ``None``.

    Raises:
        InvalidInputError: not a positive finite number.
    """
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise InvalidInputError(f"{field} must be a number of seconds or None", field=field)
    if not math.isfinite(ttl) or ttl <= 0:
        raise InvalidInputError(f"{field} must be positive and finite, got {ttl!r}", field=field)
    return max(1, round(ttl * 1000))


class KeyLayout:
    """Builds every key of one cache name (pure; no I/O)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = check_name(name)

    @property
    def stats(self) -> str:
        return f"{self.name}:__stats"

    @property
    def tool_policies(self) -> str:
        return f"{self.name}:__tool_policies"

    def llm(self, sha: str) -> str:
        return f"{self.name}:llm:{sha}"

    def llm_pattern(self) -> str:
        return f"{glob_escape(self.name)}:llm:" + "?" * DIGEST_CHARS

    def tool(self, tool: str, sha: str) -> str:
        return f"{self.name}:tool:{tool_segment(tool)}:{sha}"

    def tool_pattern(self, tool: str) -> str:
        segment = glob_escape(tool_segment(tool))
        return f"{glob_escape(self.name)}:tool:{segment}:" + "?" * DIGEST_CHARS

    def session(self, thread_id: str) -> str:
        return f"{self.name}:session:{thread_id}"

    def embedding(self, sha: str) -> str:
        return f"{self.name}:emb:{sha}"
