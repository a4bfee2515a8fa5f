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

No two names share a key: each tier refuses the names whose keys could be another
name's (:func:`check_name_for_tier`), and the SCAN globs of ``clear`` and the
invalidations match digests only (:data:`DIGEST_GLOB`).

Digests are lower-case hex SHA-256 of UTF-8 canonical JSON: objects with sorted keys,
compact separators, no ASCII escaping, integral floats written as integers (so ``1`` and
``1.0`` hash alike), tuples as lists. NaN, infinities, integers beyond the range of a
float (:data:`MAX_JSON_INT`), non-string object keys, values that are not JSON types and,
in what is hashed, text that is not valid Unicode (a lone surrogate) raise
:class:`~agent_memory.errors.InvalidInputError`. Stored values keep such text as JSON
escapes (:func:`encode_json`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from agent_memory.core.checks import check_str, check_ttl_seconds
from agent_memory.core.names import check_name_apart
from agent_memory.errors import InvalidInputError

DIGEST_CHARS = 64
_PLAIN_TOOL = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")
MAX_NAME_CHARS = 256
DIGEST_GLOB = "[0-9a-f]" * DIGEST_CHARS
"""A SCAN glob matching one digest (lower-case hex) only: a key of another name or tier
(a thread id, say) that merely has as many characters never matches."""


MAX_JSON_DEPTH = 100
"""Deepest nesting of lists and objects a cached value may have (deeper ones would
exhaust Python's recursion in JSON encoding and decoding)."""


MAX_JSON_INT = int(sys.float_info.max)
"""The largest magnitude of an integer in a key or a value: a JSON number beyond the
range of a float is infinity to every other reader (the server's scripts, JavaScript),
and its digits would pass Python's limit on integer-to-text conversion long before
anything could use them."""


def plain(value: Any, field: str, _depth: int = 0) -> Any:
    """A JSON-ready copy of ``value`` (integral floats as ints, tuples as lists).

    Raises:
        InvalidInputError: not made of JSON types, NaN or infinity, an integer beyond
            :data:`MAX_JSON_INT`, or nested deeper than :data:`MAX_JSON_DEPTH`.
    """
    if _depth > MAX_JSON_DEPTH:
        raise InvalidInputError(
            f"{field} is nested more than {MAX_JSON_DEPTH} levels deep", field=field
        )
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if -MAX_JSON_INT <= value <= MAX_JSON_INT:
            return value
        raise InvalidInputError(
            f"{field} holds an integer of {value.bit_length()} bits, beyond the range of a "
            "JSON number (about 1.8e308)",
            field=field,
        )
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
            out[key] = plain(item, field, _depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [plain(item, field, _depth + 1) for item in value]
    raise InvalidInputError(
        f"{field} contains a {type(value).__name__}, which is not a JSON value", field=field
    )


def canonical_json(value: Any, *, field: str = "value") -> str:
    """Deterministic compact JSON of ``value``, byte for byte what BetterDB agent-cache's
    ``canonicalJson`` (``JSON.stringify`` with sorted keys) writes for the same value.

    So both libraries hash one request to one key: numbers are written as JavaScript
    writes them (``1e-7``, ``0.00005``, ``10000000000000000``; integral floats as
    integers), object keys in the order a JavaScript object keeps them after sorting
    (integer-like keys first, ascending; then the others by UTF-16 code units).

    Raises:
        InvalidInputError: ``value`` is not made of JSON types, or has NaN/infinity.
    """
    parts: list[str] = []
    _write_json(plain(value, field), parts)
    return "".join(parts)


def _write_json(value: Any, out: list[str]) -> None:
    if isinstance(value, str) or value is None or isinstance(value, bool):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(js_number(value))
    elif isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write_json(item, out)
        out.append("]")
    else:
        out.append("{")
        for i, key in enumerate(js_key_order(value)):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _write_json(value[key], out)
        out.append("}")


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


def js_key_order(mapping: Mapping[str, Any]) -> list[str]:
    """The keys of ``mapping`` in the order ``JSON.stringify`` writes a JavaScript object
    built from them in sorted order: array-index keys ascending, then the rest sorted by
    UTF-16 code units (pure)."""
    indexes = sorted(
        (k for k in mapping if _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1), key=int
    )
    named = sorted((k for k in mapping if k not in set(indexes)), key=_utf16)
    return [*indexes, *named]


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def js_number(value: float) -> str:
    """``value`` as JavaScript's ``Number.prototype.toString`` writes it (pure; finite)."""
    if value == 0:
        return "0"
    if value < 0:
        return "-" + js_number(-value)
    exact = Decimal(repr(value)).normalize()
    digits = "".join(map(str, exact.as_tuple().digits))
    k = len(digits)
    n = int(exact.as_tuple().exponent) + k  # value = 0.digits x 10**n
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"


def sha256_hex(data: str | bytes) -> str:
    """Lower-case hex SHA-256 of ``data`` (UTF-8 when it is text)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def digest(value: Any, *, field: str = "value") -> str:
    """SHA-256 of the canonical JSON of ``value``.

    Raises:
        InvalidInputError: see :func:`canonical_json`, or ``value`` holds text that is not
            valid Unicode (a lone surrogate: it has no UTF-8 bytes to hash).
    """
    try:
        raw = canonical_json(value, field=field).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{field} holds text that is not valid Unicode (a lone surrogate)", field=field
        ) from None
    return hashlib.sha256(raw).hexdigest()


def encode_json(value: Any, *, compact: bool = True) -> bytes:
    """The UTF-8 JSON of ``value``, a result of :func:`plain`, as it is stored (pure).

    Non-ASCII text stays as it is, except in a value holding a lone surrogate, which
    UTF-8 cannot carry: that value is written with ASCII escapes (``\\ud800``), which
    every JSON reader turns back into the same text, so storing it never fails half-way.
    """
    separators = (",", ":") if compact else None
    text = json.dumps(value, separators=separators, ensure_ascii=False, allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=separators, allow_nan=False).encode("ascii")


def glob_escape(text: str) -> str:
    """Escape ``* ? [ ] \\`` so ``text`` matches only itself in a SCAN MATCH glob."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def check_name(name: object, *, field: str = "name") -> str:
    """Validate a cache name (non-empty text up to 256 characters).

    Raises:
        InvalidInputError: not a non-empty string, too long, or has control characters.
    """
    return check_text(name, field=field, max_chars=MAX_NAME_CHARS)


def check_name_for_segment(name: str, segment: str, *, hex_keys: bool = True) -> str:
    """``name`` (already checked) when no key ``{name}:{segment}:{id}`` can equal another
    name's: the text ``:{segment}:`` must not occur in ``{name}:`` (with it, name
    ``a:{segment}:b`` and id ``c`` would make the key of name ``a`` and id ``b:{segment}:c``),
    nor may any key of the name be another component's
    (:func:`~agent_memory.core.names.check_name_apart`, with ``hex_keys``: whether an id
    after ``segment`` may be 64 hex digits).

    Raises:
        InvalidInputError: the name holds ``:{segment}`` that way, or is refused by
            :func:`~agent_memory.core.names.check_name_apart`.
    """
    if f":{segment}:" in f"{name}:":
        raise InvalidInputError(
            f"name must not contain ':{segment}' followed by ':' or at its end (its keys "
            f"would be another name's), got {name!r}",
            field="name",
        )
    return check_name_apart(name, hex_keys=hex_keys)


def check_name_for_tier(name: str, tier: str) -> str:
    """``name`` (already checked) when no key of the ``tier`` (``"llm"``, ``"tool"``,
    ``"session"`` or ``"embedding"``) under it can be a key of another tier or component
    under another name (pure; :func:`~agent_memory.core.names.check_name_apart`). Thread
    ids are any text, so every key under ``a:session`` or ``a:session:...`` would be a
    thread of ``SessionStore("a")``, and every hash under ``a:mem`` would be in store
    ``a``'s index; a tool entry is ``{name}:tool:{tool}:{digest}``, so the LLM entry
    ``a:tool:llm:{digest}``, the embedding ``a:tool:emb:{digest}`` and the thread
    ``a:tool:session:{digest}`` would be tool entries of ``ToolCache("a")`` (tools
    ``llm``, ``emb``, ``session``). The tool cache's own keys under ``a:tool`` never
    have that shape.

    Raises:
        InvalidInputError: (field ``name``) the name holds an open prefix (``:session``,
            ``:mem``, ... followed by ``:`` or at its end), or, for a tier other than the
            tool cache, ends with ``:tool``.
    """
    return check_name_apart(name, hex_keys=tier != "tool")


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
    """A TTL in seconds (int or float, > 0, at most ten years: the memory store's bound,
    :func:`~agent_memory.core.checks.check_ttl_seconds`) as whole milliseconds; ``None``
    stays ``None``.

    Raises:
        InvalidInputError: not a positive finite number of at most ten years.
    """
    seconds = check_ttl_seconds(ttl, field=field)
    return None if seconds is None else max(1, round(seconds * 1000))


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
        return f"{glob_escape(self.name)}:llm:{DIGEST_GLOB}"

    def tool(self, tool: str, sha: str) -> str:
        return f"{self.name}:tool:{tool_segment(tool)}:{sha}"

    def tool_pattern(self, tool: str) -> str:
        segment = glob_escape(tool_segment(tool))
        return f"{glob_escape(self.name)}:tool:{segment}:{DIGEST_GLOB}"

    def session(self, thread_id: str) -> str:
        return f"{self.name}:session:{thread_id}"

    def embedding(self, sha: str) -> str:
        return f"{self.name}:emb:{sha}"

    def embedding_pattern(self) -> str:
        return f"{glob_escape(self.name)}:emb:{DIGEST_GLOB}"
